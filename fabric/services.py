"""Writes of the fabric app: switch changes requested as Actions (DESIGN.md section 3).

Each request is validated against the inventory first (a port the inventory does not know on
that switch is a 400 before anything is queued), then becomes one durable Action in the caller's
transaction; `fabric/action_handlers.py` carries it out on a worker through the switch driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fabric.drivers.base import SAKURAONE_ROCE_PROFILE, QosProfile
from fabric.drivers.sonic_flex_counters import UNSUPPORTED as ECN_UNSUPPORTED
from fabric.impact import blast_radius, host_facing_ports
from fabric.models import Maintenance
from fabric.targets import SwitchNotAddressable, switch_target
from inventory.models import Node, Pod, Switch
from jobs.hooks import resume_blockers
from jobs.selectors import running_jobs_on_nodes
from jobs.services import request_drain
from portal.errors import Conflict, InvalidInput
from portal.models import Action, ActionStatus
from portal.services.actions import enqueue_action, idempotency_scope

PORT_ADMIN_ACTION = "fabric.port_admin"
LEAF_MAINTENANCE_ACTION = "fabric.leaf_maintenance"
APPLY_QOS_ACTION = "fabric.apply_qos"
SAVE_CONFIG_ACTION = "fabric.save_config"
ENABLE_ECN_COUNTERS_ACTION = "fabric.enable_ecn_counters"
MAINTENANCE_END_ACTION = "fabric.maintenance_end"
# Slurm states (as the node sync stores them) of a node that is drained or being drained.
DRAINED_SLURM_STATES = ("drained", "draining")

# Profiles an operator may apply by name; Table 15's is the default.
QOS_PROFILES: dict[str, QosProfile] = {SAKURAONE_ROCE_PROFILE.name: SAKURAONE_ROCE_PROFILE}
MAINTENANCE_ROLES = (Switch.Role.LEAF, Switch.Role.STORAGE)
MAX_TARGET_LENGTH = 255


def request_port_admin(
    *,
    switch: Switch,
    ports: Sequence[str],
    up: bool,
    reason: str,
    requested_by=None,
    via: str = "api",
    idempotency_key: str | None = None,
) -> tuple[Action, bool]:
    """Queue a shutdown (up=False) or startup of some ports of one switch."""
    names = inventory_ports(switch, ports)
    _require_target(switch)
    radius = blast_radius(switch=switch, ports=names)
    return enqueue_action(
        kind=PORT_ADMIN_ACTION,
        target=_target_text(switch, names),
        reason=reason,
        requested_by=requested_by,
        parameters={
            "switch_id": switch.pk,
            "switch": switch.hostname,
            "ports": names,
            "up": bool(up),
            "nodes": list(radius.nodes),
        },
        idempotency_key=idempotency_key,
        via=via,
    )


def request_leaf_maintenance(
    *,
    switch: Switch,
    reason: str,
    requested_by=None,
    report_only: bool = False,
    shut_under_running_jobs: bool = False,
    force_reason: str = "",
    via: str = "api",
    idempotency_key: str | None = None,
) -> tuple[Action, bool]:
    """Take a leaf out of service: drain the nodes behind it, wait until Slurm reports them
    drained with no job left (up to MAINTENANCE_DRAIN_DEADLINE_SECONDS), then shut the
    host-facing ports that are up. A `Maintenance` row remembers what it did, for its end.

    The drain is its own Action (queued here, in the same transaction); the maintenance Action
    waits for it and then for the jobs, re-queued between checks (it holds no worker), its
    progress ("waiting for 2 jobs (1098, 1100) on 3 nodes") as its result. With
    `shut_under_running_jobs` it shuts as soon as the drain went through; that needs
    `force_reason`, and the running jobs the portal knows of are recorded by name.
    `report_only` queues an Action that only reports the blast radius (nodes, rails, cables and
    the ports' current state).
    """
    if not (reason or "").strip():
        # Checked before the drain is queued, whose own reason would not be empty.
        message = "A reason is required: it is recorded and shown to others."
        raise InvalidInput({"reason": [message]})
    if switch.role not in MAINTENANCE_ROLES:
        raise InvalidInput({"switch": [
            f"Leaf maintenance applies to leaf and storage switches; {switch.hostname} is a "
            f"{switch.role}."
        ]})
    force_reason = (force_reason or "").strip()
    if shut_under_running_jobs and not force_reason and not report_only:
        raise InvalidInput({"force_reason": [
            "Say why the ports may be shut under running jobs: their users lose the rail."
        ]})
    _require_target(switch)
    ports = host_facing_ports(switch)
    radius = blast_radius(switch=switch, ports=ports)
    parameters: dict = {
        "switch_id": switch.pk,
        "switch": switch.hostname,
        "ports": ports,
        "nodes": list(radius.nodes),
        "report_only": bool(report_only),
    }
    if report_only:
        return enqueue_action(
            kind=LEAF_MAINTENANCE_ACTION, target=f"{switch.hostname} (report)", reason=reason,
            requested_by=requested_by, parameters=parameters, idempotency_key=idempotency_key,
            via=via,
        )
    if not ports:
        raise InvalidInput({"switch": [
            f"{switch.hostname} has no host-facing ports in the inventory: nothing to shut."
        ]})
    with transaction.atomic():
        if idempotency_key:
            # A repeated request returns the first maintenance's Action, not a second drain.
            action, created = _repeated_request(requested_by, idempotency_key)
            if action is not None:
                return action, created
        _close_abandoned_maintenances(switch)
        current = open_maintenance(switch)
        if current is not None:
            raise Conflict(
                f"{switch.hostname} is already under maintenance (Action "
                f"#{current.start_action_id}, {current.status}); end it first.",
                maintenance_id=current.pk,
            )
        nodes = list(Node.objects.filter(hostname__in=radius.nodes).order_by("hostname"))
        drain, _ = request_drain(
            nodes=nodes,
            reason=f"maintenance of {switch.hostname}: {reason}",
            requested_by=requested_by,
            via=via,
            idempotency_key=f"{idempotency_key}:drain" if idempotency_key else None,
        )
        deadline = timezone.now() + timedelta(seconds=settings.MAINTENANCE_DRAIN_DEADLINE_SECONDS)
        forced_over = []
        if shut_under_running_jobs:
            forced_over = [
                {"job_id": job.job_id, "user": job.user, "account": job.account}
                for job in running_jobs_on_nodes([node.pk for node in nodes])
            ]
        parameters.update(
            drain_action_id=drain.pk,
            deadline=deadline.isoformat(),
            shut_under_running_jobs=bool(shut_under_running_jobs),
            force_reason=force_reason if shut_under_running_jobs else "",
            forced_over_jobs=forced_over,
        )
        action, created = enqueue_action(
            kind=LEAF_MAINTENANCE_ACTION,
            target=f"{switch.hostname} (maintenance)",
            reason=reason,
            requested_by=requested_by,
            parameters=parameters,
            idempotency_key=idempotency_key,
            via=via,
        )
        Maintenance.objects.create(
            switch=switch,
            reason=reason.strip(),
            requested_by=requested_by,
            start_action=action,
            nodes=[node.hostname for node in nodes],
            nodes_drained_before=[node.hostname for node in nodes
                                  if node.slurm_state in DRAINED_SLURM_STATES],
            ports=ports,
            forced_reason=force_reason if shut_under_running_jobs else "",
            forced_over_jobs=forced_over,
        )
    return action, created


def request_maintenance_end(
    *,
    maintenance: Maintenance,
    reason: str,
    requested_by=None,
    via: str = "api",
    idempotency_key: str | None = None,
) -> tuple[Action, bool]:
    """End a maintenance as one Action: start exactly the ports it shut, then resume exactly the
    nodes it drained, nothing else. Nodes drained before it stay drained, and so do nodes an
    open fault ticket (found during the work) wants kept out; the Action names them."""
    with transaction.atomic():
        locked = Maintenance.objects.select_for_update().select_related(
            "switch", "start_action").get(pk=maintenance.pk)
        start = locked.start_action
        start_gave_up = start.status in (ActionStatus.FAILED, ActionStatus.CANCELLED)
        if locked.status == Maintenance.Status.STARTING and not start_gave_up:
            raise Conflict(
                f"The maintenance of {locked.switch.hostname} is still starting (Action "
                f"#{start.pk} {start.status}); cancel that Action first.",
                maintenance_id=locked.pk,
            )
        if locked.status not in (Maintenance.Status.ACTIVE, Maintenance.Status.STARTING,
                                 Maintenance.Status.FAILED):
            raise Conflict(f"The maintenance of {locked.switch.hostname} is {locked.status}.",
                           maintenance_id=locked.pk)
        if locked.end_action_id is not None:
            raise Conflict(f"Action #{locked.end_action_id} ends this maintenance already.",
                           maintenance_id=locked.pk)
        nodes = list(Node.objects.filter(hostname__in=locked.nodes_to_resume))
        blockers = resume_blockers(nodes)
        ports = list(locked.shut_ports or [])
        action, created = enqueue_action(
            kind=MAINTENANCE_END_ACTION,
            target=f"{locked.switch.hostname} (end of maintenance)",
            reason=reason,
            requested_by=requested_by,
            parameters={
                "maintenance_id": locked.pk,
                "switch_id": locked.switch_id,
                "switch": locked.switch.hostname,
                "ports": ports,
                "nodes": sorted(node.hostname for node in nodes
                                if node.hostname not in blockers),
                "kept_drained": {
                    **{name: "drained before the maintenance"
                       for name in locked.nodes_drained_before},
                    **dict(sorted(blockers.items())),
                },
            },
            idempotency_key=idempotency_key,
            via=via,
        )
        locked.end_action = action
        locked.status = Maintenance.Status.ENDING
        locked.save(update_fields=["end_action", "status"])
    return action, created


def maintenance_to_end(switch: Switch) -> Maintenance:
    """The maintenance an end request for `switch` ends: its open one, or else one whose start
    gave up (failed or cancelled) after draining, whose nodes are still to resume."""
    _close_abandoned_maintenances(switch)
    found = open_maintenance(switch) or Maintenance.objects.filter(
        switch=switch, status=Maintenance.Status.FAILED, end_action__isnull=True).first()
    if found is None:
        raise Conflict(f"{switch.hostname} is not under maintenance.")
    return found


def open_maintenance(switch: Switch) -> Maintenance | None:
    """The maintenance of `switch` that is starting, active or ending, if any."""
    return Maintenance.objects.filter(switch=switch,
                                      status__in=Maintenance.OPEN_STATUSES).first()


def _close_abandoned_maintenances(switch: Switch) -> None:
    """A start whose Action failed or was cancelled before shutting anything no longer holds
    the switch (its drained nodes are still its to resume: `request_maintenance_end`)."""
    Maintenance.objects.filter(
        switch=switch, status=Maintenance.Status.STARTING, shut_ports__isnull=True,
        start_action__status__in=[ActionStatus.FAILED, ActionStatus.CANCELLED],
    ).update(status=Maintenance.Status.FAILED)


def _repeated_request(requested_by, idempotency_key: str) -> tuple[Action | None, bool]:
    existing = Action.objects.filter(idempotency_scope=idempotency_scope(requested_by),
                                     idempotency_key=idempotency_key).first()
    if existing is None:
        return None, True
    if existing.kind != LEAF_MAINTENANCE_ACTION:
        raise Conflict(f"Idempotency key already used for Action #{existing.pk} "
                       f"({existing.kind} on {existing.target}).", action_id=existing.pk)
    return existing, False


def request_apply_qos(
    *,
    switches: Sequence[Switch],
    reason: str,
    scope: str,
    profile_name: str = SAKURAONE_ROCE_PROFILE.name,
    requested_by=None,
    via: str = "api",
    idempotency_key: str | None = None,
) -> tuple[Action, bool]:
    """Queue one Action applying a QoS profile to `switches` (one switch, or a pod's)."""
    profile = QOS_PROFILES.get(profile_name)
    if profile is None:
        raise InvalidInput({"profile": [
            f"Unknown profile {profile_name!r}; known: {', '.join(sorted(QOS_PROFILES))}."
        ]})
    if not switches:
        raise InvalidInput({"switches": [f"{scope} has no switches to configure."]})
    for switch in switches:
        _require_target(switch)
    return enqueue_action(
        kind=APPLY_QOS_ACTION,
        target=scope,
        reason=reason,
        requested_by=requested_by,
        parameters={
            "switches": [{"id": s.pk, "hostname": s.hostname} for s in switches],
            # The values themselves, so the Action records exactly what it applied.
            "profile": asdict(profile),
        },
        idempotency_key=idempotency_key,
        via=via,
    )


def pod_switches(pod: Pod) -> list[Switch]:
    """The switches that belong to a pod (its leafs; spines serve both pods and have none)."""
    return list(Switch.objects.filter(pod=pod).order_by("hostname"))


def request_save_config(
    *,
    switch: Switch,
    reason: str,
    requested_by=None,
    via: str = "api",
    idempotency_key: str | None = None,
) -> tuple[Action, bool]:
    """Queue `config save -y` on one switch."""
    _require_target(switch)
    return enqueue_action(
        kind=SAVE_CONFIG_ACTION,
        target=switch.hostname,
        reason=reason,
        requested_by=requested_by,
        parameters={"switch_id": switch.pk, "switch": switch.hostname},
        idempotency_key=idempotency_key,
        via=via,
    )


def request_enable_ecn_counters(
    *,
    switch: Switch,
    reason: str,
    requested_by=None,
    via: str = "api",
    idempotency_key: str | None = None,
) -> tuple[Action, bool]:
    """Queue `counterpoll wredqueue enable` on one switch, so that its ECN-marked queue
    counters are collected (a poll showed them "not collected")."""
    _require_target(switch)
    state = getattr(switch, "poll_state", None)
    if state is not None and state.ecn_counters == ECN_UNSUPPORTED:
        raise InvalidInput({"switch": [
            f"{switch.hostname} cannot collect ECN-marked queue counters: its image has no "
            "WRED_ECN_QUEUE counter group (SONiC 202505 or later) or its ASIC cannot count them."
        ]})
    return enqueue_action(
        kind=ENABLE_ECN_COUNTERS_ACTION,
        target=switch.hostname,
        reason=reason,
        requested_by=requested_by,
        parameters={"switch_id": switch.pk, "switch": switch.hostname},
        idempotency_key=idempotency_key,
        via=via,
    )


# -- validation ----------------------------------------------------------------------------------


def inventory_ports(switch: Switch, ports: Sequence[str]) -> list[str]:
    """The requested port names, checked against the switch's ports in the inventory."""
    if isinstance(ports, str):
        ports = [ports]
    names = list(dict.fromkeys(str(name).strip() for name in ports if str(name).strip()))
    if not names:
        raise InvalidInput({"ports": ["Name at least one port."]})
    known = dict(switch.ports.filter(name__in=names).values_list("name", "breakout_mode"))
    problems = [f"{name} is not a port of {switch.hostname}." for name in names
                if name not in known]
    problems += [f"{name} is a broken-out cage; name its {known[name]} interfaces instead."
                 for name in names if known.get(name)]
    if problems:
        raise InvalidInput({"ports": problems})
    return names


def _require_target(switch: Switch) -> None:
    try:
        switch_target(switch)
    except SwitchNotAddressable as error:
        raise InvalidInput({"switch": [str(error)]}) from None


def _target_text(switch: Switch, ports: list[str]) -> str:
    text = f"{switch.hostname} {','.join(ports)}"
    if len(text) <= MAX_TARGET_LENGTH:
        return text
    return f"{switch.hostname} ({len(ports)} ports)"
