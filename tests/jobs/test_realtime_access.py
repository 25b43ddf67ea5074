"""Who may follow node and job events, and what job events say (same rules as the API)."""

from __future__ import annotations

import json
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from inventory.models import Allocation, Node
from jobs.models import Job
from jobs.sync import sync_live_jobs
from portal.models import Role
from portal.realtime import can_subscribe
from tests.jobs.test_api import make_jobs
from tests.jobs.test_sync import published_after_commit


def test_node_groups_follow_node_visibility(make_user, tenant_a):
    mine, other = Node.objects.create(hostname="gpu001"), Node.objects.create(hostname="gpu002")
    allocation = Allocation.objects.create(tenant=tenant_a, start=timezone.now() - timedelta(1))
    allocation.nodes.add(mine)
    tenant_admin = make_user(Role.TENANT_ADMIN, tenant=tenant_a)
    assert can_subscribe(tenant_admin, f"node.{mine.pk}")
    assert not can_subscribe(tenant_admin, f"node.{other.pk}")
    viewer = make_user(Role.VIEWER)
    assert can_subscribe(viewer, f"node.{other.pk}")
    assert not can_subscribe(viewer, "node.999999")
    assert not can_subscribe(viewer, "node")


def test_job_groups_follow_job_visibility(make_user, tenant_a, tenant_b):
    mine = make_jobs(1, tenant=tenant_a)[0]
    theirs = make_jobs(1, tenant=tenant_b, account="tenant-b", start=5)[0]
    tenant_admin = make_user(Role.TENANT_ADMIN, tenant=tenant_a)
    assert can_subscribe(tenant_admin, "jobs")
    assert can_subscribe(tenant_admin, f"job.{mine.pk}")
    assert not can_subscribe(tenant_admin, f"job.{theirs.pk}")
    viewer = make_user(Role.VIEWER)
    assert not can_subscribe(viewer, "jobs")
    assert not can_subscribe(viewer, f"job.{mine.pk}")
    oncall = make_user(Role.ONCALL)
    assert can_subscribe(oncall, "jobs") and can_subscribe(oncall, f"job.{theirs.pk}")


def test_new_jobs_are_published_to_their_tenant_after_commit(
    db, make_simulator, clock, tenant_a, django_capture_on_commit_callbacks
):
    driver = make_simulator(nodes=4, mean_arrival_seconds=60)
    for _ in range(120):
        clock.advance(minutes=1)
        if any(job.account == "tenant-a" for job in driver.jobs()):
            break
    listed = driver.jobs()
    messages = published_after_commit(
        ["jobs"] * len(listed), lambda: sync_live_jobs(driver=driver),
        django_capture_on_commit_callbacks,
    )
    by_job = {json.loads(m["payload"])["job_id"]: m for m in messages}
    assert set(by_job) == {job.job_id for job in listed}
    for slurm_job in listed:
        message = by_job[slurm_job.job_id]
        expected = [tenant_a.pk] if slurm_job.account == "tenant-a" else []
        assert message["tenant_ids"] == expected
        assert message["event"] in ("job.started", "job.submitted")
    assert Job.objects.count() == len(listed)


def test_every_jobs_task_is_routed_and_scheduled():
    from portal.celery import app

    app.loader.import_default_modules()
    jobs_tasks = {name for name in app.tasks if name.startswith("jobs.tasks.")}
    assert jobs_tasks == {
        "jobs.tasks.sync_node_states", "jobs.tasks.sync_live_jobs", "jobs.tasks.import_accounting"
    }
    assert jobs_tasks <= set(settings.CELERY_TASK_ROUTES)
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert jobs_tasks <= scheduled
