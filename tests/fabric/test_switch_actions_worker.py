"""Every switch action end to end: API -> Action -> real Celery worker -> SonicSshDriver -> SSH
-> the SONiC emulator, whose databases the tests then inspect."""

from __future__ import annotations

import json

import pytest

from fabric.emulator.switch import DEFAULT_CONFIG_FILE
from portal.models import Action, ActionStatus
from tests.fabric.driver_contract import (
    CONTRACT_LEAF,
    CONTRACT_SPINE,
    EMULATOR_LOGIN,
    EmulatorThread,
    write_credentials,
)
from tests.fabric.test_switch_actions import build_action_inventory, switch_url
from tests.support import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.emulator, pytest.mark.django_db(transaction=True)]

COMMAND_TIMEOUT_SECONDS = 1


def finished(action_id: int, timeout: float = 30) -> Action:
    def done():
        action = Action.objects.get(pk=action_id)
        return action if action.is_terminal else None

    return wait_for(done, timeout, f"Action {action_id} to finish")


@pytest.fixture
def emulator(tmp_path):
    fabric = EmulatorThread([CONTRACT_LEAF, CONTRACT_SPINE], tmp_path / "host-keys")
    yield fabric
    fabric.stop()


@pytest.fixture
def inventory(transactional_db):
    return build_action_inventory()


@pytest.fixture
def worker(celery_worker_process, emulator, tmp_path):
    """A real worker whose driver reaches leaf01 and spine01 in the emulator over SSH."""
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(emulator.known_hosts())
    credentials = write_credentials(tmp_path / "credentials.yaml.json",
                                    {"sonic/leaf": EMULATOR_LOGIN, "sonic/spine": EMULATOR_LOGIN})
    celery_worker_process.extra_env = {
        "FABRIC_DRIVER": "fabric.drivers.ssh.SonicSshDriver",
        "FABRIC_CREDENTIALS_FILE": str(credentials),
        "FABRIC_KNOWN_HOSTS_FILE": str(known_hosts),
        "FABRIC_SWITCH_ENDPOINTS": json.dumps({
            name: f"{emulator.host}:{emulator.port_of(name)}" for name in ("leaf01", "spine01")
        }),
        "FABRIC_SSH_CONNECT_TIMEOUT": "3",
        "FABRIC_SSH_COMMAND_TIMEOUT": str(COMMAND_TIMEOUT_SECONDS),
        "SLURM_DRIVER": "tests.fabric.slurm_recorder.RecordingSlurmDriver",
        "SLURM_RECORDER_FILE": str(tmp_path / "slurm.jsonl"),
        "MAINTENANCE_CHECK_SECONDS": "1",
    }
    celery_worker_process.start()
    return celery_worker_process


def post(client, url: str, body: dict) -> int:
    response = client.post(url, body, format="json")
    assert response.status_code == 202, response.content
    return response.data["id"]


def test_shutdown_then_startup_change_the_switch(worker, emulator, inventory, operator_api):
    shut = post(operator_api, switch_url(inventory.leaf, "ports/admin"),
                {"ports": ["Ethernet8"], "state": "down", "reason": "reseat uplink optic"})
    action = finished(shut)
    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    assert emulator.config_db("leaf01", "PORT|Ethernet8")["admin_status"] == "down"
    assert emulator.appl_db("leaf01", "PORT_TABLE:Ethernet8")["oper_status"] == "down"
    # The spine's end lost light too, and the result says what the switch reported.
    assert emulator.appl_db("spine01", "PORT_TABLE:Ethernet0")["oper_status"] == "down"
    assert action.result["ports"] == {"Ethernet8": {"admin": "down", "oper": "down"}}
    port = inventory.leaf.ports.get(name="Ethernet8")
    assert (port.admin_status, port.oper_status) == ("down", "down")
    # The switch's login stays in the credentials store: nothing recorded carries it.
    recorded = json.dumps([action.parameters, action.result, action.last_error])
    assert EMULATOR_LOGIN["password"] not in recorded

    again = post(operator_api, switch_url(inventory.leaf, "ports/admin"),
                 {"ports": ["Ethernet8"], "state": "down", "reason": "idempotent"})
    assert finished(again).status == ActionStatus.SUCCEEDED  # shutting a down port succeeds

    start = post(operator_api, switch_url(inventory.leaf, "ports/admin"),
                 {"ports": ["Ethernet8"], "state": "up", "reason": "optic reseated"})
    assert finished(start).status == ActionStatus.SUCCEEDED
    assert emulator.config_db("leaf01", "PORT|Ethernet8")["admin_status"] == "up"
    assert emulator.appl_db("leaf01", "PORT_TABLE:Ethernet8")["oper_status"] == "up"


def test_a_port_the_switch_refuses_fails_the_action_with_its_error(worker, emulator, inventory,
                                                                   operator_api):
    # Ethernet12 is in the inventory, but on the switch Ethernet8 is a full 8-lane port.
    refused = post(operator_api, switch_url(inventory.leaf, "ports/admin"),
                   {"ports": ["Ethernet12", "Ethernet16"], "state": "up", "reason": "bring up"})
    action = finished(refused)
    assert action.status == ActionStatus.FAILED
    assert action.attempts == 1  # a refusal is not retried
    assert "Error: Interface name is invalid. Please enter a valid interface name!!" in (
        action.last_error)
    assert "config interface startup Ethernet12" in action.last_error
    # Nothing of the request was applied.
    assert emulator.config_db("leaf01", "PORT|Ethernet16")["admin_status"] == "down"
    detail = operator_api.get(f"/api/actions/{refused}/").json()
    assert "Interface name is invalid" in detail["last_error"]


def test_an_ssh_timeout_is_retried_until_the_switch_answers(worker, emulator, inventory,
                                                            operator_api):
    emulator.set_response_delay("leaf01", COMMAND_TIMEOUT_SECONDS + 2)
    saved = post(operator_api, switch_url(inventory.leaf, "save"), {"reason": "persist"})

    def retrying():
        action = Action.objects.get(pk=saved)
        return action.attempts >= 1 and "unreachable" in action.last_error

    wait_for(retrying, 30, "the first attempt to time out")
    assert Action.objects.get(pk=saved).status != ActionStatus.FAILED
    emulator.set_response_delay("leaf01", 0)
    action = finished(saved)
    assert action.status == ActionStatus.SUCCEEDED
    assert action.attempts >= 2
    outcomes = list(action.attempt_log.order_by("number").values_list("outcome", flat=True))
    assert outcomes[0] == "retry" and outcomes[-1] == "succeeded"


def test_qos_profile_lands_in_the_switch_config_db(worker, emulator, inventory, operator_api):
    applied = post(operator_api, switch_url(inventory.leaf, "qos"), {"reason": "Table 15"})
    action = finished(applied)
    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    assert action.result == {"profile": "SAKURAONE_ROCE", "switches": ["leaf01"]}
    wred = emulator.config_db("leaf01", "WRED_PROFILE|AZURE_LOSSLESS")
    assert (wred["green_min_threshold"], wred["green_max_threshold"]) == ("2097152", "10485760")
    assert wred["green_drop_probability"] == "1" and wred["ecn"] == "ecn_all"
    assert emulator.config_db("leaf01", "PORT_QOS_MAP|Ethernet0")["pfc_enable"] == "3"
    assert emulator.config_db("leaf01", "QUEUE|Ethernet0|3")["wred_profile"] == "AZURE_LOSSLESS"
    profile = emulator.config_db("leaf01", "BUFFER_PROFILE|pg_lossless_400000_5m_profile")
    assert (profile["xoff"], profile["xon_offset"]) == ("36570285", "18432")
    # The spine was not part of the request.
    assert emulator.config_db("spine01", "PORT_QOS_MAP|Ethernet0")["pfc_enable"] == "3,4"

    pod_wide = post(operator_api, f"/api/fabric/pods/{inventory.pod.pk}/qos/",
                    {"reason": "pod roll-out, again"})
    assert finished(pod_wide).status == ActionStatus.SUCCEEDED  # re-applying is harmless


def test_save_config_persists_the_running_config(worker, emulator, inventory, operator_api):
    switch = emulator.server.switches["leaf01"]
    emulator.sync(lambda: switch.db.hset("CONFIG_DB", "PORT|Ethernet16", {"admin_status": "up"}))
    saved = post(operator_api, switch_url(inventory.leaf, "save"), {"reason": "persist"})
    assert finished(saved).status == ActionStatus.SUCCEEDED
    snapshot = emulator.sync(lambda: switch.saved_configs[DEFAULT_CONFIG_FILE])
    assert snapshot["PORT|Ethernet16"]["admin_status"] == "up"


def test_leaf_maintenance_report_only_reports_and_changes_nothing(worker, emulator, inventory,
                                                                  operator_api):
    report = post(operator_api, switch_url(inventory.leaf, "maintenance"),
                  {"reason": "plan PSU swap", "report_only": True})
    action = finished(report)
    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    assert action.result["nodes"] == ["gpu001", "gpu002"]
    assert action.result["rails"] == [0]
    assert action.result["ports"] == ["Ethernet0", "Ethernet4"]
    assert action.result["ports_up"] == ["Ethernet0", "Ethernet4"]
    assert [link["cable_label"] for link in action.result["links"]] == [
        "rail0-gpu001", "rail0-gpu002"]
    assert emulator.config_db("leaf01", "PORT|Ethernet0")["admin_status"] == "up"
    assert not Action.objects.filter(kind="slurm.drain").exists()


def test_leaf_maintenance_drains_first_then_shuts_host_ports(worker, emulator, inventory,
                                                             operator_api, tmp_path):
    maintenance = post(operator_api, switch_url(inventory.leaf, "maintenance"),
                       {"reason": "swap PSU"})
    action = finished(maintenance, timeout=60)
    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    drain = Action.objects.get(pk=action.parameters["drain_action_id"])
    assert drain.status == ActionStatus.SUCCEEDED
    assert drain.finished_at <= action.finished_at
    lines = (tmp_path / "slurm.jsonl").read_text().splitlines()
    recorded = [json.loads(line) for line in lines]
    assert recorded[0]["drain"] == ["gpu001", "gpu002"]
    for port in ("Ethernet0", "Ethernet4"):
        assert emulator.config_db("leaf01", f"PORT|{port}")["admin_status"] == "down"
    # The uplink to the spine is not host-facing: it stays up.
    assert emulator.config_db("leaf01", "PORT|Ethernet8")["admin_status"] == "up"
