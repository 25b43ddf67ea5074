"""Drain and resume end to end: request_* -> Action row -> real Celery worker -> CLI driver ->
the real slurmctld, checked with Slurm's own `sinfo`.

Run: .venv/bin/python -m pytest tests/jobs/test_slurm_integration.py -q
Needs root, MariaDB, PostgreSQL and Redis (DATABASE_URL / REDIS_URL), like `make test`.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from inventory.models import Node
from jobs.services import request_drain, request_resume
from portal.models import Action, ActionAttempt, ActionStatus
from tests.jobs import slurm_cluster
from tests.jobs.slurm_fixtures import sinfo_state_and_reason

pytest_plugins = ["tests.jobs.slurm_fixtures"]  # real_slurm, fleet
pytestmark = [pytest.mark.slurm, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ACTION_TIMEOUT = 60


@pytest.fixture(autouse=True)
def _undrain_afterwards(real_slurm):
    yield
    real_slurm.restore_nodes(real_slurm.node_names())


@pytest.fixture
def unknown_node(fleet) -> Node:
    """An inventory node the Slurm cluster does not know."""
    return Node.objects.create(hostname="gpu999")


@pytest.fixture
def worker(celery_worker_process, real_slurm):
    """A real worker whose Slurm driver is the CLI driver against the test cluster."""
    celery_worker_process.extra_env = {
        "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver",
        "SLURM_CONF": real_slurm.conf,
        "SLURM_COMMAND_TIMEOUT": "30",
    }
    celery_worker_process.start()
    return celery_worker_process


def wait_for_action(action: Action, status: str, timeout: float = ACTION_TIMEOUT) -> Action:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        action.refresh_from_db()
        if action.status == status:
            return action
        if action.is_terminal:
            break
        time.sleep(0.1)
    pytest.fail(f"Action #{action.pk} is {action.status}, not {status}: {action.last_error}")


def sinfo_json(real_slurm) -> dict[str, dict]:
    return {
        node["name"]: node for node in json.loads(real_slurm.run("sinfo", "--json").stdout)["nodes"]
    }


def scontrol_updates(worker, node_argument: str) -> list[str]:
    """The `scontrol update` commands the worker's driver ran for that NodeName= argument."""
    pattern = re.compile(
        r"slurm command: scontrol update '?NodeName=" + re.escape(node_argument) + r"'? "
    )
    return [line for line in worker.log().splitlines() if pattern.search(line)]


def attempt_outcomes(action: Action) -> list[str]:
    return list(
        ActionAttempt.objects.filter(action=action)
        .order_by("number")
        .values_list("outcome", flat=True)
    )


def test_drain_then_resume_through_the_worker(worker, fleet, real_slurm):
    drain, created = request_drain(nodes=[fleet["gpu007"]], reason="GPU 3 Xid 79")
    assert created

    wait_for_action(drain, ActionStatus.SUCCEEDED)

    assert sinfo_state_and_reason(real_slurm, "gpu007") == ("drain", "GPU 3 Xid 79")
    assert drain.result == {"drained": ["gpu007"]}
    assert attempt_outcomes(drain) == [ActionAttempt.Outcome.SUCCEEDED]

    resume, _ = request_resume(nodes=[fleet["gpu007"]], reason="GPU replaced")
    wait_for_action(resume, ActionStatus.SUCCEEDED)

    node = sinfo_json(real_slurm)["gpu007"]
    assert "DRAIN" not in node["state_flags"]
    assert node["reason"] == ""
    assert resume.result == {"resumed": ["gpu007"]}


def test_bulk_drain_of_16_nodes_is_one_action_and_one_scontrol_call(worker, fleet, real_slurm):
    names = real_slurm.node_names()[:16]

    action, _ = request_drain(nodes=[fleet[name] for name in names], reason="leaf-p1-r0 swap")
    wait_for_action(action, ActionStatus.SUCCEEDED)

    assert Action.objects.count() == 1
    assert action.target == "gpu[001-016]"
    assert attempt_outcomes(action) == [ActionAttempt.Outcome.SUCCEEDED]
    nodes = sinfo_json(real_slurm)
    for name in names:
        assert "DRAIN" in nodes[name]["state_flags"], name
        assert nodes[name]["reason"] == "leaf-p1-r0 swap", name
    for name in real_slurm.node_names()[16:]:
        assert "DRAIN" not in nodes[name]["state_flags"], name
    assert len(scontrol_updates(worker, "gpu[001-016]")) == 1
    assert len([line for line in worker.log().splitlines() if "scontrol update" in line]) == 1


def test_controller_down_retries_and_succeeds_once_it_is_back(worker, fleet, real_slurm):
    slurm_cluster.stop_controller()
    try:
        action, _ = request_drain(nodes=[fleet["gpu009"]], reason="controller outage drill")

        deadline = time.monotonic() + ACTION_TIMEOUT
        while ActionAttempt.Outcome.RETRY not in attempt_outcomes(action):
            assert time.monotonic() < deadline, "no transient failure while the controller is down"
            time.sleep(0.2)
        action.refresh_from_db()
        assert action.status in (ActionStatus.QUEUED, ActionStatus.RUNNING)
        assert "Unable to contact slurm controller" in action.last_error
    finally:
        slurm_cluster.start_controller()

    wait_for_action(action, ActionStatus.SUCCEEDED)

    outcomes = attempt_outcomes(action)
    assert outcomes[-1] == ActionAttempt.Outcome.SUCCEEDED
    assert set(outcomes[:-1]) == {ActionAttempt.Outcome.RETRY}
    assert sinfo_state_and_reason(real_slurm, "gpu009") == ("drain", "controller outage drill")
    # The drain reached Slurm once: an attempt while the controller was down either stopped at
    # the node check or sent an update that could not reach it (nodes confirmed recently are not
    # checked again, SLURM_KNOWN_NODE_SECONDS).
    updates = scontrol_updates(worker, "gpu009")
    assert len([line for line in updates if "-> exit 0 " in line]) == 1


def test_reason_with_shell_metacharacters_is_passed_verbatim(worker, fleet, real_slurm, tmp_path):
    marker = tmp_path / "a-shell-ran"
    reason = f'; rm -rf / $(reboot) "quoted" $(touch {marker}) `touch {marker}` | tee x'

    action, _ = request_drain(nodes=[fleet["gpu010"]], reason=reason)
    wait_for_action(action, ActionStatus.SUCCEEDED)

    assert Action.objects.get(pk=action.pk).reason == reason
    assert sinfo_json(real_slurm)["gpu010"]["reason"] == reason
    assert sinfo_state_and_reason(real_slurm, "gpu010") == ("drain", reason)
    assert not marker.exists()


def test_node_unknown_to_slurm_fails_the_action_and_drains_nothing(
    worker, fleet, unknown_node, real_slurm
):
    action, _ = request_drain(nodes=[fleet["gpu011"], unknown_node], reason="typo")

    wait_for_action(action, ActionStatus.FAILED)

    assert attempt_outcomes(action) == [ActionAttempt.Outcome.FAILED]
    assert "Slurm does not know node(s) gpu999" in action.last_error
    assert "DRAIN" not in sinfo_json(real_slurm)["gpu011"]["state_flags"]
    assert scontrol_updates(worker, "gpu[011,999]") == []
