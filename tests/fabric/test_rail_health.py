"""Rail health (paper Observation 7): per-rail throughput of a job's nodes and imbalance
detection on a simulated degraded leaf."""

from __future__ import annotations

import pytest

from fabric.hooks import register_fabric_finding_listener, unregister_fabric_finding_listener
from fabric.rail_health import (
    detect_rail_imbalance,
    low_rails,
    rail_ports_for_nodes,
    rail_throughput_for_nodes,
    report_rail_imbalance,
)
from inventory.models import Node
from tests.fabric.monitoring_support import poll_every_minute

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: fleets and the emulated fabric
pytestmark = pytest.mark.django_db

POD1_LEAFS = [f"leaf-p1-r{rail}" for rail in range(8)]


@pytest.fixture
def job_nodes(small_fleet):
    return list(Node.objects.filter(hostname__in=["gpu001", "gpu002", "gpu003", "gpu004"]))


@pytest.fixture
def heard():
    findings = []
    register_fabric_finding_listener(findings.append)
    yield findings
    unregister_fabric_finding_listener(findings.append)


def load_rails(emulated, degraded: dict[str, float]) -> None:
    """Every pod-1 leaf at 38 % of line rate (the paper's Job B: 18.9 of 50 GB/s per direction)
    except the degraded ones."""
    for leaf in POD1_LEAFS:
        emulated.scale_switch_traffic(leaf, degraded.get(leaf, 0.38))


def test_low_rails_compares_with_the_median_of_the_others():
    assert low_rails({0: 10, 1: 10, 2: 4, 3: 10}, 0.5) == {2}
    assert low_rails({0: 10, 1: 10, 2: 4, 3: 4, 4: 10, 5: 10, 6: 10, 7: 10}, 0.5) == {2, 3}
    assert low_rails({0: 0, 1: 0, 2: 0}, 0.5) == set()  # idle is not imbalanced


def test_rail_ports_follow_the_cables(job_nodes):
    ports = rail_ports_for_nodes(job_nodes)
    assert len(ports) == 32
    rail3 = [port for port in ports if port.rail == 3]
    assert {port.switch for port in rail3} == {"leaf-p1-r3"}
    assert {port.device for port in rail3} == {"mlx5_4"}  # Table 2: rail 3 is mlx5_4


def test_degraded_leaf_is_flagged_and_named(job_nodes, emulated, heard):
    # Paper Observation 7, Job B: six rails near 18.9 GB/s, two near 8.0 GB/s.
    load_rails(emulated, {"leaf-p1-r2": 0.16, "leaf-p1-r6": 0.16})
    poll_every_minute(emulated, 4, POD1_LEAFS)  # 3 samples with rates
    rails = {rail.rail: rail for rail in rail_throughput_for_nodes(job_nodes)}
    assert rails[2].leafs == ["leaf-p1-r2"] and rails[2].ports == 4
    assert 0.9 * 0.38 * 100e9 < rails[0].per_port_bytes_per_second < 1.1 * 0.38 * 100e9
    assert rails[2].per_port_bytes_per_second < 0.5 * rails[0].per_port_bytes_per_second

    verdict = detect_rail_imbalance(job_nodes, samples=3)
    assert verdict.imbalanced and verdict.imbalanced_rails == [2, 6]
    assert verdict.leafs == ["leaf-p1-r2", "leaf-p1-r6"]
    assert verdict.samples_used == 3 and len(verdict.series) == 3
    assert "leaf-p1-r2, leaf-p1-r6" in verdict.summary

    report_rail_imbalance(job_nodes, label="job 4242")
    assert len(heard) == 1
    finding = heard[0]
    assert finding.kind == "rail_imbalance" and finding.key == "rail_imbalance:job 4242:2,6"
    assert finding.switches == ("leaf-p1-r2", "leaf-p1-r6")
    assert set(finding.nodes) == {"gpu001", "gpu002", "gpu003", "gpu004"}


def test_a_dip_shorter_than_the_window_is_not_flagged(job_nodes, emulated, heard):
    load_rails(emulated, {})
    poll_every_minute(emulated, 3, POD1_LEAFS)
    load_rails(emulated, {"leaf-p1-r2": 0.1})
    poll_every_minute(emulated, 1, POD1_LEAFS)  # only the latest sample is low
    verdict = detect_rail_imbalance(job_nodes, samples=3)
    assert verdict.samples_used == 3 and not verdict.imbalanced
    assert report_rail_imbalance(job_nodes).imbalanced is False and heard == []


def test_too_little_history_gives_no_verdict(job_nodes, emulated):
    load_rails(emulated, {"leaf-p1-r2": 0.1})
    poll_every_minute(emulated, 2, POD1_LEAFS)  # one sample with rates
    verdict = detect_rail_imbalance(job_nodes, samples=3)
    assert verdict.samples_used == 1 and not verdict.imbalanced


def test_ratio_and_samples_come_from_settings(job_nodes, emulated, settings):
    settings.FABRIC_RAIL_IMBALANCE_SAMPLES = 2
    settings.FABRIC_RAIL_IMBALANCE_RATIO = 0.9
    load_rails(emulated, {"leaf-p1-r4": 0.3})  # 0.3 / 0.38 = 79 %: low only under 0.9
    poll_every_minute(emulated, 3, POD1_LEAFS)
    verdict = detect_rail_imbalance(job_nodes)
    assert verdict.samples_required == 2 and verdict.imbalanced_rails == [4]
