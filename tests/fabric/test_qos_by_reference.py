"""Table 15 goes to the profiles the lossless priority groups and queues actually use: a switch
whose lossless buffer profile is not called pg_lossless_*, the dynamic buffer model (profiles in
APPL_DB only), and a read-back that names what did not match."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.drivers.base import SAKURAONE_ROCE_PROFILE, SwitchTarget, get_fabric_driver
from fabric.drivers.sonic_qos import (
    lossless_bindings,
    plan_qos,
    profile_reference,
    verify_qos,
)
from fabric.emulator import CommandInterpreter, NeighborSpec, Switch, SwitchSpec
from tests.fabric.driver_contract import EMULATOR_LOGIN, EmulatorThread, write_credentials

PROFILE = SAKURAONE_ROCE_PROFILE
TEMPLATE_LEAF = SwitchSpec(  # a platform template binding every lossless PG to one profile
    hostname="leaf02",
    neighbors=[NeighborSpec("Ethernet8", "gpu003", "mlx5_0")],
    lossless_buffer_profile="ingress_lossless_profile",
)
DYNAMIC_LEAF = SwitchSpec(
    hostname="leaf03",
    neighbors=[NeighborSpec("Ethernet8", "gpu004", "mlx5_0")],
    buffer_model="dynamic",
)


# -- the pure resolution ---------------------------------------------------------------------


def test_bindings_follow_buffer_pg_keys_with_port_lists_and_old_style_references():
    config = {
        "BUFFER_PG|Ethernet0,Ethernet8|3-4": {"profile": "[BUFFER_PROFILE|pg_profile_400000_40m]"},
        "BUFFER_PG|Ethernet0|0": {"profile": "ingress_lossy_profile"},
        "BUFFER_PROFILE|pg_profile_400000_40m": {"xoff": "1"},
    }
    bindings, problems = lossless_bindings(config, {}, ["Ethernet0", "Ethernet8", "Ethernet16"],
                                           [3])
    assert [(b.port, b.priority_groups, b.profile) for b in bindings] == [
        ("Ethernet0", "3-4", "pg_profile_400000_40m"),
        ("Ethernet8", "3-4", "pg_profile_400000_40m"),
    ]
    assert problems == ["Ethernet16: no BUFFER_PG holds lossless priority 3"]
    assert profile_reference("[BUFFER_PROFILE_TABLE:pg_lossless_400000_5m_profile]") \
        == "pg_lossless_400000_5m_profile"


def test_plan_sets_the_wred_profile_the_queue_uses_and_keeps_its_binding():
    config = {
        "PORT_QOS_MAP|Ethernet0": {"pfc_enable": "3,4"},
        "QUEUE|Ethernet0|3": {"wred_profile": "ROCE_WRED"},
        "WRED_PROFILE|ROCE_WRED": {"ecn": "ecn_none"},
        "BUFFER_PG|Ethernet0|3-4": {"profile": "ingress_lossless_profile"},
        "BUFFER_PROFILE|ingress_lossless_profile": {"pool": "ingress_lossless_pool"},
    }
    plan = plan_qos(PROFILE, config, {}, ["Ethernet0"], "AZURE_LOSSLESS")
    assert plan.problems == []
    assert plan.wred_profiles == ["ROCE_WRED"] and plan.queue_commands == []
    assert plan.ecn_commands[0].startswith("sudo config ecn -profile ROCE_WRED -gmin 2097152")
    assert plan.buffer_profiles == ["ingress_lossless_profile"]
    assert "sudo config mmu -p ingress_lossless_profile -a 0" in plan.buffer_commands
    # Nothing was applied yet: the read-back names every field that is not Table 15's.
    problems = verify_qos(PROFILE, plan, config, ["Ethernet0"], "AZURE_LOSSLESS")
    assert "WRED_PROFILE|ROCE_WRED ecn is 'ecn_none', not 'ecn_all'" in problems
    assert "PORT_QOS_MAP|Ethernet0 pfc_enable is '3,4', not '3'" in problems
    assert "BUFFER_PROFILE|ingress_lossless_profile xoff is None, not '36570285'" in problems


def test_a_profile_missing_from_config_db_is_a_problem_before_anything_is_written():
    config = {"BUFFER_PG|Ethernet0|3-4": {"profile": "pg_lossless_400000_5m_profile"},
              "WRED_PROFILE|AZURE_LOSSLESS": {}}
    plan = plan_qos(PROFILE, config, {"BUFFER_PROFILE_TABLE:pg_lossless_400000_5m_profile": {}},
                    ["Ethernet0"], "AZURE_LOSSLESS")
    assert plan.problems == [
        "Ethernet0|3-4: bound to buffer profile 'pg_lossless_400000_5m_profile', which CONFIG_DB "
        "BUFFER_PROFILE does not hold (only in APPL_DB)"
    ]


# -- the emulator models both buffer models and names ------------------------------------------


def test_emulator_binds_lossless_pgs_like_its_template_and_buffermgrd():
    named = Switch(TEMPLATE_LEAF)
    assert named.db.hgetall("CONFIG_DB", "BUFFER_PG|Ethernet8|3-4") == {
        "profile": "ingress_lossless_profile"}
    assert named.db.hgetall("APPL_DB", "BUFFER_PG_TABLE:Ethernet8:3-4") == {
        "profile": "ingress_lossless_profile"}
    dynamic = Switch(DYNAMIC_LEAF)
    assert dynamic.db.hgetall("CONFIG_DB", "BUFFER_PG|Ethernet8|3-4") == {"profile": "NULL"}
    assert dynamic.db.keys("CONFIG_DB", "BUFFER_PROFILE|pg_lossless_*") == []
    assert dynamic.db.hgetall("APPL_DB", "BUFFER_PG_TABLE:Ethernet8:3-4") == {
        "profile": "pg_lossless_800000_5m_profile"}
    assert dynamic.db.hget("APPL_DB", "BUFFER_PROFILE_TABLE:pg_lossless_800000_5m_profile",
                           "xoff") == "731136"


def test_config_mmu_without_a_profile_is_a_usage_error():
    shell = CommandInterpreter(Switch(TEMPLATE_LEAF))
    result = shell.execute("sudo config mmu -a 0")
    # config/main.py mmu(): @click.option('-p', ..., required=True); click 7.0's message.
    assert result.exit_status == 2
    assert result.stderr.endswith('Error: Missing option "-p".\n')


# -- over SSH ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def qos_emulator(tmp_path_factory):
    fabric = EmulatorThread([TEMPLATE_LEAF, DYNAMIC_LEAF], tmp_path_factory.mktemp("qos-keys"))
    yield fabric
    fabric.stop()


@pytest.fixture
def ssh_driver(qos_emulator, settings, tmp_path):
    settings.FABRIC_CREDENTIALS_FILE = str(
        write_credentials(tmp_path / "credentials.json", {"sonic/leaf": EMULATOR_LOGIN}))
    settings.FABRIC_KNOWN_HOSTS_FILE = str(tmp_path / "known_hosts")
    Path(settings.FABRIC_KNOWN_HOSTS_FILE).write_text(qos_emulator.known_hosts())
    settings.FABRIC_DRIVER = "fabric.drivers.ssh.SonicSshDriver"
    drivers = []

    def make(hostname: str):
        driver = get_fabric_driver(SwitchTarget(
            hostname=hostname, address=qos_emulator.host, port=qos_emulator.port_of(hostname),
            credentials_ref="sonic/leaf"))
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        driver.close()


@pytest.mark.emulator
def test_table_15_lands_in_the_profile_the_lossless_pgs_use(qos_emulator, ssh_driver):
    ssh_driver("leaf02").apply_qos_profile(PROFILE, ports=["Ethernet8"])
    bound = qos_emulator.config_db("leaf02", "BUFFER_PG|Ethernet8|3-4")["profile"]
    assert bound == "ingress_lossless_profile"
    profile = qos_emulator.config_db("leaf02", f"BUFFER_PROFILE|{bound}")
    assert (profile["xoff"], profile["xon_offset"], profile["dynamic_th"]) == (
        "36570285", "18432", "0")
    # The unbound per-speed profiles were left alone.
    assert qos_emulator.config_db("leaf02", "BUFFER_PROFILE|pg_lossless_800000_5m_profile")[
        "xoff"] == "731136"


@pytest.mark.emulator
def test_dynamic_buffer_model_gets_a_static_profile_in_place_of_the_calculated_one(
        qos_emulator, ssh_driver):
    calculated = qos_emulator.appl_db("leaf03", "BUFFER_PG_TABLE:Ethernet8:3-4")["profile"]
    assert calculated == "pg_lossless_800000_5m_profile"
    ssh_driver("leaf03").apply_qos_profile(PROFILE, ports=["Ethernet8"])
    static = "sakuraone_roce_pg_lossless_800000_5m_profile"
    assert qos_emulator.config_db("leaf03", "BUFFER_PG|Ethernet8|3-4") == {"profile": static}
    assert qos_emulator.appl_db("leaf03", "BUFFER_PG_TABLE:Ethernet8:3-4") == {"profile": static}
    profile = qos_emulator.appl_db("leaf03", f"BUFFER_PROFILE_TABLE:{static}")
    assert (profile["xoff"], profile["xon_offset"], profile["dynamic_th"], profile["xon"]) == (
        "36570285", "18432", "0", "18796")  # xon kept from buffermgrd's calculation
    # Binding the PG turned PFC on for 3-4 (adjust_pfc_enable); Table 15 wants 3 alone.
    assert qos_emulator.config_db("leaf03", "PORT_QOS_MAP|Ethernet8")["pfc_enable"] == "3"
    ssh_driver("leaf03").apply_qos_profile(PROFILE, ports=["Ethernet8"])  # again: `set`


def test_dynamic_pg_without_a_calculated_profile_yet_is_named_before_any_write():
    config = {"DEVICE_METADATA|localhost": {"buffer_model": "dynamic"},
              "BUFFER_PG|Ethernet0|3-4": {"profile": "NULL"}, "WRED_PROFILE|AZURE_LOSSLESS": {}}
    plan = plan_qos(PROFILE, config, {}, ["Ethernet0"], "AZURE_LOSSLESS")
    assert plan.problems == [
        "Ethernet0|3-4: headroom is calculated by buffermgrd and APPL_DB has no profile for it "
        "yet (no BUFFER_PG_TABLE entry); retry once buffermgrd has run"]


def test_buffer_cli_refuses_the_traditional_model_and_checks_profiles():
    traditional = CommandInterpreter(Switch(TEMPLATE_LEAF)).execute(
        "sudo config buffer profile add p --xon 1 --xoff 2")
    assert traditional.exit_status == 2
    assert traditional.stderr.endswith("Error: This command can only be supported on a system "
                                       "with dynamic buffer enabled\n")
    shell = CommandInterpreter(Switch(DYNAMIC_LEAF))
    assert shell.execute("sudo config buffer profile add p --xoff 2").stderr.endswith(
        "Error: Xon is mandatory for non-dynamic profile\n")
    assert shell.execute("sudo config buffer profile add p --xon 100 --xoff 200").exit_status == 0
    assert shell.execute("sudo config buffer profile add p --xon 100 --xoff 200").stderr.endswith(
        "Error: Profile p already exist\n")
    bad = shell.execute("sudo config interface buffer priority-group lossless set Ethernet8 5 p")
    assert bad.exit_status == 2
    assert bad.stderr.endswith("Error: Buffer priority group 5 doesn't exist\n")


# -- the Action --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_qos_action_fails_naming_what_did_not_match(settings):
    from fabric.action_handlers import apply_qos
    from fabric.drivers.emulated import build_emulated_fabric, reset_emulated_fabric
    from fabric.services import request_apply_qos
    from portal.actions.registry import PermanentActionError
    from tests.fabric.test_switch_actions import build_action_inventory

    inventory = build_action_inventory()
    action, _ = request_apply_qos(switches=[inventory.leaf], scope="leaf01", reason="Table 15")
    settings.FABRIC_DRIVER = "fabric.drivers.emulated.EmulatedDriver"
    fabric = build_emulated_fabric([SwitchSpec(hostname="leaf01", neighbors=[
        NeighborSpec("Ethernet8", "gpu001", "mlx5_0")])])
    fabric.switches["leaf01"].db.hset("CONFIG_DB", "QUEUE|Ethernet8|3",
                                      {"wred_profile": "LOSSLESS_GONE"})
    try:
        with pytest.raises(PermanentActionError) as failure:
            apply_qos(action)
    finally:
        reset_emulated_fabric()
    assert str(failure.value) == (
        "leaf01: QoS profile not in effect (nothing was changed): WRED profile "
        "'LOSSLESS_GONE' (queues Ethernet8|3) is not in CONFIG_DB WRED_PROFILE")
