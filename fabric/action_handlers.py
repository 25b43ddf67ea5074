"""Action handlers that carry switch changes out through the configured fabric driver.

Every handler is idempotent (shutting a down port, re-applying a profile or saving twice all
succeed), turns SSH timeouts and dropped connections into TransientActionError (retried with
backoff) and anything the switch refuses into PermanentActionError carrying the switch's own
error text, which the Action shows as its last error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fabric.drivers.base import (
    FabricDriver,
    FabricError,
    QosProfile,
    SwitchCommandFailed,
    SwitchUnreachable,
    get_fabric_driver,
)
from fabric.hooks import LinkChange, notify_fabric_signals
from fabric.impact import blast_radius
from fabric.maintenance_windows import (
    WINDOW_END_ACTION,
    WINDOW_NODES_ACTION,
    WINDOW_RESERVATION_ACTION,
    WINDOW_RESERVATION_FLAGS,
    reservation_account,
)
from fabric.models import Maintenance, MaintenanceWindow, SwitchPollState
from fabric.port_state import is_link_change, link_status
from fabric.services import (
    APPLY_QOS_ACTION,
    ENABLE_ECN_COUNTERS_ACTION,
    LEAF_MAINTENANCE_ACTION,
    MAINTENANCE_END_ACTION,
    PORT_ADMIN_ACTION,
    SAVE_CONFIG_ACTION,
)
from fabric.targets import switch_target
from inventory.models import Switch, SwitchPort
from jobs.action_handlers import _call_slurm
from jobs.drain_progress import DrainProgress, drain_progress
from jobs.drivers.base import SlurmError, SlurmReservation, SlurmUnavailable, get_slurm_driver
from portal.actions.registry import (
    ActionWaiting,
    PermanentActionError,
    TransientActionError,
    register_action_handler,
)
from portal.models import Action, ActionStatus

QOS_LEASE_SECONDS_PER_SWITCH = 600.0


@contextmanager
def _talking_to(hostname: str) -> Iterator[None]:
    try:
        yield
    except SwitchUnreachable as error:
        raise TransientActionError(f"{hostname} unreachable: {error}") from error
    except SwitchCommandFailed as error:
        raise PermanentActionError(f"{hostname} refused {error.command!r}: "
                                   f"{error.output.strip()}") from error
    except FabricError as error:
        raise PermanentActionError(f"{hostname}: {error}") from error


def _switch(switch_id: int, hostname: str) -> Switch:
    switch = Switch.objects.filter(pk=switch_id).first()
    if switch is None:
        raise PermanentActionError(f"switch {hostname} is no longer in the inventory")
    return switch


def _driver(switch: Switch) -> FabricDriver:
    with _talking_to(switch.hostname):
        return get_fabric_driver(switch_target(switch))


def _set_ports_and_read_back(
    switch: Switch, ports: list[str], up: bool, action: Action | None = None
) -> dict:
    driver = _driver(switch)
    with _talking_to(switch.hostname):
        driver.set_port_admin(ports, up)
        states = {port.name: port for port in driver.ports() if port.name in set(ports)}
    _remember_port_states(switch, states.values(), action=action)
    return {
        port: {"admin": link_status(state.known_admin_up) or "unknown",
               "oper": link_status(state.known_oper_up) or "unknown"}
        for port, state in states.items()
    }


def _remember_port_states(switch: Switch, states, *, action: Action | None = None) -> None:
    """Keep the inventory's last-seen port state current without waiting for the next poll,
    and tell the listeners (faults) which links this Action took down or brought back: the next
    poll finds the state already stored and would not."""
    now = timezone.now()
    states = list(states)
    before = {
        name: (admin, oper)
        for name, admin, oper in SwitchPort.objects.filter(
            switch=switch, name__in=[state.name for state in states]
        ).values_list("name", "admin_status", "oper_status")
    }
    signals = []
    for state in states:
        admin, oper = before.get(state.name, ("", ""))
        if is_link_change(stored_admin=admin, stored_oper=oper, admin_up=state.known_admin_up,
                          oper_up=state.known_oper_up):
            signals.append(LinkChange(switch.hostname, state.name, state.admin_up, state.oper_up,
                                      action_id=action.pk if action else None))
    for state in states:
        SwitchPort.objects.filter(switch=switch, name=state.name).update(
            admin_status=link_status(state.known_admin_up),
            oper_status=link_status(state.known_oper_up),
            last_seen_at=now,
        )
    notify_fabric_signals(signals)


@register_action_handler(PORT_ADMIN_ACTION,
                         description="Shut down or start up switch ports (sudo config interface).")
def set_port_admin(action: Action) -> dict:
    parameters = action.parameters
    switch = _switch(parameters["switch_id"], parameters["switch"])
    ports = list(parameters["ports"])
    up = bool(parameters["up"])
    return {"switch": switch.hostname, "up": up,
            "ports": _set_ports_and_read_back(switch, ports, up, action)}


@register_action_handler(LEAF_MAINTENANCE_ACTION,
                         description="Drain the nodes behind a leaf, wait until Slurm reports "
                                     "them empty, then shut its host-facing ports; or only "
                                     "report the blast radius.",
                         max_attempts=10)
def leaf_maintenance(action: Action) -> dict:
    parameters = action.parameters
    switch = _switch(parameters["switch_id"], parameters["switch"])
    ports = list(parameters["ports"])
    radius = blast_radius(switch=switch, ports=ports).as_dict()
    if parameters.get("report_only"):
        driver = _driver(switch)
        with _talking_to(switch.hostname):
            states = [port for port in driver.ports() if port.name in set(ports)]
        radius["ports_up"] = [port.name for port in states if port.oper_up]
        return {"report_only": True, **radius}
    maintenance = Maintenance.objects.filter(start_action=action).first()
    if maintenance is None:
        raise PermanentActionError(f"the maintenance of {switch.hostname} this Action starts "
                                   "is gone; no port was shut")
    forced = bool(parameters.get("shut_under_running_jobs"))
    drain, progress = _wait_until_empty(
        parameters, maintenance.nodes, forced=forced,
        nothing_done=f"no port of {switch.hostname} was shut",
        advice=" End the maintenance to resume its nodes, or ask again to shut under running "
               "jobs.",
        give_up=lambda: _give_up(maintenance))
    shut = _ports_to_shut(maintenance, switch)
    states = _set_ports_and_read_back(switch, shut, up=False, action=action) if shut else {}
    Maintenance.objects.filter(pk=maintenance.pk, status=Maintenance.Status.STARTING).update(
        status=Maintenance.Status.ACTIVE, ports_shut_at=timezone.now())
    result = {
        "report_only": False,
        "phase": "ports_shut",
        "maintenance_id": maintenance.pk,
        "drain_action_id": drain.pk,
        "progress": _shut_progress(len(shut), len(maintenance.ports) - len(shut)),
        "ports": states,
        "ports_already_down": sorted(set(maintenance.ports) - set(shut)),
        **{key: radius[key] for key in ("nodes", "rails", "nodes_hostlist")},
    }
    if forced:
        result["shut_under_running_jobs"] = [job.as_dict() for job in progress.jobs]
        result["force_reason"] = parameters.get("force_reason", "")
    return result


def _shut_progress(shut: int, already_down: int) -> str:
    """"shut 1 port; 1 was down already and is left as it was" (the story's screenshot said
    "shut 1 ports; 1 were down already")."""
    text = f"shut {shut} port{'s' if shut != 1 else ''}"
    if already_down == 1:
        return f"{text}; 1 was down already and is left as it was"
    if already_down:
        return f"{text}; {already_down} were down already and are left as they were"
    return text


def _wait_until_empty(parameters: dict, nodes: list[str], *, nothing_done: str, advice: str,
                      give_up, forced: bool = False) -> tuple[Action | None, DrainProgress]:
    """Wait (re-queued every MAINTENANCE_CHECK_SECONDS, no worker held) until the drain Action
    `parameters["drain_action_id"]` succeeded and Slurm reports `nodes` drained with no job
    left; past `parameters["deadline"]` fail naming the jobs. `forced` stops waiting for the
    jobs once the drain went through. No drain Action (every node was drained already): only
    the jobs are waited for."""
    check_every = settings.MAINTENANCE_CHECK_SECONDS
    drain = None
    if parameters.get("drain_action_id") is not None:
        drain = Action.objects.filter(pk=parameters["drain_action_id"]).first()
        if drain is None or drain.status in (ActionStatus.FAILED, ActionStatus.CANCELLED):
            why = f"it {drain.status}: {drain.last_error}" if drain else "it was deleted"
            give_up()
            raise PermanentActionError(
                f"drain Action #{parameters['drain_action_id']} did not succeed ({why}); "
                f"{nothing_done}"
            )
        if drain.status != ActionStatus.SUCCEEDED:
            raise ActionWaiting({"phase": "draining", "drain_action_id": drain.pk,
                                 "progress": f"waiting for drain Action #{drain.pk} "
                                             f"({drain.status})"},
                                check_again_in=check_every)
    progress = _drain_progress(nodes)
    if not progress.empty and not forced:
        deadline = datetime.fromisoformat(parameters["deadline"])
        if timezone.now() >= deadline:
            give_up()
            raise PermanentActionError(
                f"the nodes were not empty by the deadline ({parameters['deadline']}): "
                f"{progress.describe()}; {nothing_done}.{advice}"
            )
        raise ActionWaiting({"phase": "waiting_for_jobs",
                             "drain_action_id": drain.pk if drain else None,
                             "progress": progress.describe(), "deadline": parameters["deadline"],
                             **progress.as_dict()},
                            check_again_in=check_every)
    return drain, progress


def _drain_progress(nodes: list[str]) -> DrainProgress:
    try:
        return drain_progress(nodes)
    except SlurmUnavailable as error:
        raise TransientActionError(f"Slurm controller unreachable: {error}") from error
    except SlurmError as error:
        raise PermanentActionError(f"Slurm: {error}; no port was shut") from error


def _ports_to_shut(maintenance: Maintenance, switch: Switch) -> list[str]:
    """The maintenance's ports that are up on the switch now, remembered before anything is
    shut: an attempt re-run after a lost worker finds them written and shuts (again) the same
    ones rather than taking its own shut ports for ones that were down before."""
    with transaction.atomic():
        locked = Maintenance.objects.select_for_update().get(pk=maintenance.pk)
        if locked.shut_ports is None:
            driver = _driver(switch)
            with _talking_to(switch.hostname):
                up = {port.name for port in driver.ports() if port.known_admin_up}
            locked.shut_ports = [name for name in locked.ports if name in up]
            locked.save(update_fields=["shut_ports"])
        return list(locked.shut_ports)


def _give_up(maintenance: Maintenance) -> None:
    Maintenance.objects.filter(pk=maintenance.pk, status=Maintenance.Status.STARTING,
                               shut_ports__isnull=True).update(status=Maintenance.Status.FAILED)


@register_action_handler(MAINTENANCE_END_ACTION,
                         description="End a maintenance: start exactly the ports it shut, then "
                                     "resume exactly the nodes it drained.",
                         max_attempts=10)
def end_maintenance(action: Action) -> dict:
    parameters = action.parameters
    switch = _switch(parameters["switch_id"], parameters["switch"])
    ports = list(parameters["ports"])
    nodes = list(parameters["nodes"])
    states = _set_ports_and_read_back(switch, ports, up=True, action=action) if ports else {}
    if nodes:
        try:
            get_slurm_driver().resume(nodes)
        except SlurmUnavailable as error:
            raise TransientActionError(f"Slurm controller unreachable: {error}") from error
        except SlurmError as error:
            started = ", ".join(ports) or "none"
            raise PermanentActionError(f"Slurm refused the resume: {error} (ports started: "
                                       f"{started})") from error
    Maintenance.objects.filter(pk=parameters["maintenance_id"]).update(
        status=Maintenance.Status.ENDED, ended_at=timezone.now())
    return {"switch": switch.hostname, "ports": states, "resumed": nodes,
            "kept_drained": parameters.get("kept_drained", {})}


@register_action_handler(WINDOW_NODES_ACTION,
                         description="Wait until the nodes a maintenance window names on their "
                                     "own (not behind its switches) are drained and empty.",
                         max_attempts=10)
def window_nodes_drained(action: Action) -> dict:
    parameters = action.parameters
    nodes = list(parameters["nodes"])
    drain, progress = _wait_until_empty(
        parameters, nodes, nothing_done="they stay drained",
        advice=" End the window to resume the nodes it drained.", give_up=lambda: None)
    return {"phase": "drained", "window_id": parameters["window_id"],
            "drain_action_id": drain.pk if drain else None, "nodes": nodes,
            "progress": progress.describe()}


@register_action_handler(WINDOW_END_ACTION,
                         description="End a maintenance window: start exactly the ports its "
                                     "maintenances shut on each switch, then resume exactly the "
                                     "nodes it drained.",
                         max_attempts=10)
def end_window(action: Action) -> dict:
    """Safe to run again after a lost worker or a transient error: starting a port that is up
    and resuming a node that is idle change nothing."""
    parameters = action.parameters
    started = {}
    for entry in parameters["switches"]:
        switch = _switch(entry["switch_id"], entry["switch"])
        ports = list(entry["ports"])
        started[switch.hostname] = (_set_ports_and_read_back(switch, ports, up=True,
                                                             action=action) if ports else {})
    nodes = list(parameters["nodes"])
    if nodes:
        try:
            get_slurm_driver().resume(nodes)
        except SlurmUnavailable as error:
            raise TransientActionError(f"Slurm controller unreachable: {error}") from error
        except SlurmError as error:
            raise PermanentActionError(
                f"Slurm refused the resume: {error} (ports started on "
                + (", ".join(f"{name}: {len(ports)}" for name, ports in started.items())
                   or "no switch") + ")") from error
    Maintenance.objects.filter(
        pk__in=[entry["maintenance_id"] for entry in parameters["switches"]]).update(
        status=Maintenance.Status.ENDED, ended_at=timezone.now())
    return {"window_id": parameters["window_id"], "ports": started, "resumed": nodes,
            "kept_drained": parameters.get("kept_drained", {})}


def _qos_lease_seconds(action: Action) -> float:
    # Reprogramming PFC port by port takes minutes on a real switch; a pod holds eight or more.
    return QOS_LEASE_SECONDS_PER_SWITCH * max(1, len(action.parameters.get("switches", [])))


@register_action_handler(APPLY_QOS_ACTION,
                         description="Apply a RoCE QoS profile (ECN/WRED, PFC, buffers) to "
                                     "switches.",
                         lease_seconds=_qos_lease_seconds)
def apply_qos(action: Action) -> dict:
    profile_values = dict(action.parameters["profile"])
    profile_values["pfc_priorities"] = tuple(profile_values["pfc_priorities"])
    profile = QosProfile(**profile_values)
    applied = []
    for entry in action.parameters["switches"]:
        switch = _switch(entry["id"], entry["hostname"])
        driver = _driver(switch)
        with _talking_to(switch.hostname):
            driver.apply_qos_profile(profile)
        applied.append(switch.hostname)
    return {"profile": profile.name, "switches": applied}


@register_action_handler(SAVE_CONFIG_ACTION,
                         description="Persist a switch's running configuration (config save -y).")
def save_config(action: Action) -> dict:
    switch = _switch(action.parameters["switch_id"], action.parameters["switch"])
    driver = _driver(switch)
    with _talking_to(switch.hostname):
        driver.save_config()
    return {"switch": switch.hostname, "saved": True}


@register_action_handler(ENABLE_ECN_COUNTERS_ACTION,
                         description="Collect a switch's ECN-marked queue counters "
                                     "(counterpoll wredqueue enable).")
def enable_ecn_counters(action: Action) -> dict:
    switch = _switch(action.parameters["switch_id"], action.parameters["switch"])
    driver = _driver(switch)
    with _talking_to(switch.hostname):
        state = driver.enable_ecn_counters()
    # Shown at once; the next poll confirms it from the counters themselves.
    SwitchPollState.objects.filter(switch=switch).update(ecn_counters=state)
    return {"switch": switch.hostname, "ecn_counters": state}


@register_action_handler(
    WINDOW_RESERVATION_ACTION,
    description="Make the Slurm MAINT reservation of a maintenance window match the window.",
)
def sync_window_reservation(action: Action) -> dict:
    """Reconciles, so a late or repeated run leaves Slurm as the window now is: a scheduled or
    running window's nodes reserved (flags=MAINT) until its planned end, no reservation for
    one that ended, was cancelled or is gone."""
    name = action.parameters["reservation"]
    window = MaintenanceWindow.objects.filter(pk=action.parameters["window_id"]).first()
    driver = get_slurm_driver()
    now = timezone.now()
    if window is None or not window.is_open or window.planned_end <= now:
        _call_slurm(driver.delete_reservation, name)
        return {"reservation": name, "deleted": True}
    # Slurm refuses a start in the past; a window started early holds its nodes from then.
    start = min(window.planned_start, window.started_at or window.planned_start)
    wanted = SlurmReservation(
        name=name, accounts=(reservation_account(),), node_names=tuple(window.reserved_nodes),
        start=max(start, now), end=window.planned_end, flags=WINDOW_RESERVATION_FLAGS,
    )
    _call_slurm(driver.create_or_update_reservation, wanted)
    return {"reservation": name, "nodes": len(wanted.node_names),
            "start": wanted.start.isoformat(), "end": wanted.end.isoformat(),
            "flags": list(wanted.flags)}
