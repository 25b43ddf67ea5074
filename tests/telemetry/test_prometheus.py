"""Against a REAL Prometheus 2.42 and Alertmanager 0.25 (Debian packages, scripts/telemetry-up)
scraping the simulated nodes' dcgm-exporter and node_exporter pages: the exporter format, the
telemetry driver's contract, Observation 3 and the other reads over the portal's jobs, the API's
role scoping, and the alert chain XID / link down -> Alertmanager -> webhook -> ticket -> drain.

One module-scoped site serves every test. Its jobs run for the whole module; most have pinned
utilisation (job-profiles.json) so the expected figures are known by hand, one is simulated and
checked against Prometheus's raw samples.
"""

from __future__ import annotations

import time
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from faults.models import FaultTicket
from jobs.hooks import notify_jobs_accounted
from jobs.models import Job
from portal.models import Action, Role
from portal.services.accounts import api_token_create, user_create
from telemetry.drivers.base import TelemetryUnavailable, get_telemetry_driver
from telemetry.drivers.prometheus import PrometheusDriver
from tests.faults.conftest import build_fleet
from tests.support import free_port, wait_for
from tests.telemetry.site import HOSTNAMES, TelemetrySite, gpu_uuid

ALL_GPUS = list(range(8))
# job id -> (hosts, GPU indexes on each, pinned percent or None for simulated)
JOBS = {
    "9001": (("gpu001",), ALL_GPUS, 10.0),
    "9002": (("gpu002", "gpu003"), ALL_GPUS, 95.0),
    "9005": (("gpu004",), [0, 1, 2, 3], 30.0),
    "9003": (("gpu004",), [4, 5, 6, 7], None),
}


# One worker runs this module: its module-scoped site (Prometheus, Alertmanager, exporters) was
# otherwise started once per xdist worker, at the same time, and one Alertmanager exited during
# start in a full run.
pytestmark = pytest.mark.xdist_group("telemetry-site")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    # Not on live_server: pytest-django would make every test here transactional (a flush each).
    site = TelemetrySite(tmp_path_factory.mktemp("telemetry"))
    site.start()
    assignments: dict = {}
    for job_id, (hosts, gpus, _) in JOBS.items():
        for host in hosts:
            for index in gpus:
                assignments.setdefault(host, {})[index] = [job_id]
    site.run_jobs(
        assignments, {job_id: pinned for job_id, (_, _, pinned) in JOBS.items() if pinned}
    )
    site.wait_for_samples(list(JOBS), minimum=3)
    yield site
    site.stop()


@pytest.fixture
def prometheus(site, settings):
    settings.PROMETHEUS_URL = site.prometheus_url
    settings.TELEMETRY_STEP_SECONDS = 1.0
    return site


# --- the exporters and the scrape -----------------------------------------------------------------


def test_the_simulated_dcgm_exporter_speaks_dcgm_exporters_format(site):
    with urllib.request.urlopen(f"{site.exporter_url}/dcgm/gpu001/metrics") as response:
        text = response.read().decode()
    assert text.startswith(
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    )
    families = {family.name: family for family in text_string_to_metric_families(text)}
    assert {
        "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_XID_ERRORS",
    } <= set(families)
    assert families["DCGM_FI_DEV_XID_ERRORS"].documentation == (
        "Value of the last XID error encountered."
    )
    utilisation = families["DCGM_FI_DEV_GPU_UTIL"].samples
    assert len(utilisation) == 8
    first = utilisation[0]
    assert set(first.labels) == {
        "gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "hpc_job"
    }
    assert first.labels["UUID"] == gpu_uuid(1, int(first.labels["gpu"]))
    labels = (first.labels["Hostname"], first.labels["hpc_job"])
    assert (labels, first.value) == (("gpu001", "9001"), 10)


def test_prometheus_scrapes_every_node_through_file_service_discovery(site):
    up = {(row["metric"]["job"], row["metric"]["instance"]): row["value"][1]
          for row in site.query("up")}
    assert up == {(job, host): "1" for job in ("dcgm", "node") for host in HOSTNAMES}


# --- the driver's contract ------------------------------------------------------------------------


def test_job_summaries_give_each_jobs_mean_and_share_below_20_percent(prometheus):
    driver = get_telemetry_driver()
    end = datetime.now(tz=UTC)
    summaries = driver.job_summaries(end - timedelta(hours=1), end)
    assert (summaries["9001"].mean_percent, summaries["9001"].low_share) == (10.0, 1.0)
    assert (summaries["9002"].mean_percent, summaries["9002"].low_share) == (95.0, 0.0)
    assert (summaries["9005"].mean_percent, summaries["9005"].low_share) == (30.0, 0.0)
    assert {job: summaries[job].gpus for job in ("9001", "9002", "9005")} == {
        "9001": 8, "9002": 16, "9005": 4,
    }
    # The simulated job, against Prometheus's raw samples over the same range.
    raw = prometheus.query('DCGM_FI_DEV_GPU_UTIL{hpc_job="9003"}[3600s]', at=end.timestamp())
    per_gpu = [[float(value) for _, value in series["values"]] for series in raw]
    assert len(per_gpu) == 4
    expected_mean = sum(sum(values) / len(values) for values in per_gpu) / len(per_gpu)
    assert summaries["9003"].mean_percent == pytest.approx(expected_mean)
    samples = [value for values in per_gpu for value in values]
    expected_low = sum(value < 20 for value in samples) / len(samples)
    # The share comes from a 1 s subquery, the raw samples from 1 s scrapes: nearly the same.
    assert summaries["9003"].low_share == pytest.approx(expected_low, abs=0.2)
    only = driver.job_summaries(end - timedelta(hours=1), end, job_ids=["9001", "9.*"])
    assert set(only) == {"9001"}  # ids are matched literally, not as patterns


def test_job_series_is_the_mean_over_the_jobs_gpus(prometheus):
    end = datetime.now(tz=UTC)
    points = get_telemetry_driver().job_series("9002", end - timedelta(seconds=20), end, 1)
    assert len(points) >= 3
    assert {point.mean_percent for point in points} == {95.0}
    # Its two nodes are scraped at different moments: by now both have reported.
    assert points[-1].gpus == 16


def test_gpus_in_jobs_name_each_gpu(prometheus):
    gpus = get_telemetry_driver().gpus_in_jobs(60)
    found = {(gpu.job_id, gpu.hostname, gpu.gpu_index, gpu.uuid) for gpu in gpus}
    expected = {
        (job_id, host, index, gpu_uuid(HOSTNAMES.index(host) + 1, index))
        for job_id, (hosts, indexes, _) in JOBS.items()
        for host in hosts
        for index in indexes
    }
    assert found == expected


def test_an_unreachable_prometheus_is_unavailable_not_empty():
    driver = PrometheusDriver(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(TelemetryUnavailable, match="unreachable"):
        driver.ping()
    with pytest.raises(TelemetryUnavailable):
        driver.gpus_in_jobs(60)


# --- the portal's reads over its jobs -------------------------------------------------------------


def _job(job_id, tenant, *, state="COMPLETED", node_count=1, gpus=8, hours=1.0):
    now = datetime.now(tz=UTC)
    finished = state != "RUNNING"
    job = Job.objects.create(
        job_id=job_id, user=f"user-{job_id}", account=tenant.slurm_account, tenant=tenant,
        state=state, source=Job.Source.SACCT if finished else Job.Source.SQUEUE,
        submit_time=now - timedelta(hours=hours, minutes=1),
        start_time=now - timedelta(hours=hours),
        end_time=now if finished else None,
        elapsed_seconds=int(hours * 3600) if finished else None,
        gpu_seconds=int(hours * 3600) * gpus if finished else None,
        node_count=node_count, gpus=gpus,
    )
    notify_jobs_accounted([job.pk])  # as the accounting import does
    return job


def test_observation3_per_size_bucket_over_finished_gpu_jobs(
    prometheus, api_as, tenant_a, tenant_b
):
    _job("9001", tenant_a, gpus=8, hours=1.0)  # 10%: all of its GPU time below 20%
    _job("9005", tenant_a, gpus=4, hours=0.5)  # 30%: none below 20%
    _job("9006", tenant_a, gpus=8)  # no samples in Prometheus: counted, not measured
    _job("9007", tenant_a, gpus=0)  # CPU-only: not a GPU job at all
    _job("9002", tenant_b, node_count=2, gpus=16, hours=2.0)  # 95%
    _job("9003", tenant_b, state="RUNNING", gpus=4)  # still running: not in a finished view

    answer = api_as(Role.OPERATOR).get("/api/telemetry/observation3/").json()
    assert (answer["configured"], answer["available"]) == (True, True)
    assert (answer["jobs"], answer["jobs_with_telemetry"]) == (4, 3)
    rows = {row["bucket"]: row for row in answer["rows"]}
    one = rows["1"]
    assert (one["jobs"], one["jobs_with_telemetry"]) == (3, 2)
    assert one["median_mean_percent"] == 10.0  # percentile_disc(0.5) of [10, 30]
    # GPU time below 20%: 9001's 8 GPU-hours of 8 + 2 GPU-hours.
    assert one["low_gpu_time_percent"] == 80.0
    assert [point["value"] for point in one["mean_percent_cdf"]][0::10] == [10.0, 30.0]
    assert (rows["2"]["median_mean_percent"], rows["2"]["low_gpu_time_percent"]) == (95.0, 0.0)
    assert (rows["3-4"]["jobs"], rows["3-4"]["median_mean_percent"]) == (0, None)

    # A tenant admin's view is their own tenant's jobs only, whatever ?tenant= says.
    own = api_as(Role.TENANT_ADMIN, tenant=tenant_b).get(
        "/api/telemetry/observation3/?tenant=tenant-a"
    ).json()
    assert (own["jobs"], own["jobs_with_telemetry"]) == (1, 1)
    assert {row["bucket"] for row in own["rows"] if row["jobs"]} == {"2"}


def test_idle_gpus_in_running_jobs_scoped_by_role(prometheus, api_as, tenant_a, tenant_b):
    _job("9001", tenant_a, state="RUNNING", gpus=8)
    _job("9002", tenant_b, state="RUNNING", node_count=2, gpus=16)
    _job("9005", tenant_a, state="RUNNING", gpus=4)

    answer = api_as(Role.OPERATOR).get("/api/telemetry/idle-gpus/").json()
    assert (answer["idle_gpu_count"], answer["reporting_gpu_count"]) == (8, 28)
    assert [row["job_id"] for row in answer["jobs"]] == ["9001"]
    assert [(gpu["hostname"], gpu["gpu_index"], gpu["mean_percent"])
            for gpu in answer["jobs"][0]["idle_gpus"]] == [("gpu001", i, 10.0) for i in ALL_GPUS]

    tenant_view = api_as(Role.TENANT_ADMIN, tenant=tenant_b).get("/api/telemetry/idle-gpus/")
    assert (tenant_view.json()["reporting_gpu_count"], tenant_view.json()["jobs"]) == (16, [])


def test_job_utilisation_of_own_jobs_only(prometheus, api_as, tenant_a, tenant_b):
    _job("9001", tenant_a, state="RUNNING", gpus=8)
    _job("9002", tenant_b, state="RUNNING", node_count=2, gpus=16)
    tenant_admin = api_as(Role.TENANT_ADMIN, tenant=tenant_a)

    own = tenant_admin.get("/api/telemetry/jobs/9001/utilisation/").json()
    figures = (own["mean_percent"], own["low_share_percent"], own["gpus_reporting"])
    assert figures == (10.0, 100.0, 8)
    assert own["points"] and {point["mean_percent"] for point in own["points"]} == {10.0}
    assert tenant_admin.get("/api/telemetry/jobs/9002/utilisation/").status_code == 404


def test_pages_show_the_figures(prometheus, make_user, tenant_a):
    from django.test import Client

    _job("9001", tenant_a, gpus=8)
    _job("9002", tenant_a, state="RUNNING", node_count=2, gpus=16)
    client = Client()
    client.force_login(make_user(Role.TENANT_ADMIN, tenant=tenant_a))
    job_page = client.get("/jobs/9001/").content.decode()
    assert "<dt>Mean utilisation</dt><dd>10.0%</dd>" in job_page
    assert 'id="telemetry-job-series"' in job_page
    analytics = client.get("/jobs/analytics/").content.decode()
    assert "1 of 1 jobs have GPU samples" in analytics
    assert ('<tr data-bucket="1"><td>1</td><td class="num">1</td><td class="num">1</td>'
            '<td class="num">10.0</td><td class="num">100.0</td></tr>') in analytics
    tenant_page = client.get(f"/tenants/{tenant_a.slug}/").content.decode()
    # 8 GPU-hours at 10% and 16 (so far) at 95%.
    panel = tenant_page[tenant_page.index('id="tenant-efficiency"'):]
    assert f"<dd>{(10 * 8 + 95 * 16) / 24:.1f}%</dd>" in panel[:1500]


def test_tenant_efficiency_weights_jobs_by_gpu_time(prometheus, make_user, tenant_a):
    from telemetry.selectors import tenant_efficiency

    _job("9001", tenant_a, state="RUNNING", gpus=8)  # 10% on 8 GPUs
    _job("9005", tenant_a, state="RUNNING", gpus=4)  # 30% on 4 GPUs
    now = datetime.now(tz=UTC)
    answer = tenant_efficiency(
        user=make_user(Role.TENANT_ADMIN, tenant=tenant_a), tenant=tenant_a,
        start=now - timedelta(days=7), end=now,
    )
    assert answer["mean_percent"] == round((10 * 8 + 30 * 4) / 12, 1)
    assert answer["low_gpu_time_percent"] == round(100 * 8 / 12, 1)
    assert (answer["jobs"], answer["jobs_with_telemetry"]) == (2, 2)


# --- alerts: the real Prometheus rules and Alertmanager into the portal's webhook -----------------


@pytest.mark.django_db(transaction=True)
def test_xid_and_link_down_alerts_reach_tickets_and_drain_actions(site, live_server):
    site.point_webhook_at(f"{live_server.url}/api/faults/alertmanager/")
    build_fleet()  # gpu001 and gpu002 with the exporter's GPU UUIDs, NICs mlx5_0 and mlx5_1
    receiver = user_create(username="alertmanager", role=Role.ONCALL)
    _, key = api_token_create(user=receiver, name="Alertmanager webhook")
    site.token_file.write_text(key)
    started = time.monotonic()
    site.inject_faults(xid={"gpu001/3": 79}, link_down=["gpu002/mlx5_1"])
    try:
        xid_ticket = wait_for(
            lambda: FaultTicket.objects.filter(node__hostname="gpu001", gpu__index=3).first(),
            timeout=20, message="a ticket for the XID 79 on gpu001 GPU 3",
        )
        link_ticket = wait_for(
            lambda: FaultTicket.objects.filter(
                node__hostname="gpu002", nic__device="mlx5_1"
            ).first(),
            timeout=20, message="a ticket for mlx5_1 down on gpu002",
        )
    finally:
        site.inject_faults()
    elapsed = time.monotonic() - started
    assert (xid_ticket.category, xid_ticket.subtype, xid_ticket.severity) == (
        "gpu", "unresponsive", "critical"
    )
    assert "alertmanager" in xid_ticket.sources
    assert (link_ticket.category, link_ticket.subtype) == ("nic_transceiver", "transceiver")
    for ticket, node in ((xid_ticket, "gpu001"), (link_ticket, "gpu002")):
        drains = Action.objects.filter(fault_tickets=ticket, kind="slurm.drain")
        assert [action.target for action in drains] == [node]
    assert elapsed < 15
