"""Reboot requests: `request_reboot` -> one durable slurm.reboot Action -> the Slurm driver's
`scontrol reboot ASAP nextstate=...`, modelled by the simulated Slurm (REBOOT_REQUESTED + DRAIN)."""

from __future__ import annotations

import pytest

from inventory.models import Node
from jobs.services import REBOOT_ACTION, request_reboot
from portal.errors import InvalidInput
from portal.models import Action
from portal.services.actions import run_action


@pytest.fixture
def nodes(db):
    return {
        name: Node.objects.create(hostname=name) for name in (f"gpu{n:03d}" for n in range(1, 5))
    }


@pytest.fixture
def simulator(make_simulator, monkeypatch):
    driver = make_simulator(nodes=4)
    monkeypatch.setattr("jobs.action_handlers.get_slurm_driver", lambda: driver)
    monkeypatch.setattr("jobs.action_handlers._refresh_node_states", lambda: None)
    return driver


def test_reboot_is_one_action_that_slurm_marks_reboot_requested(nodes, simulator):
    action, created = request_reboot(
        nodes=[nodes["gpu001"], nodes["gpu002"]], reason="driver 535 update", next_state="down"
    )
    assert created
    assert action.kind == REBOOT_ACTION
    assert action.target == "gpu[001-002]"
    assert action.parameters == {"nodes": ["gpu001", "gpu002"], "next_state": "down"}

    assert run_action(action_id=action.pk) == "succeeded"

    states = {state.name: state for state in simulator.nodes()}
    for name in ("gpu001", "gpu002"):
        assert "REBOOT_REQUESTED" in states[name].flags
        assert "DRAIN" in states[name].flags  # ASAP: no new job starts before the reboot
        assert states[name].reason.startswith("driver 535 update")
    assert "REBOOT_REQUESTED" not in states["gpu003"].flags


def test_same_idempotency_key_gives_the_same_action(nodes, simulator):
    first, created = request_reboot(nodes=[nodes["gpu003"]], reason="x", idempotency_key="k1")
    again, created_again = request_reboot(nodes=[nodes["gpu003"]], reason="x", idempotency_key="k1")
    assert created and not created_again
    assert first.pk == again.pk
    assert Action.objects.filter(kind=REBOOT_ACTION).count() == 1


def test_a_node_already_rebooting_keeps_its_first_request(nodes, simulator):
    first, _ = request_reboot(nodes=[nodes["gpu004"]], reason="first", next_state="down")
    assert run_action(action_id=first.pk) == "succeeded"
    second, _ = request_reboot(nodes=[nodes["gpu004"]], reason="second", next_state="resume")
    assert run_action(action_id=second.pk) == "succeeded"
    assert simulator.nodes(["gpu004"])[0].reason.startswith("first")


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"reason": "x", "next_state": "idle"}, "next_state"),
        ({"reason": "", "next_state": "resume"}, "reason"),
    ],
)
def test_bad_input_names_the_field_and_queues_nothing(nodes, arguments, field):
    with pytest.raises(InvalidInput) as error:
        request_reboot(nodes=[nodes["gpu001"]], **arguments)
    assert field in error.value.detail
    assert not Action.objects.exists()


REBOOT_URL = "/api/jobs/nodes/reboot/"


def test_the_api_queues_one_reboot_action_with_next_state(operator_api, nodes, simulator):
    response = operator_api.post(
        REBOOT_URL, {"hostlist": "gpu[001-003]", "reason": "BIOS update", "next_state": "down"}
    )
    assert response.status_code == 202, response.content
    action = Action.objects.get(kind=REBOOT_ACTION)
    assert action.target == "gpu[001-003]"
    assert action.parameters["next_state"] == "down"
    assert run_action(action_id=action.pk) == "succeeded"
    assert all("REBOOT_REQUESTED" in s.flags for s in simulator.nodes(["gpu001", "gpu003"]))


def test_the_api_names_a_bad_next_state(operator_api, nodes):
    response = operator_api.post(
        REBOOT_URL, {"hostlist": "gpu001", "reason": "x", "next_state": "idle"}
    )
    assert response.status_code == 400
    assert "next_state" in response.json()
    assert not Action.objects.exists()
