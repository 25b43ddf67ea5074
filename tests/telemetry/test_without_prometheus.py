"""Telemetry without a Prometheus: every page and API answer says so, never zeros; an
unreachable one is named. Plus the pieces that need no server: the generated configuration
(checked by the real promtool and amtool), the HPC job mapping files, and the simulated
utilisation's shape (paper Observation 3)."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.test import Client

from jobs.models import Job
from portal.models import Role
from telemetry.exporter.metrics import read_state, render_dcgm, simulated_utilisation
from telemetry.job_mapping import running_job_assignments, write_job_mapping
from tests.faults.conftest import build_fleet
from tests.support import free_port

NOT_CONFIGURED = "No telemetry configured"


@pytest.fixture
def running_job(db, tenant_a):
    fleet = build_fleet()
    now = datetime.now(tz=UTC)
    job = Job.objects.create(
        job_id="7001", state="RUNNING", source=Job.Source.SQUEUE, tenant=tenant_a,
        account=tenant_a.slurm_account, submit_time=now - timedelta(hours=1),
        start_time=now - timedelta(hours=1), node_count=2, gpus=8,
    )
    job.nodes.set(fleet.nodes)
    return job


def _login(make_user, role, tenant=None) -> Client:
    client = Client()
    client.force_login(make_user(role, tenant=tenant))
    return client


@pytest.mark.parametrize("path", [
    "/api/telemetry/observation3/", "/api/telemetry/idle-gpus/",
    "/api/telemetry/jobs/7001/utilisation/",
])
def test_the_api_says_not_configured_with_null_figures(api_as, running_job, settings, path):
    settings.PROMETHEUS_URL = ""
    answer = api_as(Role.OPERATOR).get(path).json()
    assert (answer["configured"], answer["available"]) == (False, False)
    assert answer["message"].startswith(NOT_CONFIGURED)
    figures = ("jobs", "jobs_with_telemetry", "idle_gpu_count", "reporting_gpu_count",
               "mean_percent", "low_share_percent")
    present = [name for name in figures if name in answer and not isinstance(answer[name], list)]
    assert present and all(answer[name] is None for name in present)


def test_every_page_says_not_configured_instead_of_zeros(make_user, running_job, settings,
                                                         tenant_a):
    settings.PROMETHEUS_URL = ""
    operator = _login(make_user, Role.OPERATOR)
    for path in ("/jobs/7001/", "/jobs/analytics/", f"/tenants/{tenant_a.slug}/",
                 "/telemetry/idle-gpus/"):
        page = operator.get(path).content.decode()
        assert 'data-telemetry="not-configured"' in page, path
        assert "0.0%" not in page, path


def test_an_unreachable_prometheus_is_named_on_the_page_and_in_the_api(
    make_user, api_as, running_job, settings
):
    settings.PROMETHEUS_URL = f"http://127.0.0.1:{free_port()}"
    page = _login(make_user, Role.OPERATOR).get("/telemetry/idle-gpus/").content.decode()
    assert 'data-telemetry="unavailable"' in page and "Prometheus unreachable" in page
    answer = api_as(Role.OPERATOR).get("/api/telemetry/idle-gpus/").json()
    assert (answer["configured"], answer["available"], answer["jobs"]) == (True, False, [])
    assert answer["idle_gpu_count"] is None


def test_bad_period_is_a_400_naming_the_field(api_as, db):
    response = api_as(Role.OPERATOR).get("/api/telemetry/observation3/?since=yesterday")
    assert response.status_code == 400 and "since" in response.json()


def test_generated_configuration_passes_promtool_and_amtool(db, tmp_path):
    if not (shutil.which("promtool") and shutil.which("amtool")):
        pytest.fail("promtool/amtool missing: run scripts/telemetry-up --install-only")
    build_fleet()
    call_command("telemetry_config", "--dir", str(tmp_path), "--create-token")
    checked = subprocess.run(["promtool", "check", "config", str(tmp_path / "prometheus.yml")],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "2 rules found" in checked.stdout
    checked = subprocess.run(["amtool", "check-config", str(tmp_path / "alertmanager.yml")],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (tmp_path / "webhook-token").read_text().startswith("gop_")  # a portal API token
    spec = read_state(tmp_path)
    assert sorted(spec.nodes) == ["gpu001", "gpu002"]
    assert spec.nodes["gpu001"]["nics"] == ["mlx5_0", "mlx5_1"]


def test_job_mapping_files_follow_the_running_jobs(running_job, tmp_path):
    assignments = running_job_assignments()
    # 8 GPUs on 2 nodes: indexes 0-3 on each, as gres/gpu hands them out.
    assert assignments == {host: {i: ["7001"] for i in range(4)} for host in ("gpu001", "gpu002")}
    write_job_mapping(tmp_path, assignments, ["gpu001", "gpu002"])
    (tmp_path / "exporter-spec.json").write_text(
        '{"nodes": [{"hostname": "gpu001", "gpus": [{"index": 0, "uuid": "GPU-a"}, '
        '{"index": 5, "uuid": "GPU-b"}]}]}'
    )
    text = render_dcgm(read_state(tmp_path), "gpu001", now=0.0)
    assert 'gpu="0",UUID="GPU-a"' in text and 'hpc_job="7001"' in text
    assert 'DCGM_FI_DEV_GPU_UTIL{gpu="5",UUID="GPU-b",pci_bus_id="",device="nvidia5",' in text
    write_job_mapping(tmp_path, {}, ["gpu001", "gpu002"])  # the job ended: the epilog's part
    assert 'hpc_job="7001"' not in render_dcgm(read_state(tmp_path), "gpu001", now=0.0)


@pytest.mark.parametrize(("nodes", "low_share"), [(1, 0.72), (2, 0.72), (8, 0.35), (32, 0.02)])
def test_simulated_jobs_spend_time_below_20_percent_as_observation3_found(nodes, low_share):
    samples = [
        simulated_utilisation(f"job{job}", nodes, "gpu001/0", phase * 5.0)
        for job in range(40)
        for phase in range(100)
    ]
    measured = sum(value < 20 for value in samples) / len(samples)
    assert measured == pytest.approx(low_share, abs=0.05)
    assert all(0 <= value <= 100 for value in samples)


def test_demo_backfill_writes_blocks_prometheus_can_read(running_job, tmp_path):
    (tmp_path / "exporter-spec.json").write_text(
        '{"nodes": [{"hostname": "gpu001", "gpus": [{"index": 0, "uuid": "GPU-a"}]}, '
        '{"hostname": "gpu002", "gpus": []}]}'
    )
    call_command("telemetry_backfill", "--dir", str(tmp_path), "--days", "1", "--step", "60")
    listed = subprocess.run(["promtool", "tsdb", "list", str(tmp_path / "prometheus-data")],
                            capture_output=True, text=True, check=True).stdout
    # The running job started an hour ago: 4 GPUs on each of its 2 nodes, ~50 one-minute samples
    # up to ten minutes ago. Blocks are cut at 2-hour boundaries: count over all of them.
    blocks = [line.split() for line in listed.splitlines()[1:]]
    samples = sum(int(block[4]) for block in blocks)
    assert max(int(block[6]) for block in blocks) == 8
    assert 45 * 8 <= samples <= 51 * 8


def test_the_demos_backfill_reads_the_jobs_from_slurm_before_the_first_sync(db, tmp_path):
    """Issue 26: the demo's backfill ran before its web process had synced any job, and wrote
    "0 GPU series, 0 samples": the job charts and Observation 3 stayed empty."""
    from inventory.models import Node

    Node.objects.bulk_create(Node(hostname=f"gpu{number:03d}") for number in range(1, 17))
    spec = {"nodes": [{"hostname": f"gpu{number:03d}",
                       "gpus": [{"index": index, "uuid": f"GPU-{number}-{index}"}
                                for index in range(8)]} for number in range(1, 17)]}
    (tmp_path / "exporter-spec.json").write_text(json.dumps(spec))
    assert not Job.objects.exists()
    out = io.StringIO()
    call_command("telemetry_backfill", "--dir", str(tmp_path), "--days", "1", "--step", "600",
                 "--sync-jobs", stdout=out)
    assert Job.objects.filter(gpus__gt=0).exists()
    series = int(re.search(r"(\d+) GPU series", out.getvalue()).group(1))
    assert series > 0, out.getvalue()
