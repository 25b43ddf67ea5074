"""Writes of the fabric app: switch changes requested as Actions (DESIGN.md section 3).

Each request is validated against the inventory first (a port the inventory does not know on
that switch is a 400 before anything is queued), then becomes one durable Action in the caller's
transaction; `fabric/action_handlers.py` carries it out on a worker through the switch driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from fabric.drivers.base import SAKURAONE_ROCE_PROFILE, QosProfile
from fabric.drivers.sonic_flex_counters import UNSUPPORTED as ECN_UNSUPPORTED
from fabric.impact import blast_radius, host_facing_ports
from fabric.targets import SwitchNotAddressable, switch_target
from inventory.models import Node, Pod, Switch
from jobs.services import request_drain
from portal.errors import InvalidInput
from portal.models import Action
from portal.services.actions import enqueue_action

PORT_ADMIN_ACTION = "fabric.port_admin"
LEAF_MAINTENANCE_ACTION = "fabric.leaf_maintenance"
APPLY_QOS_ACTION = "fabric.apply_qos"
SAVE_CONFIG_ACTION = "fabric.save_config"
ENABLE_ECN_COUNTERS_ACTION = "fabric.enable_ecn_counters"

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
    via: str = "api",
    idempotency_key: str | None = None,
) -> tuple[Action, bool]:
    """Take a leaf out of service: drain the nodes behind it, then shut its host-facing ports.

    The drain is its own Action (queued here, in the same transaction); the maintenance Action
    waits for it to succeed before touching the switch. `report_only` queues an Action that
    only reports the blast radius (nodes, rails, cables and the ports' current state).
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
    if not report_only:
        if not ports:
            raise InvalidInput({"switch": [
                f"{switch.hostname} has no host-facing ports in the inventory: nothing to shut."
            ]})
        drain, _ = request_drain(
            nodes=list(Node.objects.filter(hostname__in=radius.nodes).order_by("hostname")),
            reason=f"maintenance of {switch.hostname}: {reason}",
            requested_by=requested_by,
            via=via,
            idempotency_key=f"{idempotency_key}:drain" if idempotency_key else None,
        )
        parameters["drain_action_id"] = drain.pk
    mode = "report" if report_only else "maintenance"
    return enqueue_action(
        kind=LEAF_MAINTENANCE_ACTION,
        target=f"{switch.hostname} ({mode})",
        reason=reason,
        requested_by=requested_by,
        parameters=parameters,
        idempotency_key=idempotency_key,
        via=via,
    )


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
