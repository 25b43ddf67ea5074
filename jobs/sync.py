"""Writes that mirror Slurm into the portal: node states, live jobs (squeue) and accounting
(sacct). Each reads the driver first, outside any transaction, then writes in one transaction
with a number of queries that does not grow with the cluster.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from inventory.hostlist import compress_hostlist
from inventory.models import Allocation, Node
from jobs import hooks
from jobs.drivers.base import FinishedJob, SlurmDriver, SlurmJob, SlurmNodeState, get_slurm_driver
from jobs.models import LIVE_STATES, RUNNING_STATES, Job, SyncWatermark
from portal.models import Tenant
from portal.realtime import publish

logger = logging.getLogger(__name__)

UNHEALTHY_STATES = frozenset({"down", "not_responding"})
DRAINED_STATES = frozenset({"drained", "draining"})
# Rebooting through Slurm (REBOOT_ISSUED) follows its drain: moving from draining to rebooting
# is no return to service, and coming back from it is one, as a resume after a drain is.
PLANNED_OUT_OF_SERVICE_STATES = DRAINED_STATES | {"rebooting"}
ACCOUNTING_WATERMARK = "accounting"
# Accounting is re-read this far behind the watermark: a record written late is still caught,
# and the import is idempotent, so reading a job twice costs nothing.
ACCOUNTING_OVERLAP = timedelta(minutes=5)
BATCH_SIZE = 1000
# Node states are written this many nodes per transaction. When every node changes at once (a
# first sync after an import, a controller that lost its nodes), one transaction held the row
# locks of all of them until the last event was sent: at scale 125 (12,500 nodes) an operator's
# bulk edit of 100 nodes waited 41.8 s behind it (bench/inventory_api.py).
NODE_SYNC_BATCH = 500
NODE_FAIL = "NODE_FAIL"  # sacct's state of a job ended by the failure of one of its nodes
# A first import reads days of history: only recent node failures are news worth a ticket.
NODE_FAIL_SIGNAL_WINDOW = timedelta(hours=1)


# -- node states -------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeStateChange:
    node_id: int
    hostname: str
    previous_state: str
    state: str
    reason: str
    previous_reason: str = ""


def sync_node_states(
    *, driver: SlurmDriver | None = None, names: Sequence[str] | None = None
) -> list[NodeStateChange]:
    """Copy Slurm's view of each node (state, reason) onto the inventory's Node rows.

    Only changed nodes are written; each change is published on "cluster" (marked private to
    the tenants holding the node) and on "node.<id>"; a node that turns down or not responding
    is handed to `jobs.hooks.notify_node_unhealthy` once per transition.
    """
    driver = driver or get_slurm_driver()
    slurm_nodes = {state.name: state for state in driver.nodes(names)}
    if not slurm_nodes:
        return []
    now = timezone.now()
    current = Node.objects.filter(hostname__in=list(slurm_nodes)).values_list(
        "pk", "hostname", "slurm_state", "slurm_reason", "slurm_reboot"
    )
    candidates = sorted(
        pk
        for pk, hostname, state, reason, reboot in current
        if _differs(slurm_nodes[hostname], state, reason, reboot)
    )
    changes: list[NodeStateChange] = []
    for start in range(0, len(candidates), NODE_SYNC_BATCH):
        changes += _apply_node_states(candidates[start:start + NODE_SYNC_BATCH], slurm_nodes, now)
    return changes


def _apply_node_states(
    candidates: list[int], slurm_nodes: dict[str, SlurmNodeState], now: datetime
) -> list[NodeStateChange]:
    """Write Slurm's state onto these nodes, in one transaction of their own."""
    with transaction.atomic():
        # Lock and re-read: two syncs racing must not both report (and notify) one transition.
        nodes = list(Node.objects.select_for_update().filter(pk__in=candidates).order_by("pk"))
        changes: list[NodeStateChange] = []
        changed_nodes: list[Node] = []
        for node in nodes:
            slurm = slurm_nodes[node.hostname]
            if not _differs(slurm, node.slurm_state, node.slurm_reason, node.slurm_reboot):
                continue
            previous, previous_reason = node.slurm_state, node.slurm_reason
            new_state = slurm.display_state
            if new_state != previous:
                node.slurm_state_changed_at = now
            node.slurm_state = new_state
            node.slurm_reason = slurm.reason
            node.slurm_reboot = slurm.reboot_state
            changed_nodes.append(node)
            changes.append(
                NodeStateChange(
                    node.pk, node.hostname, previous, new_state, slurm.reason, previous_reason
                )
            )
        Node.objects.bulk_update(
            changed_nodes,
            ["slurm_state", "slurm_reason", "slurm_reboot", "slurm_state_changed_at", "updated_at"],
        )
        tenants = _tenants_holding(changed_nodes, now)
        by_id = {node.pk: node for node in changed_nodes}
        # A fleet's dashboard draws pods and racks, not nodes: the event names the node's pod
        # and rack so the page moves that aggregate cell's counts (one query for all changes).
        places = {
            pk: (pod or "", rack or "")
            for pk, pod, rack in Node.objects.filter(pk__in=by_id).values_list(
                "pk", "pod__name", "rack__name"
            )
        }
        for change in changes:
            pod, rack = places.get(change.node_id, ("", ""))
            payload = {
                "id": change.node_id,
                "hostname": change.hostname,
                "pod": pod,
                "rack": rack,
                "state": change.state,
                "previous_state": change.previous_state,
                "reason": change.reason,
                "reboot": by_id[change.node_id].slurm_reboot,
                "changed_at": by_id[change.node_id].slurm_state_changed_at,
            }
            publish(
                "cluster",
                "node.state",
                payload,
                tenant_ids=tenants.get(change.node_id, []),
                tenant_private=False,  # cluster data; the tenants only scope what tenant admins see
            )
            publish(f"node.{change.node_id}", "node.state", payload)
            if change.state in UNHEALTHY_STATES and change.previous_state not in UNHEALTHY_STATES:
                hooks.notify_node_unhealthy(
                    node=by_id[change.node_id], state=change.state, reason=change.reason
                )
            _notify_signals(change, by_id[change.node_id])
    return changes


def _signalled(state: str, reason: str) -> bool:
    """Out of service because something said so: Slurm (DOWN, NOT_RESPONDING) or the node
    health check (a drain with its reason)."""
    return state in UNHEALTHY_STATES or (
        state in DRAINED_STATES and hooks.is_health_check_reason(reason)
    )


def _notify_signals(change: NodeStateChange, node: Node) -> None:
    """A health-check drain starting, or a node leaving a signalled state or a drain: told to
    the signal listeners (jobs/hooks.py), which open and close fault tickets."""
    was = _signalled(change.previous_state, change.previous_reason)
    now = _signalled(change.state, change.reason)
    health_drain = change.state in DRAINED_STATES and hooks.is_health_check_reason(change.reason)
    was_health_drain = change.previous_state in DRAINED_STATES and hooks.is_health_check_reason(
        change.previous_reason
    )
    # Back in service after any drain (a resume), as well as out of a signalled state.
    back = change.previous_state in PLANNED_OUT_OF_SERVICE_STATES and change.state not in (
        PLANNED_OUT_OF_SERVICE_STATES | UNHEALTHY_STATES
    )
    if health_drain and not was_health_drain:
        hooks.notify_slurm_signal(hooks.HealthCheckDrain(node=node, reason=change.reason))
    elif (was and not now) or back:
        hooks.notify_slurm_signal(hooks.NodeRecovered(
            node=node, previous_state=change.previous_state, state=change.state,
            previous_reason=change.previous_reason,
        ))


def _differs(slurm: SlurmNodeState, state: str, reason: str, reboot: str) -> bool:
    return (slurm.display_state, slurm.reason, slurm.reboot_state) != (state, reason, reboot)


def _tenants_holding(nodes: Iterable[Node], at: datetime) -> dict[int, list[int]]:
    rows = (
        Allocation.objects.current(at)
        .filter(nodes__in=[node.pk for node in nodes])
        .values_list("nodes", "tenant_id")
    )
    tenants: dict[int, list[int]] = defaultdict(list)
    for node_id, tenant_id in rows:
        tenants[node_id].append(tenant_id)
    return tenants


# -- jobs: shared helpers ----------------------------------------------------------------------


def _tenant_ids_by_account(accounts: Iterable[str]) -> dict[str, int]:
    return dict(
        Tenant.objects.filter(slurm_account__in=set(accounts)).values_list("slurm_account", "pk")
    )


def _node_ids_by_hostname(hostnames: Iterable[str]) -> dict[str, int]:
    return dict(Node.objects.filter(hostname__in=set(hostnames)).values_list("hostname", "pk"))


def _replace_job_nodes(node_names_by_job: dict[int, Sequence[str]]) -> None:
    """Set the nodes of many jobs in two statements (names unknown to the inventory are kept
    only in Job.nodelist)."""
    if not node_names_by_job:
        return
    through = Job.nodes.through
    node_ids = _node_ids_by_hostname(name for names in node_names_by_job.values() for name in names)
    through.objects.filter(job_id__in=list(node_names_by_job)).delete()
    through.objects.bulk_create(
        [
            through(job_id=job_pk, node_id=node_ids[name])
            for job_pk, names in node_names_by_job.items()
            for name in names
            if name in node_ids
        ],
        batch_size=BATCH_SIZE,
    )


def job_event_payload(job: Job) -> dict:
    return {
        "id": job.pk,
        "job_id": job.job_id,
        "name": job.name,
        "user": job.user,
        "account": job.account,
        "partition": job.partition,
        "state": job.state,
        "state_reason": job.state_reason,
        "node_count": job.node_count,
        "gpus": job.gpus,
        "nodelist": job.nodelist,
        "submit_time": job.submit_time,
        "start_time": job.start_time,
        "end_time": job.end_time,
        "exit_code": job.exit_code,
        "live": job.is_live,
    }


def publish_job(job: Job, event: str) -> None:
    """On "jobs" (private to the job's tenant, if any) and on "job.<id>"."""
    payload = job_event_payload(job)
    publish("jobs", event, payload, tenant_ids=[job.tenant_id] if job.tenant_id else [])
    publish(f"job.{job.pk}", event, payload)


# -- live jobs (squeue) ------------------------------------------------------------------------

LIVE_JOB_FIELDS = [
    "name",
    "user",
    "account",
    "partition",
    "state",
    "state_reason",
    "submit_time",
    "start_time",
    "time_limit_minutes",
    "gpus",
    "node_count",
    "nodelist",
    "tenant",
    "source",
    "left_queue_at",
    "observed_until",
    "updated_at",
]


@dataclass(frozen=True)
class LiveJobsResult:
    created: int
    updated: int
    left_queue: int


def sync_live_jobs(*, driver: SlurmDriver | None = None) -> LiveJobsResult:
    """Mirror squeue into Job rows. A job that left squeue keeps its last state with
    `left_queue_at` set; accounting later records how it ended."""
    driver = driver or get_slurm_driver()
    listed = {job.job_id: job for job in driver.jobs()}
    now = timezone.now()
    with transaction.atomic():
        existing = {
            job.job_id: job
            for job in Job.objects.select_for_update().filter(job_id__in=list(listed))
        }
        vanished = list(
            Job.objects.select_for_update()
            .filter(state__in=LIVE_STATES, left_queue_at__isnull=True)
            .exclude(job_id__in=list(listed))
        )
        tenant_ids = _tenant_ids_by_account(job.account for job in listed.values())
        to_create, to_update, node_changes, events, seen_again = [], [], {}, [], []
        for job_id, slurm in listed.items():
            job = existing.get(job_id)
            if job is not None and job.source == Job.Source.SACCT:
                if job.observed_until is not None:
                    # Running in an imported trace and still in squeue: counted up to now again.
                    job.observed_until, job.updated_at = None, now
                    seen_again.append(job)
                continue  # accounting already has the final word on this one
            created = job is None
            job = job or Job(job_id=job_id, source=Job.Source.SQUEUE)
            before = (job.state, job.nodelist, job.state_reason, job.left_queue_at)
            _apply_live(job, slurm, tenant_ids.get(slurm.account), now)
            if created:
                to_create.append(job)
                events.append((job, "job.submitted" if slurm.state == "PENDING" else "job.started"))
            elif before != (job.state, job.nodelist, job.state_reason, job.left_queue_at):
                to_update.append(job)
                event = "job.started" if before[0] != job.state == "RUNNING" else "job.updated"
                events.append((job, event))
            if created or before[1] != job.nodelist:
                node_changes[job_id] = slurm.node_names
        Job.objects.bulk_create(to_create, batch_size=BATCH_SIZE)
        for job in vanished:
            job.left_queue_at = now
            job.updated_at = now
            events.append((job, "job.left_queue"))
        Job.objects.bulk_update(to_update + vanished, LIVE_JOB_FIELDS, batch_size=BATCH_SIZE)
        Job.objects.bulk_update(seen_again, ["observed_until", "updated_at"],
                                batch_size=BATCH_SIZE)
        pks = {job.job_id: job.pk for job in to_create + to_update}
        _replace_job_nodes({pks[job_id]: names for job_id, names in node_changes.items()})
        for job, event in events:
            publish_job(job, event)
    return LiveJobsResult(len(to_create), len(to_update), len(vanished))


def _apply_live(job: Job, slurm: SlurmJob, tenant_id: int | None, now: datetime) -> None:
    job.name = slurm.name
    job.user = slurm.user
    job.account = slurm.account
    job.partition = slurm.partition
    job.state = slurm.state
    job.state_reason = slurm.state_reason
    job.submit_time = slurm.submit_time
    job.start_time = slurm.start_time
    job.time_limit_minutes = slurm.time_limit_minutes
    job.gpus = slurm.gpus
    job.node_count = slurm.node_count or len(slurm.node_names)
    job.nodelist = compress_hostlist(slurm.node_names) if slurm.node_names else ""
    job.tenant_id = tenant_id
    job.left_queue_at = None
    job.observed_until = None
    job.updated_at = now


# -- accounting (sacct) ------------------------------------------------------------------------

FINISHED_JOB_FIELDS = [
    "name",
    "user",
    "account",
    "partition",
    "state",
    "state_reason",
    "exit_code",
    "signal",
    "submit_time",
    "start_time",
    "end_time",
    "elapsed_seconds",
    "gpus",
    "node_count",
    "nodelist",
    "tenant",
    "gpu_seconds",
    "source",
    "observed_until",
    "updated_at",
]


@dataclass(frozen=True)
class ImportResult:
    created: int
    updated: int

    @property
    def total(self) -> int:
        return self.created + self.updated


def import_finished_jobs(finished: Sequence[FinishedJob]) -> ImportResult:
    """Record jobs that ended (from sacct) into Job, idempotently: a job read twice is
    written once, and a live row of the same job becomes its final record."""
    created = updated = 0
    for start in range(0, len(finished), BATCH_SIZE):
        batch = {job.job_id: job for job in finished[start : start + BATCH_SIZE]}
        result = _import_batch(batch)
        created += result.created
        updated += result.updated
    return ImportResult(created, updated)


def import_finished_job_stream(
    finished: Iterable[FinishedJob], *, taken_at: datetime | None = None
) -> ImportResult:
    """import_finished_jobs for a stream too long to hold: BATCH_SIZE jobs at a time. The
    caller wraps it in one transaction when all or nothing must be written. `taken_at`: when
    a trace was taken; its running jobs are counted up to then (`Job.observed_until`) until
    squeue lists them again."""
    created = updated = 0
    batch: dict[str, FinishedJob] = {}
    for job in finished:
        batch[job.job_id] = job
        if len(batch) == BATCH_SIZE:
            result = _import_batch(batch, taken_at)
            created, updated, batch = created + result.created, updated + result.updated, {}
    if batch:
        result = _import_batch(batch, taken_at)
        created, updated = created + result.created, updated + result.updated
    return ImportResult(created, updated)


def _import_batch(batch: dict[str, FinishedJob], taken_at: datetime | None = None) -> ImportResult:
    now = timezone.now()
    with transaction.atomic():
        existing = {
            job.job_id: job
            for job in Job.objects.select_for_update().filter(job_id__in=list(batch))
        }
        tenant_ids = _tenant_ids_by_account(job.account for job in batch.values())
        to_create, to_update, node_changes, ended_live, node_fails = [], [], {}, [], []
        for job_id, record in batch.items():
            job = existing.get(job_id)
            was_live = job is not None and job.is_live
            observed_until = _observed_until(job, record, taken_at)
            if record.state == NODE_FAIL and (job is None or job.state != NODE_FAIL) and (
                record.end_time is None or record.end_time >= now - NODE_FAIL_SIGNAL_WINDOW
            ):
                node_fails.append(job_id)
            if job is None:
                job = Job(job_id=job_id)
                to_create.append(job)
            elif _same_record(job, record) and job.observed_until == observed_until:
                continue
            else:
                to_update.append(job)
            nodelist = compress_hostlist(record.node_names) if record.node_names else ""
            if job.pk is None or job.nodelist != nodelist:
                node_changes[job_id] = record.node_names
            _apply_finished(job, record, nodelist, tenant_ids.get(record.account), now)
            job.observed_until = observed_until
            if was_live:
                ended_live.append(job)
        Job.objects.bulk_create(to_create, batch_size=BATCH_SIZE)
        Job.objects.bulk_update(to_update, FINISHED_JOB_FIELDS, batch_size=BATCH_SIZE)
        pks = {job.job_id: job.pk for job in to_create + to_update}
        _replace_job_nodes({pks[job_id]: names for job_id, names in node_changes.items()})
        hooks.notify_jobs_accounted(list(pks.values()))
        for job in ended_live:
            publish_job(job, "job.ended")
        if node_fails:
            for job in Job.objects.filter(job_id__in=node_fails).prefetch_related("nodes"):
                hooks.notify_slurm_signal(hooks.JobNodeFail(job=job))
    return ImportResult(len(to_create), len(to_update))


def _observed_until(
    job: Job | None, record: FinishedJob, taken_at: datetime | None
) -> datetime | None:
    """Up to when a running record is counted: the trace's time, never moved back by an older
    trace imported after a newer one. Finished, or read live (no trace time): None."""
    if taken_at is None or record.state not in RUNNING_STATES:
        return None
    if job is not None and job.observed_until is not None and job.observed_until > taken_at:
        return job.observed_until
    return taken_at


def _same_record(job: Job, record: FinishedJob) -> bool:
    return (
        job.source == Job.Source.SACCT
        and job.state == record.state
        and job.end_time == record.end_time
        and job.elapsed_seconds == record.elapsed_seconds
        and job.exit_code == record.exit_code
        and job.gpus == record.gpus
    )


def _apply_finished(
    job: Job, record: FinishedJob, nodelist: str, tenant_id: int | None, now: datetime
) -> None:
    job.name = record.name
    job.user = record.user
    job.account = record.account
    job.partition = record.partition
    job.state = record.state
    job.state_reason = ""
    job.exit_code = record.exit_code
    job.signal = record.signal
    job.submit_time = record.submit_time
    job.start_time = record.start_time
    job.end_time = record.end_time
    job.elapsed_seconds = record.elapsed_seconds
    job.gpus = record.gpus
    job.node_count = record.nodes_held
    job.nodelist = nodelist
    job.tenant_id = tenant_id
    job.gpu_seconds = record.gpu_seconds
    job.source = Job.Source.SACCT
    job.updated_at = now


def import_accounting(
    *, driver: SlurmDriver | None = None, now: datetime | None = None
) -> ImportResult:
    """Import the jobs that ended since the last import (the watermark), then move it on."""
    driver = driver or get_slurm_driver()
    now = now or timezone.now()
    watermark = SyncWatermark.objects.filter(name=ACCOUNTING_WATERMARK).first()
    if watermark is None:
        since = now - timedelta(days=settings.JOBS_ACCOUNTING_INITIAL_DAYS)
    else:
        since = watermark.value - ACCOUNTING_OVERLAP
    finished = driver.accounting(since=since, until=now)
    result = import_finished_jobs(finished)
    new_value = max(now, watermark.value) if watermark else now
    SyncWatermark.objects.update_or_create(name=ACCOUNTING_WATERMARK, defaults={"value": new_value})
    if result.total:
        summary = {"created": result.created, "updated": result.updated}
        publish("jobs", "jobs.imported", summary, tenant_ids=[])
    return result
