"""Maintenance windows: maintenance planned ahead of time (issue 26 item 2).

Writes only; each side effect on Slurm is a durable Action (`fabric.window_reservation`, which
reconciles the window's MAINT reservation with the row) and each switch's drain and shut is the
existing leaf maintenance (`fabric.services.request_leaf_maintenance`); the window's end is one
Action (`fabric.window_end`) that undoes exactly what its maintenances did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fabric.impact import blast_radius
from fabric.models import Maintenance, MaintenanceWindow
from fabric.services import DRAINED_SLURM_STATES, MAINTENANCE_ROLES, request_leaf_maintenance
from inventory.hostlist import compress_hostlist, expand_hostlist
from inventory.models import Node, Switch
from jobs.hooks import resume_blockers
from jobs.services import request_drain
from portal.errors import Conflict, InvalidInput
from portal.models import Action, ActionStatus
from portal.models.actions import TERMINAL_STATUSES
from portal.realtime import publish
from portal.services.actions import enqueue_action

WINDOW_RESERVATION_ACTION = "fabric.window_reservation"
WINDOW_END_ACTION = "fabric.window_end"
WINDOW_NODES_ACTION = "fabric.window_nodes"
# A maintenance whose start Action gave up shut nothing and holds its drained nodes: the
# window's end resumes them.
GAVE_UP = (ActionStatus.FAILED, ActionStatus.CANCELLED)
# MAINT: Slurm accounts the time as maintenance and refuses jobs across it; IGNORE_JOBS: jobs
# already running (which end before the window, or are what the start waits for) do not stop
# the reservation from being created.
WINDOW_RESERVATION_FLAGS = ("MAINT", "IGNORE_JOBS")
# Published on "cluster" when a window starts or ends, so an open dashboard re-reads its grid
# and gains or loses the maintenance marks (static/js/cluster.js).
WINDOW_EVENT = "maintenance.window"


def create_maintenance_window(
    *,
    planned_start: datetime,
    planned_end: datetime,
    reason: str,
    switch_names: Sequence[str] = (),
    hostlist: str = "",
    owner=None,
    via: str = "api",
) -> MaintenanceWindow:
    """Plan a window and queue the Action that reserves its nodes in Slurm (flags=MAINT) from
    its start to its end. 400 naming the field for an end not after the start or already past,
    an unknown or non-leaf switch, an unknown host, an empty scope, or a window overlapping
    another open one on the same switch or node."""
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput({"reason": ["A reason is required: it is shown on the calendar."]})
    if planned_end <= planned_start:
        raise InvalidInput({"planned_end": ["The planned end must be after the planned start."]})
    if planned_end <= timezone.now():
        raise InvalidInput({"planned_end": ["The planned end has already passed."]})
    switches = _known_switches(switch_names)
    own_nodes = _known_nodes(hostlist)
    if not switches and not own_nodes:
        raise InvalidInput({"switches": ["Name at least one switch or node (hostlist)."]})
    reserved = sorted(set(own_nodes).union(*(blast_radius(switch=switch).nodes
                                              for switch in switches)))
    with transaction.atomic():
        _refuse_overlap(planned_start, planned_end, switches, reserved)
        window = MaintenanceWindow.objects.create(
            reason=reason, owner=owner, planned_start=planned_start, planned_end=planned_end,
            nodes=own_nodes, reserved_nodes=reserved,
        )
        window.switches.set(switches)
        _sync_reservation(window, "reserve the window's nodes in Slurm (flags=MAINT)",
                          requested_by=owner, via=via)
    return window


def start_maintenance_window(
    window: MaintenanceWindow, *, requested_by=None, via: str = "api",
) -> MaintenanceWindow:
    """Start a scheduled window now (an operator, or its time has come): one leaf maintenance per
    switch, each draining, waiting for the nodes' jobs to end, then shutting; the nodes named on
    their own are drained and waited for too (`nodes_action`). Started early, its reservation
    is moved to begin now."""
    with transaction.atomic():
        window = MaintenanceWindow.objects.select_for_update().get(pk=window.pk)
        if window.status != MaintenanceWindow.Status.SCHEDULED:
            raise Conflict(f"Maintenance window #{window.pk} is {window.status}; only a "
                           "scheduled window starts.", window_id=window.pk)
        behind_switches: set[str] = set()
        for switch in window.switches.order_by("hostname"):
            action, _ = request_leaf_maintenance(
                switch=switch, reason=f"maintenance window #{window.pk}: {window.reason}",
                requested_by=requested_by, via=via,
            )
            Maintenance.objects.filter(start_action=action).update(window=window)
            behind_switches.update(action.parameters["nodes"])
        _drain_own_nodes(window, sorted(set(window.nodes) - behind_switches),
                         requested_by=requested_by, via=via)
        window.status = MaintenanceWindow.Status.RUNNING
        window.started_at = timezone.now()
        window.save(update_fields=["status", "started_at", "nodes_action",
                                   "nodes_drained_before"])
        if window.planned_start > window.started_at:
            _sync_reservation(window, "the window started early: hold its nodes from now",
                              requested_by=requested_by, via=via)
        _publish_window(window)
    return window


def _drain_own_nodes(window: MaintenanceWindow, names: list[str], *, requested_by,
                     via: str) -> None:
    """Drain the nodes the window names on their own (those not behind its switches, whose
    maintenances drain them) and queue the Action that waits until they are empty, as a
    switch's maintenance does. Nodes drained already (by someone else) are not drained again,
    so their Slurm reason stays theirs, and the window's end leaves them drained."""
    if not names:
        return
    nodes = list(Node.objects.filter(hostname__in=names).order_by("hostname"))
    before = [node.hostname for node in nodes if node.slurm_state in DRAINED_SLURM_STATES]
    to_drain = [node for node in nodes if node.hostname not in before]
    reason = f"maintenance window #{window.pk}: {window.reason}"
    drain = None
    if to_drain:
        drain, _ = request_drain(nodes=to_drain, reason=reason, requested_by=requested_by,
                                 via=via)
    deadline = timezone.now() + timedelta(seconds=settings.MAINTENANCE_DRAIN_DEADLINE_SECONDS)
    window.nodes_action, _ = enqueue_action(
        kind=WINDOW_NODES_ACTION,
        target=f"{compress_hostlist(names)} (maintenance window #{window.pk})",
        reason=reason, requested_by=requested_by, via=via,
        parameters={"window_id": window.pk, "nodes": names,
                    "drain_action_id": drain.pk if drain else None,
                    "deadline": deadline.isoformat()},
    )
    window.nodes_drained_before = before


def end_maintenance_window(
    window: MaintenanceWindow, *, requested_by=None, via: str = "api",
) -> Action | None:
    """End a running window as one Action (`fabric.window_end`) over all its switches and nodes:
    it starts exactly the ports its maintenances shut and resumes exactly the nodes it drained,
    nothing else (ports down before stay down; nodes drained before it, or held by an open
    fault ticket, stay drained and are named); the reservation goes. 409 while a maintenance is
    still waiting for jobs, its switches' or its own nodes' (nothing is changed then). None
    when it had nothing to undo."""
    with transaction.atomic():
        window = MaintenanceWindow.objects.select_for_update().get(pk=window.pk)
        if window.status != MaintenanceWindow.Status.RUNNING:
            raise Conflict(f"Maintenance window #{window.pk} is {window.status}; only a "
                           "running window ends (cancel a scheduled one).", window_id=window.pk)
        maintenances = list(
            window.maintenances.select_for_update().filter(end_action__isnull=True)
            .exclude(status=Maintenance.Status.ENDED).select_related("switch", "start_action")
            .order_by("switch__hostname"))
        still_starting = [m.start_action for m in maintenances
                          if m.status == Maintenance.Status.STARTING
                          and m.start_action.status not in GAVE_UP]
        nodes_action = window.nodes_action
        if nodes_action is not None and nodes_action.status not in TERMINAL_STATUSES:
            still_starting.append(nodes_action)
        if still_starting:
            raise Conflict(
                f"Maintenance window #{window.pk} is still starting ("
                + ", ".join(f"Action #{a.pk} {a.status}" for a in still_starting)
                + "); cancel those Actions first.", window_id=window.pk)
        end = _request_window_end(window, maintenances, requested_by=requested_by, via=via)
        window.status = MaintenanceWindow.Status.ENDED
        window.ended_at = timezone.now()
        window.end_action = end
        window.save(update_fields=["status", "ended_at", "end_action"])
        _sync_reservation(window, "the window ended: release its nodes",
                          requested_by=requested_by, via=via)
        _publish_window(window)
    return end


def _publish_window(window: MaintenanceWindow) -> None:
    """Tell open dashboards, on commit, that a window started or ended. Windows are fabric
    planning (a tenant admin sees the nodes drained, not why): no tenant is listed, so no
    tenant admin receives it; the payload names no node, and each page re-reads what its
    reader may see."""
    publish("cluster", WINDOW_EVENT, {"window_id": window.pk, "status": window.status},
            tenant_ids=[], tenant_private=False)


def _request_window_end(window: MaintenanceWindow, maintenances: list[Maintenance], *,
                        requested_by, via: str) -> Action | None:
    """The window's one end Action: per switch the ports its maintenance shut (read from the
    switch just before shutting), and the nodes the window drained less those drained before
    it or kept out by an open fault ticket."""
    drained = {name for m in maintenances for name in m.nodes}
    drained_before = {name for m in maintenances for name in m.nodes_drained_before}
    if window.nodes_action is not None:
        drained.update(window.nodes_action.parameters["nodes"])
        drained_before.update(window.nodes_drained_before)
    nodes = list(Node.objects.filter(hostname__in=drained - drained_before).order_by("hostname"))
    if not maintenances and not nodes:
        return None
    blockers = resume_blockers(nodes)
    action, _ = enqueue_action(
        kind=WINDOW_END_ACTION,
        target=f"maintenance window #{window.pk} (end)",
        reason=f"end of maintenance window #{window.pk}: {window.reason}",
        requested_by=requested_by, via=via,
        parameters={
            "window_id": window.pk,
            "switches": [{"maintenance_id": m.pk, "switch_id": m.switch_id,
                          "switch": m.switch.hostname, "ports": list(m.shut_ports or [])}
                         for m in maintenances],
            "nodes": [node.hostname for node in nodes if node.hostname not in blockers],
            "kept_drained": {
                **{name: "drained before the maintenance" for name in sorted(drained_before)},
                **dict(sorted(blockers.items())),
            },
        },
    )
    Maintenance.objects.filter(pk__in=[m.pk for m in maintenances]).update(
        end_action=action, status=Maintenance.Status.ENDING)
    return action


def cancel_maintenance_window(
    window: MaintenanceWindow, *, requested_by=None, via: str = "api",
) -> MaintenanceWindow:
    """Cancel a window that has not started: its reservation is deleted, nothing else ran."""
    with transaction.atomic():
        window = MaintenanceWindow.objects.select_for_update().get(pk=window.pk)
        if window.status != MaintenanceWindow.Status.SCHEDULED:
            raise Conflict(f"Maintenance window #{window.pk} is {window.status}; only a "
                           "scheduled window is cancelled (end a running one).",
                           window_id=window.pk)
        window.status = MaintenanceWindow.Status.CANCELLED
        window.ended_at = timezone.now()
        window.save(update_fields=["status", "ended_at"])
        _sync_reservation(window, "the window was cancelled: release its nodes",
                          requested_by=requested_by, via=via)
    return window


@dataclass
class WindowRun:
    started: list[int] = field(default_factory=list)
    ended: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)
    deferred: dict[int, str] = field(default_factory=dict)


def run_due_windows(now: datetime | None = None) -> WindowRun:
    """Start the scheduled windows whose start has come and end the running ones whose end has
    passed (beat: MAINTENANCE_WINDOW_CHECK_SECONDS). A window whose whole time passed unstarted
    is cancelled; one whose maintenance still waits for jobs is ended at a later run."""
    now = now or timezone.now()
    run = WindowRun()
    scheduled = MaintenanceWindow.objects.filter(status=MaintenanceWindow.Status.SCHEDULED,
                                                 planned_start__lte=now)
    for window in scheduled:
        try:
            if window.planned_end <= now:
                cancel_maintenance_window(window, via="schedule")
                run.cancelled.append(window.pk)
            else:
                start_maintenance_window(window, requested_by=window.owner, via="schedule")
                run.started.append(window.pk)
        except (Conflict, InvalidInput) as error:
            run.deferred[window.pk] = str(error.detail)
    running = MaintenanceWindow.objects.filter(status=MaintenanceWindow.Status.RUNNING,
                                               planned_end__lte=now)
    for window in running:
        try:
            end_maintenance_window(window, requested_by=window.owner, via="schedule")
            run.ended.append(window.pk)
        except Conflict as error:
            run.deferred[window.pk] = str(error.detail)
    return run


def _sync_reservation(window: MaintenanceWindow, reason: str, *, requested_by, via) -> None:
    action, _ = enqueue_action(
        kind=WINDOW_RESERVATION_ACTION,
        target=f"{window.reservation_name} ({len(window.reserved_nodes)} nodes)",
        reason=reason, requested_by=requested_by, via=via,
        parameters={"window_id": window.pk, "reservation": window.reservation_name},
    )
    MaintenanceWindow.objects.filter(pk=window.pk).update(reservation_action=action)
    window.reservation_action = action


def _known_switches(names: Sequence[str]) -> list[Switch]:
    wanted = list(dict.fromkeys(name.strip() for name in names if name.strip()))
    found = {switch.hostname: switch for switch in Switch.objects.filter(hostname__in=wanted)}
    unknown = [name for name in wanted if name not in found]
    if unknown:
        raise InvalidInput({"switches": [f"Unknown switch: {', '.join(unknown)}."]})
    wrong_role = [name for name in wanted if found[name].role not in MAINTENANCE_ROLES]
    if wrong_role:
        raise InvalidInput({"switches": [
            f"Only leaf and storage switches are taken into maintenance: {', '.join(wrong_role)}."
        ]})
    return [found[name] for name in wanted]


def _known_nodes(hostlist: str) -> list[str]:
    if not (hostlist or "").strip():
        return []
    names = expand_hostlist(hostlist.strip(), field="nodes")
    known = set(Node.objects.filter(hostname__in=names).values_list("hostname", flat=True))
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InvalidInput({"nodes": [f"Unknown node: {', '.join(unknown[:10])}"
                                      + (" …" if len(unknown) > 10 else "") + "."]})
    return sorted(set(names))


def _refuse_overlap(start: datetime, end: datetime, switches: list[Switch],
                    nodes: list[str]) -> None:
    """Two open windows over the same switch or node at the same time would each take the
    other's shut ports for ones down before, and Slurm refuses the second reservation."""
    overlapping = MaintenanceWindow.objects.select_for_update().filter(
        status__in=MaintenanceWindow.OPEN_STATUSES, planned_start__lt=end, planned_end__gt=start)
    wanted_nodes = set(nodes)
    for other in overlapping.prefetch_related("switches"):
        shared = sorted({s.hostname for s in other.switches.all()}
                        & {s.hostname for s in switches})
        if shared:
            raise InvalidInput({"switches": [
                f"Maintenance window #{other.pk} ({other.planned_start:%Y-%m-%d %H:%M} to "
                f"{other.planned_end:%Y-%m-%d %H:%M} UTC) already covers {', '.join(shared)}."
            ]})
        shared_nodes = sorted(wanted_nodes & set(other.reserved_nodes))
        if shared_nodes:
            raise InvalidInput({"nodes": [
                f"Maintenance window #{other.pk} already holds {', '.join(shared_nodes[:10])} "
                "at that time."
            ]})


def reservation_account() -> str:
    """Slurm needs an account on a reservation; MAINT with the portal's own account keeps
    every tenant out."""
    return settings.FAULTS_VALIDATION_ACCOUNT
