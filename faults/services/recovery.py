"""A ticket's recovery actions in one click, the ticket as the reason.

Each step becomes a durable Action through the owning app's service (jobs: drain, resume;
inventory: a power cycle through the node's BMC; fabric: port shutdown and startup), with the
reason "FT-12: <summary>", linked to the ticket and put on its timeline. Who may do what follows
the owning app: responders (admin, operator, on-call) drain and resume; power and switch ports
are for the roles the owning app names (portal/roles.py).

The steps come in the order it is safe to take them, and the first is the page's primary button:
a node that still runs work is drained first; a drained node on an open ticket is recovered (its
BMC power cycle, a port started) before it is resumed; a resume is the primary step only once the
ticket is resolved or verified. A resume while a critical ticket is still open, and resolving a
ticket whose node still drains or runs jobs, need `confirm` (409 naming it otherwise): the page
asks, the API says why.

Every Action queued anywhere (the node page, the API, a bulk drain) for the node or port of an
open ticket is linked to that ticket and put on its timeline (`link_action_to_open_tickets`,
registered with portal.services.actions), so the ticket tells all that was done for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from faults.models import FaultTicket, Severity, TimelineKind
from faults.selectors import action_targets, validation_hold, validation_summary
from faults.services.timeline import add_timeline_entry, publish_ticket_event
from faults.workflow import OPEN_STATUSES, Status
from inventory.bmc.guards import power_blockers
from inventory.bmc.power import request_power_action
from inventory.bmc.targets import has_bmc
from inventory.hostlist import compress_hostlist
from inventory.models import Node
from jobs.services import DRAIN_ACTION, request_drain, request_reboot, request_resume
from jobs.validation_run import VALIDATE_ACTION, owned_by_node_health_check, request_validation
from portal.errors import Conflict, InvalidInput
from portal.models import Action, ActionStatus
from portal.models.actions import TERMINAL_STATUSES
from portal.roles import may
from portal.services.audit import record_change

DRAINED_STATES = frozenset({"drained", "draining"})
RECOVERY_STEP_NAMES = (
    "drain", "reboot", "power_cycle", "validate", "resume", "shut_port", "start_port",
)
# After the fix, before the ticket closes: the node may still wait drained for its resume.
RESUMABLE_STATUSES = frozenset({*OPEN_STATUSES, Status.RESOLVED, Status.VERIFIED})


@dataclass(frozen=True)
class RecoveryStep:
    step: str
    label: str
    capability: str  # portal/roles.py: who may take the step
    # Why the step asks "are you sure?" first (empty: it does not); the API's `confirm`.
    confirmation: str = ""
    # Why a resume needs an operator's reason (faults.selectors.validation_hold; empty: it does
    # not); the API's `override_reason`.
    override_needed: str = ""


def _impact_nodes(ticket: FaultTicket) -> list[Node]:
    """A ticket on a switch (a leaf's maintenance) has no node of its own: the nodes its impact
    named at detection are the ones to bring back."""
    names = [row.get("hostname") for row in (ticket.impact or {}).get("nodes", [])]
    return list(Node.objects.filter(hostname__in=[name for name in names if name])
                .order_by("hostname"))


def _cleared(ticket: FaultTicket) -> bool:
    """Whether the fault is behind the node: resolved by a person, or its signal cleared (the
    node answers again, the link is up). An XID never clears by itself."""
    return ticket.status not in OPEN_STATUSES or ticket.signal_cleared_at is not None


def _resume_confirmation(ticket: FaultTicket, hostnames: str) -> str:
    if not _cleared(ticket) and ticket.severity == Severity.CRITICAL:
        return (f"{ticket.reference} is a critical fault that is still {ticket.status}: "
                f"resuming {hostnames} puts jobs back on it before it is resolved.")
    return ""


def _node_steps(ticket: FaultTicket, node: Node) -> list[RecoveryStep]:
    if node.slurm_state == "rebooting":
        # Slurm is rebooting it (REBOOT_ISSUED): the reboot's Action shows its progress and
        # ends when the node is back; neither a drain nor another restart makes sense meanwhile.
        return []
    out_of_service = node.slurm_state in DRAINED_STATES or node.slurm_state == "down"
    if not out_of_service:
        # A drain already on its way (the policy's) is not offered again: its Action shows.
        draining = ticket.actions.filter(kind=DRAIN_ACTION).exclude(
            status__in=TERMINAL_STATUSES).exists()
        # A node its validation put back into service is not offered for draining again: the
        # check passed; a new event on the ticket drains it through its policy if need be.
        validated = bool((ticket.validation or {}).get("passed"))
        if ticket.status in OPEN_STATUSES and not draining and not validated:
            return [RecoveryStep("drain", f"Drain {node.hostname}", "drain")]
        return []
    hold = validation_hold(ticket)
    resume = RecoveryStep("resume", f"Resume {node.hostname}", "resume",
                          _resume_confirmation(ticket, node.hostname), hold)
    # Restarted (or repaired) for the ticket and not validated since: validating is what is
    # left to do, not another restart. After a failed validation a restart comes first again.
    restarted_unvalidated = bool(hold) and (ticket.validation or {}).get("passed", True)
    recover = []
    if not _cleared(ticket):
        # The paper's dominant recovery: a node restart. Through Slurm first (the node comes back
        # DOWN, to be validated, then resumed); the BMC's power cycle when that is not enough.
        recover.append(RecoveryStep("reboot", f"Reboot {node.hostname} through Slurm", "reboot"))
        if has_bmc(node):
            recover.append(
                RecoveryStep("power_cycle", f"Power cycle {node.hostname} (BMC)", "power"))
    # A reboot through Slurm for the ticket leaves a node that was drained DOWN (nextstate=DOWN;
    # measured on 22.05: DOWN, the drain gone, the reboot's reason kept): that node is waiting
    # for its validation just as a drained one is.
    left_down = node.slurm_state == "down" and restarted_unvalidated
    if (node.slurm_state in DRAINED_STATES or left_down) and not owned_by_node_health_check(
            node.slurm_reason):
        # The checked way back comes before the plain resume (jobs/validation_run.py); a node
        # NHC drained is NHC's to resume.
        validate = RecoveryStep("validate", f"Validate, then resume {node.hostname}", "resume")
        if ticket.status in OPEN_STATUSES and ticket.signal_cleared_at is not None:
            # The signal cleared by itself (the link is up, the node answers): its cause is gone
            # and the plain resume is the next step; validation stays offered.
            return [resume, validate]
        if _cleared(ticket) or restarted_unvalidated:
            return [validate, resume, *recover] if _cleared(ticket) else [
                validate, *recover, resume]
        return [*recover, validate, resume]
    # Once the fault is behind the node, bringing it back is the next step; before, recovering it.
    return [resume, *recover] if _cleared(ticket) else [*recover, resume]


def recovery_steps(ticket: FaultTicket, *, user=None) -> list[RecoveryStep]:
    """The one-click steps that fit the ticket's components and state, safest first (the first
    is the page's primary step), and, with `user`, that the user's role may take."""
    if ticket.status not in RESUMABLE_STATUSES:
        return []
    steps: list[RecoveryStep] = []
    node = ticket.node
    if node is not None:
        steps.extend(_node_steps(ticket, node))
    elif ticket.switch_id and ticket.port_id is None:
        drained = [n.hostname for n in _impact_nodes(ticket) if n.slurm_state in DRAINED_STATES]
        if drained:
            hostlist = compress_hostlist(drained)
            steps.append(RecoveryStep("resume", f"Resume {hostlist}", "resume",
                                      _resume_confirmation(ticket, hostlist),
                                      validation_hold(ticket)))
    port = ticket.port
    if port is not None and ticket.status in OPEN_STATUSES:
        where = f"{port.switch.hostname} {port.name}"
        if port.admin_status == "down":
            # While the port is shut, bringing it back is the recovery; resuming a node whose
            # rail is still cut off is not.
            steps.insert(0, RecoveryStep("start_port", f"Start up {where}", "act_on_switch"))
        else:
            steps.append(RecoveryStep("shut_port", f"Shut down {where}", "act_on_switch"))
    if ticket.status not in OPEN_STATUSES:
        steps = [step for step in steps if step.step == "resume"]
    if user is not None:
        steps = [step for step in steps if may(user, step.capability)]
    return steps


def _reason(ticket: FaultTicket, note: str = "") -> str:
    reason = f"{ticket.reference}: {ticket.summary}"
    if note:
        reason = f"{ticket.reference}: {note} ({ticket.summary})"
    return " ".join(reason.split())[:900]


def request_recovery(*, ticket: FaultTicket, step: str, actor, via: str = "api",
                     confirm: bool = False, override_reason: str = "") -> Action:
    """Queue `step` (recovery_steps) for `ticket` as an Action with the ticket as reason.
    `override_reason`: why a resume goes ahead without a passed validation (validation_hold)."""
    with transaction.atomic():
        FaultTicket.objects.select_for_update().filter(pk=ticket.pk).exists()  # one at a time
        ticket = FaultTicket.objects.select_related("node", "port__switch").get(pk=ticket.pk)
        if ticket.status not in RESUMABLE_STATUSES:
            raise Conflict({"step": [f"{ticket.reference} is {ticket.status}: reopen it first."]})
        offered = {option.step: option for option in recovery_steps(ticket)}
        if step not in offered:
            names = ", ".join(offered) or "none"
            raise InvalidInput({"step": [f"{step!r} does not apply to {ticket.reference} now; "
                                         f"its steps: {names}."]})
        option = offered[step]
        if not may(actor, option.capability):
            raise Conflict({"step": [f"Your role may not {option.label.lower()}."]})
        if option.confirmation and not confirm:
            raise Conflict({"confirm": [f"{option.confirmation} Repeat with confirm to do it."]})
        if step == "drain":
            action, _ = request_drain(nodes=[ticket.node], reason=_reason(ticket),
                                      requested_by=actor, via=via)
        elif step == "reboot":
            # Back DOWN, not resumed: the node returns to service through validate, then resume.
            action, _ = request_reboot(nodes=[ticket.node], reason=_reason(ticket),
                                       next_state="down", requested_by=actor, via=via)
        elif step == "power_cycle":
            action, _ = request_power_action(node=ticket.node, operation="power_cycle",
                                             reason=_reason(ticket), requested_by=actor, via=via)
        elif step == "validate":
            action, _ = request_validation(node=ticket.node, ref=ticket.reference,
                                           reason=_reason(ticket, "validate, then resume"),
                                           requested_by=actor, via=via)
        elif step == "resume":
            nodes = [ticket.node] if ticket.node is not None else [
                node for node in _impact_nodes(ticket) if node.slurm_state in DRAINED_STATES
            ]
            return request_resume_for_ticket(ticket=ticket, nodes=nodes, actor=actor, via=via,
                                             override_reason=override_reason)
        else:
            from fabric.services import request_port_admin

            action, _ = request_port_admin(
                switch=ticket.port.switch, ports=[ticket.port.name], up=step == "start_port",
                reason=_reason(ticket), requested_by=actor, via=via,
            )
        _record(ticket, action, actor, option.label)
    return action


def resolve_blockers(ticket: FaultTicket) -> list[str]:
    """Why resolving `ticket` now may be early: its node was taken out of service and its jobs
    have not left yet (draining), so the fix cannot have been carried out. A node back in
    service that runs jobs again is no reason to wait."""
    node = ticket.node
    if node is None or node.slurm_state != "draining":
        return []
    jobs = power_blockers([node]).get(node.hostname, [])
    return [f"{node.hostname} is still draining" + (f" and runs {', '.join(jobs)}" if jobs else "")]


def request_resume_for_ticket(*, ticket: FaultTicket, nodes: list[Node], actor, note: str = "",
                              via: str = "faults", override_reason: str = "") -> Action:
    """Resume `nodes` for this ticket: its own hold on them is the reason to resume, so only
    other open tickets (or other guards) refuse it (409 naming them). A node restarted or
    repaired for the ticket comes back only through a passed validation (validation_hold, the
    rule the node page and the API follow too) unless `override_reason` says why not; the
    override is put on the timeline and in the audit log."""
    hold = validation_hold(ticket)
    override_reason = " ".join((override_reason or "").split())[:500]
    if hold and not override_reason:
        raise Conflict(
            {"override_reason": [f"{hold}. Validate, then resume; or resume anyway giving the "
                                 "reason in override_reason."]},
            blocked_nodes=sorted(node.hostname for node in nodes),
        )
    # The faults resume guard holds a node for every open ticket on it; this ticket's hold is
    # what the resume answers, so the override is given only when no other ticket holds one.
    others = (
        FaultTicket.objects.filter(node__in=nodes, status__in=OPEN_STATUSES)
        .exclude(pk=ticket.pk)
        .select_related("node")
        .order_by("pk")
    )
    if others:
        held = [f"{other.node.hostname}: open fault ticket {other.reference} ({other.status}): "
                f"{other.summary}" for other in others]
        raise Conflict({"override": held},
                       blocked_nodes=sorted({other.node.hostname for other in others}))
    action, _ = request_resume(nodes=nodes, reason=_reason(ticket, note), requested_by=actor,
                               override=True, via=via)
    label = f"Resume {compress_hostlist([node.hostname for node in nodes])}"
    if hold:
        label += f" without a passed validation ({hold}), overridden: {override_reason}"
        record_change(actor=actor, operation="update", instance=ticket,
                      after={"action": action.pk, "hold": hold, "reason": override_reason},
                      note=f"resume without a passed validation: {override_reason}", via=via)
    _record(ticket, action, actor, label)
    return action


def is_a_validation(action: Action) -> bool:
    return action.kind == VALIDATE_ACTION


def record_validation_result(action: Action) -> None:
    """The finished listener (portal.services.actions): a validation job's result goes on the
    tickets it was run for, as their `validation` field and a timeline entry, in the same
    transaction that ends the Action."""
    if action.kind != VALIDATE_ACTION:
        return
    parameters = action.parameters or {}
    result = action.result if isinstance(action.result, dict) else {}
    passed = action.status == ActionStatus.SUCCEEDED and bool(result.get("passed"))
    validation = {
        "passed": passed,
        "action": action.pk,
        "job_id": result.get("job_id") or "",
        "state": result.get("state") or ("" if passed else "NOT RUN"),
        "exit_code": result.get("exit_code"),
        "command": parameters.get("command", ""),
        "output_tail": list(result.get("output_tail") or []),
        "finished_at": (action.finished_at or timezone.now()).isoformat(),
        # The Action itself failed (Slurm refused, the job never finished): its own message.
        "error": "" if action.status == ActionStatus.SUCCEEDED else action.last_error[:500],
    }
    outcome = "passed" if passed else "FAILED"
    after = (f"{parameters.get('node', action.target)} is back in service" if passed else
             f"{parameters.get('node', action.target)} stays drained")
    for ticket in FaultTicket.objects.filter(actions=action).order_by("pk"):
        FaultTicket.objects.filter(pk=ticket.pk).update(validation=validation,
                                                        updated_at=timezone.now())
        ticket.validation = validation
        add_timeline_entry(
            ticket, TimelineKind.AUTOMATIC,
            f"Validation {outcome}: {validation_summary(validation)} "
            f"(command {validation['command']!r}); {after}.",
            action=action,
        )
        publish_ticket_event(ticket, "fault.updated")


def _record(ticket: FaultTicket, action: Action, actor, label: str) -> None:
    authenticated = getattr(actor, "is_authenticated", False)
    if not ticket.actions.filter(pk=action.pk).exists():
        ticket.actions.add(action)
    who = actor.get_username() if authenticated else "policy"
    add_timeline_entry(ticket, TimelineKind.AUTOMATIC if not authenticated else TimelineKind.NOTE,
                       f"{label}: Action #{action.pk} queued by {who}, reason \"{action.reason}\".",
                       author=actor, action=action)
    if authenticated and ticket.acknowledged_at is None:
        # Acting on a ticket acknowledges it, as a transition does.
        FaultTicket.objects.filter(pk=ticket.pk).update(
            acknowledged_at=timezone.now(), responder=actor
        )
    publish_ticket_event(ticket, "fault.updated")


def link_action_to_open_tickets(action: Action) -> None:
    """Link a just-queued Action to the open tickets of the nodes and ports it acts on, with a
    timeline entry: a drain from the node page is part of the ticket's story too. Registered
    behind faults.selectors.action_touches_an_open_ticket, which finds the usual none."""
    nodes, switch, ports = action_targets(action)
    if not nodes and not ports:
        return
    touched = Q()
    if nodes:
        touched |= Q(node__hostname__in=nodes)
    if ports:
        touched |= Q(port__switch__hostname=switch, port__name__in=ports)
    keys = list(
        FaultTicket.objects.filter(touched, status__in=OPEN_STATUSES).values_list("pk", flat=True)
    )
    if not keys:
        return
    wanted = list(FaultTicket.objects.filter(pk__in=keys).order_by("pk"))
    requester = action.requested_by
    who = requester.get_username() if requester is not None else "the portal"
    for ticket in wanted:
        if action.reason.startswith(f"{ticket.reference}:"):
            continue  # the ticket's own step (policy, recovery): it records that itself
        ticket.actions.add(action)
        overridden = (action.parameters or {}).get("overridden") or []
        # A resume that set aside the ticket's hold (or its missing validation) says so here.
        set_aside = f" Overriding: {'; '.join(overridden)}." if overridden else ""
        add_timeline_entry(
            ticket, TimelineKind.LINKED,
            f"{action.kind} {action.target}: Action #{action.pk} queued by {who}, "
            f"reason \"{action.reason}\".{set_aside}",
            author=requester, action=action,
        )
        publish_ticket_event(ticket, "fault.updated")
