"""The simulator behaves like Slurm for drain and resume, and its workload follows the paper."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from jobs.buckets import size_bucket
from jobs.drivers.base import SlurmRejected, SlurmUnavailable
from jobs.drivers.cluster_model import DEFAULT_ACCOUNTS, ClusterSimulation, generate_job
from jobs.drivers.simulator import FALLBACK_NODE_NAMES, SimulatorDriver


def by_name(states):
    return {state.name: state for state in states}


def start_one_job(simulation_driver, clock):
    """Let arrivals run until some job runs; returns it."""
    for _ in range(200):
        clock.advance(minutes=1)
        running = [job for job in simulation_driver.jobs() if job.state == "RUNNING"]
        if running:
            return running[0]
    raise AssertionError("no job started")


def test_a_fresh_cluster_is_idle_and_follows_the_given_nodes(make_simulator):
    driver = make_simulator(nodes=5)
    states = driver.nodes()
    assert [s.name for s in states] == ["gpu001", "gpu002", "gpu003", "gpu004", "gpu005"]
    assert {s.display_state for s in states} == {"idle"}
    assert all(s.gpus_total == 8 and s.gpus_used == 0 for s in states)
    assert driver.jobs() == []


def test_drain_of_an_idle_node_is_drained_at_once_with_the_reason(make_simulator):
    driver = make_simulator()
    reason = 'GPU3 XID 79; see "ticket #12" && $(rm -rf /)'
    driver.drain(["gpu003"], reason)
    node = by_name(driver.nodes(["gpu003"]))["gpu003"]
    assert node.display_state == "drained"
    assert node.reason == reason
    assert "DRAIN" in node.flags


def test_drain_of_a_busy_node_is_draining_until_its_job_ends(make_simulator, clock):
    driver = make_simulator(nodes=4, mean_arrival_seconds=60)
    job = start_one_job(driver, clock)
    busy = job.node_names[0]
    driver.drain([busy], "maintenance")
    assert by_name(driver.nodes())[busy].display_state == "draining"
    # The job ends (its planned runtime is at most two weeks); the node is drained, not idle.
    for _ in range(400):
        clock.advance(hours=1)
        if job.job_id not in {j.job_id for j in driver.jobs()}:
            break
    assert by_name(driver.nodes())[busy].display_state == "drained"
    # No new job lands on a drained node.
    clock.advance(hours=6)
    assert all(busy not in j.node_names for j in driver.jobs() if j.state == "RUNNING")


def test_drain_twice_succeeds_and_resume_returns_the_node(make_simulator):
    driver = make_simulator()
    driver.drain(["gpu001", "gpu002"], "first")
    driver.drain(["gpu001"], "second")
    assert by_name(driver.nodes())["gpu001"].reason == "second"
    driver.resume(["gpu001", "gpu002"])
    states = by_name(driver.nodes())
    assert states["gpu001"].display_state == states["gpu002"].display_state == "idle"
    assert states["gpu001"].reason == ""
    driver.resume(["gpu001"])  # resuming an idle node succeeds


def test_unknown_nodes_and_empty_reasons_are_rejected_and_change_nothing(make_simulator):
    driver = make_simulator()
    with pytest.raises(SlurmRejected, match="gpu999"):
        driver.drain(["gpu001", "gpu999"], "x")
    assert by_name(driver.nodes())["gpu001"].display_state == "idle"
    with pytest.raises(SlurmRejected):
        driver.drain(["gpu001"], "  ")
    with pytest.raises(SlurmRejected, match="nosuch"):
        driver.resume(["nosuch"])


def test_a_node_that_stops_answering_is_down_and_its_job_fails(make_simulator, clock):
    driver = make_simulator(nodes=2, mean_arrival_seconds=60)
    job = start_one_job(driver, clock)
    driver.fail_node(job.node_names[0])
    state = by_name(driver.nodes())[job.node_names[0]]
    assert state.display_state == "down" and state.is_unhealthy
    assert "NOT_RESPONDING" in state.flags
    ended = driver.accounting(since=clock.now - timedelta(days=1))
    assert [(j.job_id, j.state) for j in ended if j.job_id == job.job_id] == [
        (job.job_id, "NODE_FAIL")
    ]
    with pytest.raises(SlurmRejected, match="Invalid node state"):
        driver.resume([job.node_names[0]])
    driver.recover_node(job.node_names[0])
    assert by_name(driver.nodes())[job.node_names[0]].display_state in ("idle", "allocated")


def test_state_is_shared_between_driver_instances(make_simulator, clock):
    """Two instances stand for the web process and a worker: one drains, the other sees it."""
    worker, web = make_simulator(), make_simulator()
    worker.drain(["gpu007"], "shared")
    assert by_name(web.nodes())["gpu007"].display_state == "drained"


def test_controller_down_raises_unavailable_until_it_is_back(make_simulator):
    driver = make_simulator()
    driver.set_controller_up(False)
    with pytest.raises(SlurmUnavailable):
        driver.drain(["gpu001"], "x")
    driver.set_controller_up(True)
    driver.drain(["gpu001"], "x")


def test_nodes_come_from_the_inventory_or_the_default_hundred(db, clock):
    from inventory.models import Node

    driver = SimulatorDriver(cluster="fallback", clock=clock, history_hours=0)
    assert [s.name for s in driver.nodes()] == list(FALLBACK_NODE_NAMES)
    Node.objects.create(hostname="gpu101")
    names = [s.name for s in SimulatorDriver(cluster="inventory", clock=clock).nodes()]
    assert names == ["gpu101"]


def test_the_same_seed_gives_the_same_cluster(db, clock):
    first = SimulatorDriver(cluster="a", clock=clock, history_hours=24, seed=5)
    second = SimulatorDriver(cluster="b", clock=clock, history_hours=24, seed=5)
    other = SimulatorDriver(cluster="c", clock=clock, history_hours=24, seed=6)
    since = clock.now - timedelta(days=2)
    assert first.jobs() == second.jobs()
    assert first.accounting(since) == second.accounting(since)
    assert first.accounting(since) != other.accounting(since)


def test_job_mix_follows_the_paper():
    """Observation 2 (sizes), Observation 1 (end states, GPU time), Observation 4 (tail)."""
    jobs = [generate_job(11, index, DEFAULT_ACCOUNTS) for index in range(20000)]
    buckets = Counter(size_bucket(job["node_count"]) for job in jobs)
    share = {label: count / len(jobs) for label, count in buckets.items()}
    assert 0.75 <= share["1"] <= 0.79
    assert 0.84 <= share["1"] + share["2"] + share["3-4"] <= 0.89
    assert 0.025 <= share["17-32"] + share["33-64"] <= 0.045
    gpu_time = Counter()
    for job in jobs:
        gpu_time[job["final_state"]] += job["runtime"] * job["gpus"]
    total = sum(gpu_time.values())
    states = Counter(job["final_state"] for job in jobs)
    assert 0.15 <= states["FAILED"] / len(jobs) <= 0.19
    assert gpu_time["FAILED"] / total < 0.01
    assert gpu_time["CANCELLED"] / total > 0.6
    large = [job for job in jobs if 17 <= job["node_count"] <= 32]
    week = sum(job["runtime"] > 7 * 86400 for job in large) / len(large)
    assert 0.08 <= week <= 0.2


def test_simulated_accounting_keeps_the_mix_over_weeks():
    simulation = ClusterSimulation.new(
        node_names=[f"gpu{n:03d}" for n in range(1, 101)],
        seed=3,
        start=0.0,
        mean_arrival_seconds=2700,
        mean_failure_seconds=0,
        max_pending=40,
    )
    for day in range(1, 61):
        simulation.advance(day * 86400.0)
    finished = simulation.finished
    assert len(finished) > 1200
    single = sum(len(job["nodes"]) == 1 for job in finished) / len(finished)
    assert 0.7 <= single <= 0.84
    assert {job["state"] for job in finished} >= {"COMPLETED", "CANCELLED", "FAILED"}
    # Nodes are never double-booked.
    busy = [name for job in simulation.running_jobs() for name in job["nodes"]]
    assert len(busy) == len(set(busy))


def test_a_rail_link_down_drains_its_node_like_a_health_check(make_simulator):
    """Shutting a leaf port takes the linked NIC's link down in the simulated cluster."""
    from inventory.models import NIC, Node, Pod, Switch, SwitchPort
    from inventory.services import cable_create

    pod = Pod.objects.create(name="p1")
    node = Node.objects.create(hostname="gpu002", pod=pod)
    nic = NIC.objects.create(node=node, device="mlx5_4", role=NIC.Role.RAIL, rail=3)
    leaf = Switch.objects.create(hostname="leaf-p1-r3", role="leaf", pod=pod, rail=3)
    port = SwitchPort.objects.create(
        switch=leaf, name="Ethernet8", speed_gbps=400, admin_status="up", oper_status="up"
    )
    cable_create(a=nic, b=port, type="800GBASE-2DR4", status="connected")
    driver = make_simulator(nodes=4)
    assert by_name(driver.nodes())["gpu002"].display_state == "idle"

    SwitchPort.objects.filter(pk=port.pk).update(admin_status="down", oper_status="down")
    drained = by_name(driver.nodes())["gpu002"]
    assert drained.display_state == "drained"
    assert drained.reason == "NHC: mlx5_4 (rail 3) link down at leaf-p1-r3 Ethernet8"
    assert by_name(driver.nodes())["gpu001"].display_state == "idle"

    # With the link back, a resume returns the node.
    SwitchPort.objects.filter(pk=port.pk).update(admin_status="up", oper_status="up")
    driver.resume(["gpu002"])
    assert by_name(driver.nodes())["gpu002"].display_state == "idle"

    # A node an operator drained keeps the operator's reason when its link then goes down.
    driver.drain(["gpu002"], "FT-7 NVLink check")
    SwitchPort.objects.filter(pk=port.pk).update(oper_status="down")
    assert by_name(driver.nodes())["gpu002"].reason == "FT-7 NVLink check"
