"""Drain through the real pipeline: API -> Action -> Celery worker process -> simulated Slurm
(kept in the database, so the test process and the worker see one cluster) -> node sync."""

from __future__ import annotations

import pytest

from inventory.models import Node
from jobs.drivers.simulator import SimulatorDriver
from portal.models import Action, ActionStatus, Role
from tests.portal.test_actions_worker import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_drain_runs_on_the_worker_and_the_node_state_follows(celery_worker_process, api_as):
    for number in range(1, 9):
        Node.objects.create(hostname=f"gpu{number:03d}")
    cluster = SimulatorDriver(history_hours=0, mean_failure_seconds=0)
    cluster.ping()  # create the shared cluster here, in the test process
    celery_worker_process.start()

    client = api_as(Role.OPERATOR)
    response = client.post(
        "/api/jobs/nodes/drain", {"hostlist": "gpu[002-003]", "reason": "worker path"}
    )
    assert response.status_code == 202
    action_id = response.json()["id"]
    wait_for(
        lambda: Action.objects.get(pk=action_id).status == ActionStatus.SUCCEEDED,
        30,
        "the drain Action to succeed on the worker",
    )
    # The worker drained the cluster this process reads...
    states = {state.name: state for state in cluster.nodes(["gpu002", "gpu003"])}
    assert {state.display_state for state in states.values()} <= {"drained", "draining"}
    assert states["gpu002"].reason == "worker path"
    # ...and the sync it queued afterwards brought the inventory up to date.
    wait_for(
        lambda: set(
            Node.objects.filter(hostname__in=["gpu002", "gpu003"]).values_list(
                "slurm_state", flat=True
            )
        )
        <= {"drained", "draining"},
        30,
        "the node-state sync after the drain",
    )
    assert Node.objects.get(hostname="gpu002").slurm_reason == "worker path"
