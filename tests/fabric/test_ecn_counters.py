"""ECN counter readiness: a switch that does not collect ECN-marked queue
counters shows "not collected", never 0, from the driver through the poller to the API and the
page, and an Action turns the WRED_ECN_QUEUE counter group on with `counterpoll`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fabric.action_handlers import enable_ecn_counters
from fabric.drivers.base import (
    PortCounters,
    PortStatus,
    SwitchCommandFailed,
    SwitchTarget,
    get_fabric_driver,
)
from fabric.drivers.emulated import build_emulated_fabric, reset_emulated_fabric
from fabric.drivers.sonic_flex_counters import (
    COLLECTED,
    DISABLED,
    ECN_MARKED_FIELD,
    UNSUPPORTED,
    ecn_counter_state,
)
from fabric.emulator import CommandInterpreter, NeighborSpec, Switch, SwitchSpec
from fabric.models import SwitchPollState
from fabric.polling import latest_row
from fabric.services import ENABLE_ECN_COUNTERS_ACTION
from portal.models import Action, Role
from tests.fabric.driver_contract import EMULATOR_LOGIN, EmulatorThread, write_credentials
from tests.fabric.test_switch_actions import build_action_inventory, switch_url

QUIET_LEAF = SwitchSpec(hostname="leaf04", ecn_queue_counters="disabled",
                        neighbors=[NeighborSpec("Ethernet8", "gpu005", "mlx5_0")])
OLD_IMAGE_LEAF = SwitchSpec(hostname="leaf05", ecn_queue_counters="unsupported")


def test_state_follows_the_counters_then_the_flex_counter_group_and_capability():
    supported = {"isSupported": "true"}
    assert ecn_counter_state({}, supported, counted=True) == COLLECTED
    assert ecn_counter_state({"FLEX_COUNTER_STATUS": "enable"}, supported, False) == COLLECTED
    assert ecn_counter_state({"FLEX_COUNTER_STATUS": "disable"}, supported, False) == DISABLED
    assert ecn_counter_state({}, supported, False) == DISABLED
    assert ecn_counter_state({}, {}, False) == UNSUPPORTED  # image without the group
    assert ecn_counter_state({"FLEX_COUNTER_STATUS": "enable"}, {"isSupported": "false"},
                             False) == UNSUPPORTED


def test_emulator_publishes_ecn_marks_only_while_the_group_is_enabled():
    switch = Switch(QUIET_LEAF)
    shell = CommandInterpreter(switch)
    queue = f"COUNTERS:{switch.queue_oids['Ethernet8'][3]}"
    switch.advance(1.0)
    assert ECN_MARKED_FIELD not in switch.db.hgetall("COUNTERS_DB", queue)
    assert "SAI_QUEUE_STAT_PACKETS" in switch.db.hgetall("COUNTERS_DB", queue)
    assert shell.execute("counterpoll wredqueue enable").exit_status == 0
    assert switch.db.hgetall("CONFIG_DB", "FLEX_COUNTER_TABLE|WRED_ECN_QUEUE") == {
        "FLEX_COUNTER_STATUS": "enable"}
    assert ECN_MARKED_FIELD in switch.db.hgetall("COUNTERS_DB", queue)
    assert shell.execute("counterpoll wredqueue disable").exit_status == 0
    assert ECN_MARKED_FIELD not in switch.db.hgetall("COUNTERS_DB", queue)
    # counterpoll/main.py: click.IntRange(100, 30000), a plain group (no -h, no abbreviations).
    result = shell.execute("counterpoll wredqueue interval 50")
    assert result.exit_status == 2
    assert result.stderr == (
        "Usage: counterpoll wredqueue interval [OPTIONS] POLL_INTERVAL\n"
        'Try "counterpoll wredqueue interval --help" for help.\n\n'
        'Error: Invalid value for "POLL_INTERVAL": 50 is not in the valid range of 100 to '
        "30000.\n")
    old = CommandInterpreter(Switch(OLD_IMAGE_LEAF)).execute("sudo counterpoll wredqueue enable")
    assert old.exit_status == 2
    assert old.stderr.endswith('Error: No such command "wredqueue".\n')


def test_a_port_without_ecn_marks_has_no_ecn_rate_and_no_spike_when_they_appear():
    status = PortStatus("Ethernet8", "", 800_000, True, True)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    quiet = latest_row(1, status, PortCounters("Ethernet8", 0, 0), start, None)
    assert quiet["ecn_marked"] == []
    later = latest_row(1, status, PortCounters("Ethernet8", 10, 10), start + timedelta(60),
                       quiet)
    assert later["in_bytes_per_second"] is not None and later["ecn_marked_per_second"] is None
    # Enabled: the cumulative count since boot is no rate until a second sample.
    enabled = latest_row(1, status, PortCounters("Ethernet8", 20, 20, ecn_marked={3: 10**9}),
                         start + timedelta(120), later)
    assert enabled["ecn_marked_per_second"] is None and enabled["ecn_marked"][3] == 10**9


# -- over SSH ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ecn_emulator(tmp_path_factory):
    fabric = EmulatorThread([QUIET_LEAF, OLD_IMAGE_LEAF], tmp_path_factory.mktemp("ecn-keys"))
    yield fabric
    fabric.stop()


def ssh_driver(emulator, settings, tmp_path, hostname):
    settings.FABRIC_CREDENTIALS_FILE = str(
        write_credentials(tmp_path / "credentials.json", {"sonic/leaf": EMULATOR_LOGIN}))
    settings.FABRIC_KNOWN_HOSTS_FILE = str(tmp_path / "known_hosts")
    Path(settings.FABRIC_KNOWN_HOSTS_FILE).write_text(emulator.known_hosts())
    settings.FABRIC_DRIVER = "fabric.drivers.ssh.SonicSshDriver"
    return get_fabric_driver(SwitchTarget(hostname=hostname, address=emulator.host,
                                          port=emulator.port_of(hostname),
                                          credentials_ref="sonic/leaf"))


@pytest.mark.emulator
def test_ssh_driver_reports_not_collected_then_enables_the_group(ecn_emulator, settings,
                                                                 tmp_path):
    driver = ssh_driver(ecn_emulator, settings, tmp_path, "leaf04")
    try:
        snapshot = driver.counters()
        assert snapshot.ecn_counters == DISABLED
        assert {p.name: p for p in snapshot.ports}["Ethernet8"].ecn_marked == {}
        assert driver.enable_ecn_counters() == COLLECTED
        after = driver.counters()
        assert after.ecn_counters == COLLECTED
        assert set({p.name: p for p in after.ports}["Ethernet8"].ecn_marked) == {3, 4}
    finally:
        driver.close()
    old = ssh_driver(ecn_emulator, settings, tmp_path, "leaf05")
    try:
        assert old.counters().ecn_counters == UNSUPPORTED
        with pytest.raises(SwitchCommandFailed, match="No such command"):
            old.enable_ecn_counters()
    finally:
        old.close()


# -- the Action ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_enable_action_is_queued_then_runs_counterpoll_and_records_the_state(operator_api,
                                                                           settings):
    inventory = build_action_inventory()
    SwitchPollState.objects.create(switch=inventory.leaf, ecn_counters=DISABLED)
    response = operator_api.post(switch_url(inventory.leaf, "ecn-counters"),
                                 {"reason": "ECN marks show as not collected"}, format="json")
    assert response.status_code == 202, response.content
    action = Action.objects.get(pk=response.data["id"])
    assert action.kind == ENABLE_ECN_COUNTERS_ACTION
    settings.FABRIC_DRIVER = "fabric.drivers.emulated.EmulatedDriver"
    fabric = build_emulated_fabric([SwitchSpec(hostname="leaf01", ecn_queue_counters="disabled")])
    try:
        assert enable_ecn_counters(action) == {"switch": "leaf01", "ecn_counters": COLLECTED}
        assert fabric.switches["leaf01"].db.hget(
            "CONFIG_DB", "FLEX_COUNTER_TABLE|WRED_ECN_QUEUE", "FLEX_COUNTER_STATUS") == "enable"
    finally:
        reset_emulated_fabric()
    assert SwitchPollState.objects.get(switch=inventory.leaf).ecn_counters == COLLECTED


@pytest.mark.django_db
def test_a_switch_that_cannot_count_ecn_marks_is_a_400_naming_the_switch(operator_api):
    inventory = build_action_inventory()
    SwitchPollState.objects.create(switch=inventory.leaf, ecn_counters=UNSUPPORTED)
    response = operator_api.post(switch_url(inventory.leaf, "ecn-counters"), {"reason": "r"},
                                 format="json")
    assert response.status_code == 400
    assert "WRED_ECN_QUEUE" in response.data["switch"][0]
    assert not Action.objects.filter(kind=ENABLE_ECN_COUNTERS_ACTION).exists()


@pytest.mark.django_db
def test_api_and_page_say_not_collected_instead_of_zero(operator_api, client, make_user):
    inventory = build_action_inventory()
    SwitchPollState.objects.create(switch=inventory.leaf, ecn_counters=DISABLED,
                                   ecn_marked_per_second=None, last_polled_at=datetime.now(UTC))
    poll = operator_api.get(f"/api/fabric/switches/{inventory.leaf.hostname}/").data["poll"]
    assert (poll["ecn_counters"], poll["ecn_marked_per_second"]) == (DISABLED, None)
    client.force_login(make_user(Role.OPERATOR))
    page = client.get(f"/fabric/switches/{inventory.leaf.hostname}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "not collected" in text
    assert f"/fabric/switches/{inventory.leaf.pk}/ecn-counters/" in text


@pytest.mark.django_db
def test_aggregates_leave_uncollected_ports_out_of_the_ecn_sum_and_count_them(make_user):
    from fabric.models import PortCounterLatest
    from fabric.polling import refresh_switch_throughput
    from fabric.selectors import aggregate_switches, switch_aggregates
    from inventory.models import SwitchPort

    inventory = build_action_inventory()
    now = datetime.now(UTC)
    for name, ecn in (("Ethernet0", None), ("Ethernet4", 5.0)):
        port = SwitchPort.objects.get(switch=inventory.leaf, name=name)
        PortCounterLatest.objects.create(port=port, sampled_at=now, oper_up=True,
                                         in_bytes_per_second=1.0, out_bytes_per_second=1.0,
                                         ecn_marked_per_second=ecn)
    refresh_switch_throughput([inventory.leaf.pk], now)  # what each poll does once stored
    switches = aggregate_switches(user=make_user(Role.OPERATOR))
    leaf = next(a for a in switch_aggregates(switches) if a.hostname == "leaf01")
    assert (leaf.host_facing.ecn_marked_per_second,
            leaf.host_facing.ecn_ports_not_collected) == (5.0, 1)
