"""Counter polling: rates from two samples, counter resets and wraps, the bounded history, a
failing switch, the concurrency bound, and the "fabric" event on commit."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings as django_settings

from fabric.drivers.base import PortCounters, SwitchUnreachable
from fabric.drivers.emulated import EmulatedDriver
from fabric.models import PortCounterHistory, PortCounterLatest, SwitchPollState
from fabric.polling import (
    COUNTER_WRAP,
    compute_rates,
    counter_delta,
    history_slots,
    poll_fabric,
    prune_history,
    read_switches,
    switch_target,
)
from inventory.models import Switch, SwitchPort
from tests.fabric.monitoring_support import poll_every_minute

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: fleets and the emulated fabric
pytestmark = pytest.mark.django_db


def latest(hostname: str, port: str) -> PortCounterLatest:
    return PortCounterLatest.objects.get(port__switch__hostname=hostname, port__name=port)


# -- rates ---------------------------------------------------------------------------------


def test_counter_delta_forward_reset_and_wrap():
    assert counter_delta(100, 250) == (150, False)
    assert counter_delta(5_000, 1_200) == (1_200, True)  # reset: counted up from zero
    assert counter_delta(COUNTER_WRAP - 10, 5) == (15, False)  # 64-bit wrap


def test_rates_from_two_samples():
    previous = {
        "in_octets": Decimal(1_000), "out_octets": Decimal(2_000),
        "pfc_rx": [0, 0, 0, 100, 0, 0, 0, 0], "pfc_tx": [0] * 8,
        "ecn_marked": [0, 0, 0, 50, 0, 0, 0, 0],
    }
    current = PortCounters(
        "Ethernet0", in_octets=61_000, out_octets=122_000,
        pfc_rx={3: 700}, pfc_tx={3: 60}, ecn_marked={3: 350, 4: 10},
    )
    rates = compute_rates(previous, current, 60)
    assert rates.in_bytes_per_second == 1_000 and rates.out_bytes_per_second == 2_000
    assert rates.pfc_rx_rates[3] == 10 and rates.pfc_tx_rates[3] == 1
    assert rates.ecn_marked_per_second == pytest.approx(310 / 60)
    assert not rates.counter_reset
    assert compute_rates(previous, current, 0) is None


def test_poll_stores_latest_counters_and_rates(small_fleet, emulated):
    result = poll_every_minute(emulated, 1)
    assert result.failed == [] and result.switches == 26
    row = latest("leaf-p1-r0", "Ethernet0")
    assert row.in_bytes_per_second is None  # one sample: no rate yet
    emulated.switches["leaf-p1-r0"].set_utilization("Ethernet0", 0.95)
    poll_every_minute(emulated, 1)
    row = latest("leaf-p1-r0", "Ethernet0")
    assert row.interval_seconds == 60
    # 95 % of 400G = 47.5 GB/s each way, give or take the emulator's 5 % jitter.
    assert 0.9 * 50e9 < row.in_bytes_per_second < 50e9
    assert 0.9 < row.utilization <= 1.0
    assert row.pfc_rx_rates[3] > 0 and row.ecn_marked_per_second > 0
    idle = latest("leaf-p1-r0", "Ethernet4")
    assert 0.25 < idle.utilization < 0.35 and idle.pfc_rx_rates[3] == 0
    port = SwitchPort.objects.get(switch__hostname="leaf-p1-r0", name="Ethernet0")
    assert (port.admin_status, port.oper_status) == ("up", "up")
    state = SwitchPollState.objects.get(switch__hostname="leaf-p1-r0")
    assert state.reachable and state.ports_up > 0 and state.in_bytes_per_second > 0


def test_counter_reset_gives_a_sane_rate(small_fleet, emulated):
    poll_every_minute(emulated, 2)
    emulated.switches["leaf-p1-r0"].reload_config()  # counters start again from zero
    poll_every_minute(emulated, 1)
    row = latest("leaf-p1-r0", "Ethernet0")
    assert row.counter_reset
    assert 0 <= row.in_bytes_per_second < 50e9
    poll_every_minute(emulated, 1)
    assert not latest("leaf-p1-r0", "Ethernet0").counter_reset


def test_history_is_a_bounded_ring(small_fleet, emulated, settings):
    settings.FABRIC_HISTORY_SECONDS = 300
    settings.FABRIC_HISTORY_RESOLUTION_SECONDS = 60
    assert history_slots() == 5
    leafs = ["leaf-p1-r0", "leaf-p2-r7"]
    poll_every_minute(emulated, 3, leafs)
    ports_with_rates = PortCounterLatest.objects.exclude(in_bytes_per_second=None).count()
    assert PortCounterHistory.objects.count() == 2 * ports_with_rates
    poll_every_minute(emulated, 12, leafs)  # far more minutes than the ring holds
    assert PortCounterHistory.objects.count() == 5 * ports_with_rates
    port = SwitchPort.objects.get(switch__hostname="leaf-p1-r0", name="Ethernet0")
    starts = list(port.counter_history.order_by("bucket_start")
                  .values_list("bucket_start", flat=True))
    assert len(starts) == 5 and (starts[-1] - starts[0]) == timedelta(minutes=4)
    # Rows of ports nobody polls any more age out instead of lingering in the ring.
    assert prune_history(starts[-1] + timedelta(minutes=10)) == 5 * ports_with_rates
    assert PortCounterHistory.objects.count() == 0


def test_one_unreachable_switch_does_not_stop_the_others(small_fleet, emulated):
    poll_every_minute(emulated, 2)
    seen_before = SwitchPollState.objects.get(switch__hostname="leaf-p1-r3").last_seen_at
    emulated.set_unreachable("leaf-p1-r3")
    result = poll_every_minute(emulated, 1)
    assert result.failed == ["leaf-p1-r3"] and result.switches == 26
    broken = SwitchPollState.objects.get(switch__hostname="leaf-p1-r3")
    assert broken.consecutive_failures == 1 and "no route" in broken.last_error
    assert broken.last_seen_at == seen_before and not broken.reachable
    healthy = SwitchPollState.objects.get(switch__hostname="leaf-p1-r4")
    assert healthy.reachable and healthy.last_seen_at > seen_before
    emulated.set_unreachable("leaf-p1-r3", False)
    poll_every_minute(emulated, 1)
    assert SwitchPollState.objects.get(switch__hostname="leaf-p1-r3").reachable


class SlowDriver(EmulatedDriver):
    """Counts how many switches are read at once."""

    lock = threading.Lock()
    active = 0
    peak = 0

    def ports(self):
        cls = type(self)
        with cls.lock:
            cls.active += 1
            cls.peak = max(cls.peak, cls.active)
        time.sleep(0.02)
        with cls.lock:
            cls.active -= 1
        if self.target.hostname == "spine-3":
            raise RuntimeError("driver bug")
        return super().ports()


def test_reads_are_concurrent_but_bounded(small_fleet, emulated, settings):
    settings.FABRIC_DRIVER = f"{__name__}.SlowDriver"
    settings.FABRIC_POLL_CONCURRENCY = 4
    SlowDriver.peak = 0
    targets = [switch_target(switch) for switch in Switch.objects.all()]
    readings = read_switches(targets)
    assert 1 < SlowDriver.peak <= 4
    errors = {reading.hostname: reading.error for reading in readings if reading.error}
    assert errors == {"spine-3": "RuntimeError: driver bug"}


def test_fabric_event_is_published_on_commit(small_fleet, emulated, monkeypatch,
                                              django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr("portal.realtime.events.send_now",
                        lambda group, message: sent.append((group, message)))
    poll_every_minute(emulated, 1)
    with django_capture_on_commit_callbacks() as callbacks:
        poll_every_minute(emulated, 1)
        assert sent == []  # nothing leaves before the transaction commits
    for callback in callbacks:
        callback()
    assert [(group, message["event"]) for group, message in sent] == [
        ("fabric", "fabric.poll"), ("fabric.overview", "fabric.overview")
    ]
    import json

    payload = json.loads(sent[0][1]["payload"])
    leaf = payload["switches"]["leaf-p1-r0"]
    assert leaf["ok"] and leaf["in_bps"] > 0 and leaf["ports"]["Ethernet0"].startswith("U")
    assert leaf["ports"]["Ethernet16"] == "X0"  # nothing cabled: admin down
    assert payload["ports_omitted"] is False


def test_a_large_fabric_sends_summaries_only(small_fleet, emulated, monkeypatch, settings,
                                             django_capture_on_commit_callbacks):
    import json

    settings.FABRIC_EVENT_MAX_PORTS = 100
    sent = []
    monkeypatch.setattr("portal.realtime.events.send_now",
                        lambda group, message: sent.append(json.loads(message["payload"])))
    with django_capture_on_commit_callbacks(execute=True):
        poll_every_minute(emulated, 1, ["leaf-p1-r0", "spine-1"])
    assert sent[0]["ports_omitted"] is True
    assert set(sent[0]["switches"]) == {"leaf-p1-r0", "spine-1"}
    assert "ports" not in sent[0]["switches"]["spine-1"] and sent[0]["switches"]["spine-1"]["ok"]


def test_beat_schedule_and_route(small_fleet, emulated):
    from fabric.tasks import poll_fabric_counters

    entry = django_settings.CELERY_BEAT_SCHEDULE["fabric-poll-counters"]
    assert entry["task"] == "fabric.tasks.poll_fabric_counters"
    assert "fabric.tasks.poll_fabric_counters" in django_settings.CELERY_TASK_ROUTES
    emulated.fake_clock.advance(60)
    summary = poll_fabric_counters.run()
    assert summary["switches"] == 26 and summary["failed"] == []

    from fabric.tasks import reconcile_fabric_lldp

    lldp = django_settings.CELERY_BEAT_SCHEDULE["fabric-reconcile-lldp"]
    assert lldp["task"] == "fabric.tasks.reconcile_fabric_lldp"
    assert lldp["task"] in django_settings.CELERY_TASK_ROUTES
    assert reconcile_fabric_lldp.run() == {
        "checked": 26, "failed": {}, "findings": 0, "opened": [], "resolved": 0,
    }


def test_driver_errors_of_the_expected_kind_are_recorded(small_fleet, emulated, monkeypatch):
    def refuse(self):
        raise SwitchUnreachable("ssh: connect timed out")

    monkeypatch.setattr(EmulatedDriver, "counters", refuse)
    result = poll_fabric(switches=list(Switch.objects.filter(hostname="spine-1")))
    assert result.failed == ["spine-1"]
    assert SwitchPollState.objects.get(switch__hostname="spine-1").last_error == \
        "ssh: connect timed out"


def test_a_driver_that_cannot_be_loaded_fails_each_switch_not_the_poll(small_fleet, settings):
    settings.FABRIC_DRIVER = "fabric.drivers.not_there.Driver"
    spines = list(Switch.objects.filter(hostname__in=["spine-1", "spine-2"]))
    result = poll_fabric(switches=spines)
    assert result.failed == ["spine-1", "spine-2"]
    state = SwitchPollState.objects.get(switch__hostname="spine-1")
    assert "ModuleNotFoundError" in state.last_error


# -- unknown is not zero, port state as intfutil reads it ------------


def _status(name="Ethernet0", speed=400_000, **extra):
    from fabric.drivers.base import PortStatus

    return PortStatus(name, "", speed, admin_up=True, oper_up=True, **extra)


def test_a_counter_hash_that_disappears_and_returns_is_neither_a_reset_nor_a_rate():
    from datetime import UTC, datetime

    from fabric.polling import latest_row

    start = datetime(2026, 1, 1, tzinfo=UTC)
    seen = latest_row(1, _status(), PortCounters("Ethernet0", 10**15, 10**15), start, None)
    gone = latest_row(1, _status(), PortCounters("Ethernet0", None, None),
                      start + timedelta(seconds=60), seen)
    assert gone["in_octets"] is None and gone["in_bytes_per_second"] is None
    assert not gone["counter_reset"] and gone["utilization"] is None
    back = latest_row(1, _status(), PortCounters("Ethernet0", 10**15 + 6_000, 10**15),
                      start + timedelta(seconds=120), gone)
    # Read as 0 while missing, the return looked like 10**15 bytes in a minute (~17 TB/s).
    assert back["in_bytes_per_second"] is None and not back["counter_reset"]
    steady = latest_row(1, _status(), PortCounters("Ethernet0", 10**15 + 12_000, 10**15),
                        start + timedelta(seconds=180), back)
    assert steady["in_bytes_per_second"] == 100 and steady["out_bytes_per_second"] == 0


def test_a_counter_the_platform_does_not_report_stays_unknown():
    from fabric.drivers.sonic_counters import port_counters_from_sai

    stats = {"SAI_PORT_STAT_IF_IN_OCTETS": "5", "SAI_PORT_STAT_IF_OUT_OCTETS": "7",
             "SAI_PORT_STAT_IF_IN_ERRORS": "0", "SAI_PORT_STAT_IF_IN_UCAST_PKTS": "3",
             "SAI_PORT_STAT_PFC_3_RX_PKTS": "9"}
    counters = port_counters_from_sai("Ethernet0", stats, {3: None})
    assert counters.out_errors is None and counters.in_errors == 0
    assert counters.in_packets is None  # portstat: N/A when one counter of the sum is missing
    assert counters.pfc_rx[3] == 9 and counters.pfc_rx[0] is None
    assert port_counters_from_sai("Ethernet0", None, {}).in_octets is None


def test_utilisation_uses_the_running_speed_and_intent_differences_are_kept():
    from datetime import UTC, datetime

    from fabric.polling import latest_row

    status = _status(speed=25_000, configured_speed_mbps=40_000, configured_admin_up=True,
                     fec="none", configured_fec="rs")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    first = latest_row(1, status, PortCounters("Ethernet0", 0, 0), start, None)
    # 1.5 GB/s on a port running 25G (3.125 GB/s), configured 40G (5 GB/s).
    second = latest_row(1, status, PortCounters("Ethernet0", 90 * 10**9, 0),
                        start + timedelta(seconds=60), first)
    assert second["utilization"] == pytest.approx(0.48)
    assert second["intent_differences"] == {
        "speed_mbps": {"configured": 40_000, "actual": 25_000},
        "fec": {"configured": "rs", "actual": "none"},
    }


def test_a_port_missing_from_the_counter_map_is_a_finding_not_a_gap(small_fleet, emulated,
                                                                    api_as, make_user):
    from django.test import Client

    from fabric.hooks import register_fabric_finding_listener, unregister_fabric_finding_listener
    from portal.models import Role

    leaf = emulated.switches["leaf-p1-r0"]
    leaf.db.hdel("COUNTERS_DB", "COUNTERS_PORT_NAME_MAP", "Ethernet4")
    inventory = set(SwitchPort.objects.filter(switch__hostname="leaf-p1-r0")
                    .values_list("name", flat=True))
    # An uncabled port: traffic never rewrites its counters.
    idle = next(name for name in leaf.ports if name in inventory and leaf.neighbor(name) is None)
    oid = leaf.port_oids[idle]
    leaf.db.hdel("COUNTERS_DB", f"COUNTERS:{oid}", "SAI_PORT_STAT_IF_OUT_ERRORS")
    leaf.db.hset("STATE_DB", "PORT_TABLE|Ethernet0", {"speed": "25000"})
    findings = []
    register_fabric_finding_listener(findings.append)
    try:
        poll_every_minute(emulated, 2)
    finally:
        unregister_fabric_finding_listener(findings.append)
    row = latest("leaf-p1-r0", "Ethernet4")
    assert not row.counters_mapped and row.in_octets is None and row.utilization is None
    assert latest("leaf-p1-r0", idle).out_errors is None
    state = SwitchPollState.objects.get(switch__hostname="leaf-p1-r0")
    assert state.unmapped_ports == ["Ethernet4"]
    assert [(f.kind, f.ports) for f in findings] == [
        ("counters_unmapped", ("leaf-p1-r0:Ethernet4",))]  # told once, not at every poll
    running = latest("leaf-p1-r0", "Ethernet0")
    assert running.speed_mbps == 25_000
    assert running.intent_differences["speed_mbps"] == {"configured": 400_000, "actual": 25_000}
    api = api_as(Role.OPERATOR)
    ports = api.get("/api/fabric/ports/?switch=leaf-p1-r0&page_size=200").json()["results"]
    by_name = {port["name"]: port["counters"] for port in ports}
    assert by_name["Ethernet4"]["in_octets"] is None
    assert by_name[idle]["out_errors"] is None
    assert by_name["Ethernet0"]["intent_differences"]["speed_mbps"]["actual"] == 25_000
    browser = Client()
    browser.force_login(make_user(Role.OPERATOR))
    page = browser.get("/fabric/switches/leaf-p1-r0/").content.decode()
    assert "speed: configured 400G, running 25G" in page
    assert "no counters (not in COUNTERS_PORT_NAME_MAP)" in page and "n/a" in page


def test_a_port_state_that_becomes_unknown_is_neither_a_link_change_nor_down(
        small_fleet, emulated, monkeypatch):
    """Issue 28: a port that drops out of APPL_DB (intfutil: N/A) was stored admin down / oper
    down, counted down and signalled as a link going down. Now it is stored unknown (null), the
    inventory's status is "" (unknown), it is counted neither up nor down, and a change to or
    from unknown is no LinkChange; between two known states it still is one."""
    from fabric.hooks import LinkChange

    signals = []
    monkeypatch.setattr("fabric.polling.notify_fabric_signals", signals.extend)
    leaf = emulated.switches["leaf-p1-r0"]
    inventory = set(SwitchPort.objects.filter(switch__hostname="leaf-p1-r0")
                    .values_list("name", flat=True))
    gone, half_known = [name for name in leaf.ports
                        if name in inventory and leaf.neighbor(name) is not None][:2]
    poll_every_minute(emulated, 1)
    before = SwitchPollState.objects.get(switch__hostname="leaf-p1-r0")
    assert (latest("leaf-p1-r0", gone).admin_up, latest("leaf-p1-r0", gone).oper_up) == (
        True, True)
    entry = leaf.db.hgetall("APPL_DB", f"PORT_TABLE:{gone}")
    leaf.db.delete("APPL_DB", f"PORT_TABLE:{gone}")  # portsyncd has not (re)created it
    leaf.db.hdel("APPL_DB", f"PORT_TABLE:{half_known}", "oper_status")  # admin up, oper N/A
    poll_every_minute(emulated, 1)
    row, half = latest("leaf-p1-r0", gone), latest("leaf-p1-r0", half_known)
    assert (row.admin_up, row.oper_up, half.admin_up, half.oper_up) == (None, None, True, None)
    assert SwitchPort.objects.get(switch__hostname="leaf-p1-r0", name=gone).oper_status == ""
    after = SwitchPollState.objects.get(switch__hostname="leaf-p1-r0")
    assert (after.ports_up, after.ports_down) == (before.ports_up - 2, before.ports_down)
    assert signals == []
    leaf.db.hset("APPL_DB", f"PORT_TABLE:{gone}", {**entry, "oper_status": "down"})
    poll_every_minute(emulated, 1)
    assert signals == []  # back from unknown: not a link that just went down
    leaf.db.hset("APPL_DB", f"PORT_TABLE:{gone}", {"oper_status": "up"})
    poll_every_minute(emulated, 1)
    assert signals == [LinkChange("leaf-p1-r0", gone, True, True)]
