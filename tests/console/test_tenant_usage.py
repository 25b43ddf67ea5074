"""The tenant page's jobs, GPU-hours per day and user against the allocations' capacity, open
faults on the tenant's nodes and the usage CSV; another tenant's rows never show."""

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from console.usage import tenant_open_faults, tenant_usage
from faults.models import FaultTicket
from faults.workflow import Status
from inventory.models import Allocation, Node
from jobs.models import Job
from portal.models import Role

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)  # the usage period: 2026-02-14 00:00 to NOW


def job(job_id, tenant, *, user, gpus, start, hours=None, state="COMPLETED", name="train"):
    """A finished job of `hours` (GPU-seconds as accounting stores them) or a live one."""
    finished = hours is not None
    elapsed = int(hours * 3600) if finished else None
    return Job.objects.create(
        job_id=job_id,
        name=name,
        user=user,
        account=tenant.slurm_account,
        tenant=tenant,
        state=state,
        gpus=gpus,
        node_count=max(1, gpus // 8),
        submit_time=start - timedelta(minutes=5) if start else timezone.now(),
        start_time=start,
        end_time=start + timedelta(seconds=elapsed) if finished else None,
        elapsed_seconds=elapsed,
        gpu_seconds=elapsed * gpus if finished else None,
        source=Job.Source.SACCT if finished else Job.Source.SQUEUE,
    )


@pytest.fixture
def nodes(db):
    return {n: Node.objects.create(hostname=f"gpu{n:03d}", slurm_state="idle") for n in range(1, 7)}


def allocate(tenant, node_list, start, end=None) -> Allocation:
    allocation = Allocation.objects.create(tenant=tenant, start=start, end=end)
    allocation.nodes.set(node_list)
    return allocation


@pytest.fixture
def march(nodes, tenant_a, tenant_b):
    """Tenant A holds gpu001-002 from 03-14 00:00 (open-ended); tenant B gpu005-006."""
    allocate(tenant_a, [nodes[1], nodes[2]], datetime(2026, 3, 14, tzinfo=UTC))
    allocate(tenant_b, [nodes[5], nodes[6]], datetime(2026, 3, 1, tzinfo=UTC))
    # Tenant A. alice: 4 h x 8 GPUs across midnight (2 h on each day) ...
    job("101", tenant_a, user="alice", gpus=8, start=datetime(2026, 3, 14, 22, tzinfo=UTC), hours=4)
    # ... and a running 16-GPU job since 10:00 (2 h up to NOW).
    job(
        "102",
        tenant_a,
        user="alice",
        gpus=16,
        start=datetime(2026, 3, 15, 10, tzinfo=UTC),
        state="RUNNING",
    )
    job("103", tenant_a, user="bob", gpus=4, start=datetime(2026, 3, 15, 1, tzinfo=UTC), hours=1.5)
    # dave's job began 2 h before the period: only its last hour counts.
    job("104", tenant_a, user="dave", gpus=8, start=datetime(2026, 2, 13, 22, tzinfo=UTC), hours=3)
    job("105", tenant_a, user="erin", gpus=8, start=datetime(2026, 1, 5, tzinfo=UTC), hours=5)
    job("106", tenant_a, user="frank", gpus=0, start=datetime(2026, 3, 15, 2, tzinfo=UTC), hours=1)
    # Tenant B: must never count for A.
    job("201", tenant_b, user="carol", gpus=64, start=datetime(2026, 3, 15, 2, tzinfo=UTC), hours=5)


@pytest.mark.parametrize("role", [Role.OPERATOR, Role.TENANT_ADMIN])
def test_gpu_hours_per_day_and_user_are_exact_and_only_the_tenants(
    role, march, make_user, tenant_a
):
    usage = tenant_usage(user=make_user(role, tenant=tenant_a), tenant=tenant_a, now=NOW)

    assert usage.start == datetime(2026, 2, 14, tzinfo=UTC) and usage.end == NOW
    assert len(usage.days) == 30
    assert usage.rows() == [
        (datetime(2026, 2, 14).date(), "dave", 8.0),
        (datetime(2026, 3, 14).date(), "alice", 16.0),
        (datetime(2026, 3, 15).date(), "alice", 48.0),  # 2 h x 8 + 2 h x 16 (running)
        (datetime(2026, 3, 15).date(), "bob", 6.0),
    ]
    assert usage.users == ["alice", "bob", "dave"]
    assert usage.used_seconds_by_user == {
        "alice": 64 * 3600,
        "bob": 6 * 3600,
        "dave": 8 * 3600,
    }
    assert usage.total_used_seconds == 78 * 3600
    # 2 nodes x 8 GPUs: 24 h on 03-14 and 12 h on 03-15 up to NOW.
    assert usage.capacity_seconds_by_day[datetime(2026, 3, 14).date()] == 384 * 3600
    assert usage.capacity_seconds_by_day[datetime(2026, 3, 15).date()] == 192 * 3600
    assert usage.total_capacity_seconds == 576 * 3600
    assert usage.utilisation_percent == pytest.approx(100 * 78 / 576)
    chart = usage.chart()
    assert chart["days"][-1] == "2026-03-15" and chart["capacity"][-2:] == [384.0, 192.0]
    assert [series["label"] for series in chart["users"]] == ["alice", "bob", "dave"]


def test_an_allocation_that_ended_counts_only_while_it_was_held(nodes, tenant_a, make_user):
    allocate(
        tenant_a,
        [nodes[3]],
        datetime(2026, 3, 10, 6, tzinfo=UTC),
        datetime(2026, 3, 10, 18, tzinfo=UTC),
    )
    usage = tenant_usage(user=make_user(Role.OPERATOR), tenant=tenant_a, now=NOW)

    assert usage.total_capacity_seconds == 12 * 8 * 3600
    assert usage.rows() == [] and usage.utilisation_percent == 0


def test_viewer_gets_no_tenant_private_usage(march, make_user, tenant_a):
    usage = tenant_usage(user=make_user(Role.VIEWER), tenant=tenant_a, now=NOW)

    assert usage.rows() == [] and usage.total_capacity_seconds == 0


def test_open_faults_are_counted_per_node_and_state_on_the_tenants_nodes_only(
    nodes, tenant_a, tenant_b, make_user
):
    allocate(tenant_a, [nodes[1], nodes[2]], timezone.now() - timedelta(days=1))
    allocate(tenant_b, [nodes[5]], timezone.now() - timedelta(days=1))

    def ticket(node, status, summary="Xid 79 on GPU SN1654322004211, PSU rail B"):
        FaultTicket.objects.create(
            node=node, status=status, summary=summary, detected_at=timezone.now()
        )

    ticket(nodes[1], Status.NEW)
    ticket(nodes[1], Status.NEW, summary="ECC on GPU 2")
    ticket(nodes[1], Status.AWAITING_VENDOR)
    ticket(nodes[2], Status.CLOSED)  # not open
    ticket(nodes[5], Status.NEW)  # tenant B's node
    ticket(nodes[4], Status.TRIAGED)  # nobody's node

    summary = tenant_open_faults(
        user=make_user(Role.TENANT_ADMIN, tenant=tenant_a), tenant=tenant_a
    )

    assert [(row.hostname, row.status_label, row.count) for row in summary] == [
        ("gpu001", "Awaiting vendor", 1),
        ("gpu001", "New", 2),
    ]

    client = Client()
    client.force_login(make_user(Role.TENANT_ADMIN, tenant=tenant_a))
    page = client.get(f"/tenants/{tenant_a.slug}/").content.decode()
    faults_table = page.split('id="node-faults"')[1].split("</table>")[0]
    assert "gpu001" in faults_table and "Awaiting vendor" in faults_table
    assert "gpu005" not in faults_table and "gpu004" not in faults_table
    # Internal detail (summaries, serials) stays with the operators.
    assert "SN1654322004211" not in page and "ECC on GPU 2" not in page


# --- the page and the CSV, on real "now" ----------------------------------------------------


@pytest.fixture
def yesterday_jobs(nodes, tenant_a, tenant_b):
    midnight = timezone.now().astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    yesterday = midnight - timedelta(days=1)
    allocate(tenant_a, [nodes[1]], yesterday - timedelta(days=2))
    job(
        "301",
        tenant_a,
        user="alice",
        gpus=8,
        start=yesterday + timedelta(hours=10),
        hours=2,
        name="a-pretrain",
    )
    job(
        "302",
        tenant_a,
        user="bob",
        gpus=4,
        start=yesterday + timedelta(hours=12),
        hours=1,
        name="a-eval",
        state="FAILED",
    )
    job("303", tenant_a, user="alice", gpus=16, start=None, state="PENDING", name="a-queued")
    job(
        "401",
        tenant_b,
        user="carol",
        gpus=8,
        start=yesterday + timedelta(hours=8),
        hours=5,
        name="b-secret-run",
    )
    job("402", tenant_b, user="carol", gpus=8, start=None, state="PENDING", name="b-secret-wait")
    return yesterday.date()


def login(make_user, role, tenant=None) -> Client:
    client = Client()
    client.force_login(make_user(role, tenant=tenant))
    return client


@pytest.mark.parametrize("role", [Role.OPERATOR, Role.TENANT_ADMIN])
def test_page_lists_the_tenants_jobs_and_usage_and_nothing_of_others(
    role, yesterday_jobs, make_user, tenant_a
):
    response = login(make_user, role, tenant_a).get(f"/tenants/{tenant_a.slug}/")

    assert response.status_code == 200
    page = response.content.decode()
    running = page.split('id="running-jobs"')[1].split("</table>")[0]
    past = page.split('id="past-jobs"')[1].split("</table>")[0]
    assert "a-queued" in running and "a-pretrain" not in running
    assert "a-pretrain" in past and "a-eval" in past and "FAILED" in past
    assert "b-secret" not in page and "carol" not in page
    by_user = page.split('id="usage-by-user"')[1].split("</table>")[0]
    assert '<td>alice</td><td class="num">16.00</td>' in by_user
    assert '<td>bob</td><td class="num">4.00</td>' in by_user
    totals = page.split('id="usage-totals"')[1].split("</dl>")[0]
    assert "<dd>20.00</dd>" in totals
    assert 'id="usage-chart-data"' in page and "vendor/uplot/uPlot.iife.min.js" in page


def test_usage_csv_is_per_day_and_user_for_the_tenant_only(yesterday_jobs, make_user, tenant_a):
    response = login(make_user, Role.TENANT_ADMIN, tenant_a).get(
        f"/tenants/{tenant_a.slug}/usage.csv"
    )

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv"
    assert 'filename="tenant-a-gpu-usage.csv"' in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    day = yesterday_jobs.isoformat()
    assert rows == [
        ["date", "tenant", "user", "gpu_hours"],
        [day, "tenant-a", "alice", "16.00"],
        [day, "tenant-a", "bob", "4.00"],
    ]


def test_tenant_admin_gets_404_for_another_tenants_page_and_csv(
    yesterday_jobs, make_user, tenant_a, tenant_b
):
    client = login(make_user, Role.TENANT_ADMIN, tenant_a)

    for url in (f"/tenants/{tenant_b.slug}/", f"/tenants/{tenant_b.slug}/usage.csv"):
        response = client.get(url)
        assert response.status_code == 404, url
        assert b"carol" not in response.content and b"b-secret" not in response.content


def test_operator_sees_the_other_tenants_usage_on_its_own_page(yesterday_jobs, make_user, tenant_b):
    response = login(make_user, Role.OPERATOR).get(f"/tenants/{tenant_b.slug}/usage.csv")

    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[1:] == [[yesterday_jobs.isoformat(), "tenant-b", "carol", "40.00"]]


@pytest.mark.browser
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_usage_chart_draws_in_chromium_with_the_tenants_users(
    portal_server, browser_page, yesterday_jobs, make_user, tenant_a
):
    from tests.conftest import ARTIFACTS
    from tests.portal.test_browser_live import log_in

    errors: list[str] = []
    page = browser_page
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, portal_server, make_user(Role.TENANT_ADMIN, tenant=tenant_a).username)
    page.goto(f"{portal_server.url}/tenants/{tenant_a.slug}/")

    page.wait_for_selector("#usage-chart canvas", timeout=15_000)
    legend = page.locator("#usage-chart .u-legend").inner_text()
    assert "alice" in legend and "bob" in legend and "allocated" in legend
    assert "carol" not in legend
    assert errors == []
    page.screenshot(path=str(ARTIFACTS / "tenant-usage.png"), full_page=True)
