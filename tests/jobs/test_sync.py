"""Node-state sync, live jobs (squeue) and their events; the unhealthy hook per transition."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import Allocation, Node
from jobs.models import Job
from jobs.sync import sync_live_jobs, sync_node_states


@pytest.fixture
def nodes(db):
    return {
        name: Node.objects.create(hostname=name)
        for name in (f"gpu{number:03d}" for number in range(1, 7))
    }


@pytest.fixture
def driver(make_simulator):
    return make_simulator(nodes=6)


def published_after_commit(groups, during, django_capture_on_commit_callbacks):
    """Run `during()` with on-commit callbacks held back; prove nothing reached `groups` before
    they ran, then return the messages that arrived after. One event loop for the whole
    exchange (the Redis channel layer's queues belong to the loop that made them)."""

    def capture():
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            during()
        return callbacks

    async def scenario():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        for group in groups:
            await layer.group_add(group, channel)
        callbacks = await sync_to_async(capture)()
        # Not cancelled when nothing came: Redis pub/sub forgets a channel whose receive was.
        receiving = asyncio.ensure_future(layer.receive(channel))
        done, _ = await asyncio.wait({receiving}, timeout=0.3)
        assert not done, "an event left before the commit"
        await sync_to_async(lambda: [callback() for callback in callbacks])()
        first = await asyncio.wait_for(receiving, 3)
        return [first] + [await asyncio.wait_for(layer.receive(channel), 3) for _ in groups[1:]]

    return async_to_sync(scenario)()


def test_first_sync_fills_every_node_then_only_changes_are_written(nodes, driver):
    changes = sync_node_states(driver=driver)
    assert sorted(change.hostname for change in changes) == sorted(nodes)
    assert set(Node.objects.values_list("slurm_state", flat=True)) == {"idle"}
    stamped = Node.objects.get(hostname="gpu001").slurm_state_changed_at
    assert stamped is not None

    driver.drain(["gpu002"], "bad DIMM")
    changes = sync_node_states(driver=driver)
    assert [(c.hostname, c.previous_state, c.state) for c in changes] == [
        ("gpu002", "idle", "drained")
    ]
    drained = Node.objects.get(hostname="gpu002")
    assert drained.slurm_reason == "bad DIMM"
    assert drained.slurm_state_changed_at is not None
    assert Node.objects.get(hostname="gpu001").slurm_state_changed_at == stamped
    assert sync_node_states(driver=driver) == []


def test_sync_cost_does_not_grow_with_changes(nodes, driver):
    sync_node_states(driver=driver)
    driver.drain(["gpu001"], "one")
    with CaptureQueriesContext(connection) as one_change:
        sync_node_states(driver=driver)
    driver.drain(["gpu002", "gpu003", "gpu004", "gpu005"], "four")
    with CaptureQueriesContext(connection) as four_changes:
        sync_node_states(driver=driver)
    assert len(four_changes) == len(one_change)


def test_a_sync_changing_many_nodes_locks_and_commits_them_a_batch_at_a_time(
    nodes, driver, monkeypatch
):
    # Every node changing at once (a first sync, a controller that lost its nodes) held all
    # their row locks in one transaction: at 12,500 nodes an operator's edit waited 41.8 s.
    from jobs import sync

    monkeypatch.setattr(sync, "NODE_SYNC_BATCH", 4)
    with CaptureQueriesContext(connection) as queries:
        changes = sync_node_states(driver=driver)
    assert len(changes) == 6 and set(Node.objects.values_list("slurm_state", flat=True)) == {
        "idle"
    }
    locks = [query["sql"] for query in queries
             if query["sql"].startswith('SELECT "inventory_node"') and query["sql"].endswith(
                 "FOR UPDATE")]
    assert len(locks) == 2  # 4 nodes, then 2
    ids = sorted(Node.objects.values_list("pk", flat=True))
    assert all(str(pk) in locks[0] for pk in ids[:4]) and str(ids[4]) not in locks[0]


def test_changes_are_published_after_commit_with_the_tenants_holding_the_node(
    nodes, driver, tenant_a, django_capture_on_commit_callbacks
):
    sync_node_states(driver=driver)
    start = driver.clock() - timedelta(days=1)
    allocation = Allocation.objects.create(tenant=tenant_a, start=start)
    allocation.nodes.add(nodes["gpu004"])
    driver.drain(["gpu004"], "fan failure")
    messages = published_after_commit(
        ["cluster", f"node.{nodes['gpu004'].pk}"],
        lambda: sync_node_states(driver=driver),
        django_capture_on_commit_callbacks,
    )
    by_group = {message["group"]: message for message in messages}
    cluster = by_group["cluster"]
    assert cluster["event"] == "node.state"
    assert cluster["tenant_ids"] == [tenant_a.pk]
    payload = json.loads(cluster["payload"])
    assert payload["hostname"] == "gpu004"
    assert payload["state"] == "drained" and payload["reason"] == "fan failure"
    assert payload["id"] == nodes["gpu004"].pk
    assert json.loads(by_group[f"node.{nodes['gpu004'].pk}"]["payload"])["state"] == "drained"


def test_unhealthy_hook_is_called_once_per_transition(nodes, driver, unhealthy_calls):
    sync_node_states(driver=driver)
    driver.fail_node("gpu003")
    sync_node_states(driver=driver)
    sync_node_states(driver=driver)
    assert unhealthy_calls == [("gpu003", "down", "Not responding")]

    driver.recover_node("gpu003")
    sync_node_states(driver=driver)
    assert Node.objects.get(hostname="gpu003").slurm_state == "idle"
    driver.fail_node("gpu003")
    sync_node_states(driver=driver)
    assert len(unhealthy_calls) == 2


def test_live_jobs_are_mirrored_with_nodes_and_tenant(db, make_simulator, clock, tenant_a):
    names = [f"gpu{number:03d}" for number in range(1, 21)]
    for name in names:
        Node.objects.create(hostname=name)
    driver = make_simulator(nodes=20, mean_arrival_seconds=120)
    clock.advance(hours=3)
    listed = driver.jobs()
    assert listed, "the simulator should have queued jobs after three hours"
    result = sync_live_jobs(driver=driver)
    assert result.created == len(listed)
    for slurm_job in listed:
        job = Job.objects.get(job_id=slurm_job.job_id)
        assert job.state == slurm_job.state
        assert sorted(job.nodes.values_list("hostname", flat=True)) == sorted(
            slurm_job.node_names
        )
        assert job.gpus == slurm_job.gpus
        assert job.source == Job.Source.SQUEUE
        assert (job.tenant_id == tenant_a.pk) == (slurm_job.account == "tenant-a")
    assert sync_live_jobs(driver=driver).updated == 0  # nothing changed, nothing written


def test_a_job_that_leaves_squeue_waits_for_accounting(db, make_simulator, clock):
    for number in range(1, 5):
        Node.objects.create(hostname=f"gpu{number:03d}")
    driver = make_simulator(nodes=4, mean_arrival_seconds=300)
    clock.advance(hours=1)
    sync_live_jobs(driver=driver)
    first = Job.objects.filter(state="RUNNING").order_by("job_id").first()
    assert first is not None
    for _ in range(400):
        clock.advance(hours=1)
        if first.job_id not in {job.job_id for job in driver.jobs()}:
            break
    result = sync_live_jobs(driver=driver)
    assert result.left_queue >= 1
    first.refresh_from_db()
    assert first.left_queue_at is not None
    assert first.state == "RUNNING"  # its last known state: accounting has the final word
    assert not first.is_live


def test_beat_tasks_sync_and_skip_quietly_while_the_controller_is_down(
    nodes, driver, monkeypatch
):
    from jobs import tasks

    monkeypatch.setattr("jobs.sync.get_slurm_driver", lambda: driver)
    assert tasks.sync_node_states.apply().get() == len(nodes)
    assert tasks.sync_live_jobs.apply().get() == {"created": 0, "updated": 0, "left": 0}
    driver.set_controller_up(False)
    assert tasks.sync_node_states.apply().get() == 0
    assert tasks.sync_live_jobs.apply().get() == {}
    assert tasks.import_accounting.apply().get() == {}


def test_a_drain_refreshes_only_its_own_nodes(nodes, driver, monkeypatch, settings):
    """After a drain the worker syncs the drained nodes, not the fleet: a whole sync per drain
    would compare and lock every node's row (12,500 of them in a fleet) to show one change."""
    from jobs import action_handlers, tasks
    from portal.actions.registry import get_action_handler
    from portal.models import Action

    monkeypatch.setattr("jobs.sync.get_slurm_driver", lambda: driver)
    monkeypatch.setattr("jobs.action_handlers.get_slurm_driver", lambda: driver)
    assert tasks.sync_node_states.apply().get() == len(nodes)  # every node as Slurm has it
    queued = []
    monkeypatch.setattr(tasks.sync_node_states, "delay",
                        lambda **kwargs: queued.append(kwargs))
    driver.drain(["gpu005"], "changed behind the portal's back")
    action = Action(kind="slurm.drain", target="gpu002", parameters={"nodes": ["gpu002"]},
                    reason="bad DIMM")
    action_handlers.drain_nodes(action)
    assert queued == []  # the sync follows the Action's committed success, not the handler
    get_action_handler("slurm.drain").after_success(action)
    assert queued == [{"names": ["gpu002"]}]
    assert tasks.sync_node_states.apply(kwargs=queued[0]).get() == 1
    states = dict(Node.objects.values_list("hostname", "slurm_state"))
    assert "drain" in states["gpu002"]
    assert "drain" not in states["gpu005"]  # left for the beat's whole sync
    assert tasks.sync_node_states.apply().get() == 1
    assert "drain" in Node.objects.get(hostname="gpu005").slurm_state
