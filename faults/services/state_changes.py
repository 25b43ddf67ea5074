"""State changes in the fabric and Slurm become tickets, and their clearing is recorded.

Called through `fabric.hooks` (LinkChange, SwitchReachability) and `jobs.hooks`
(HealthCheckDrain, NodeRecovered, JobNodeFail), registered in FaultsConfig.ready(); those apps
call them "signals", which is why the handlers and `signal_cleared_at` keep the word (they are not
Django signals). Each change is kept as an IntakeRecord, then opens or attaches to a ticket
through the same de-duplication as every other intake (services.deduplication): a leaf port
going down opens a ticket on the port that names the node behind it, so the health check
draining that node a moment later attaches to it.

When a signal clears (the port is up, the node healthy, the switch answering), the open tickets it
raised record it, and the rule's `on_clear` proposes the resume of the nodes still drained (or
`auto_on_clear` queues it, the ticket as reason).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from faults.models import Category, FaultTicket, IntakeRecord, Source, TimelineKind
from faults.parsing import Components, Incident
from faults.policies import STEP_DESCRIPTIONS, Rule, rule_for
from faults.services.deduplication import apply_incident
from faults.services.intake import record_intake
from faults.services.recovery import DRAINED_STATES, request_resume_for_ticket
from faults.services.timeline import add_timeline_entry, publish_ticket_event
from faults.workflow import OPEN_STATUSES
from inventory.hostlist import compress_hostlist
from inventory.models import NIC, Node, Switch, SwitchPort
from inventory.selectors import active_cables
from portal.errors import Conflict
from portal.models import Action

logger = logging.getLogger(__name__)

LEAF_MAINTENANCE_KIND = "fabric.leaf_maintenance"
PORT_ACTION_KINDS = ("fabric.port_admin", LEAF_MAINTENANCE_KIND)
# How far back a port-down seen by the poll looks for the portal Action that shut the port.
CAUSING_ACTION_WINDOW = timedelta(hours=1)


def _apply(incident: Incident, raw: dict) -> FaultTicket:
    record = record_intake(channel=incident.source, raw_body=json.dumps(raw))
    ticket, _ = apply_incident(incident, actor=None, intake=record)
    IntakeRecord.objects.filter(pk=record.pk).update(accepted=True)
    record.tickets.add(ticket)
    return ticket


def _incident(source: str, rule: Rule, components: Components, summary: str, details: dict,
              *, category: str | None = None, subtype: str | None = None) -> Incident:
    return Incident(
        source=source,
        rule=rule,
        components=components,
        summary=summary[:300],
        detected_at=timezone.now(),
        category=category or rule.category,
        subtype=rule.subtype if subtype is None else subtype,
        severity=rule.severity,
        details=details,
    )


# -- the fabric ----------------------------------------------------------------------------------


def on_fabric_signals(signals: list) -> None:
    """The changes one poll or one switch Action saw. Ports shut by a maintenance that has not
    ended are planned work and open nothing (fabric's `ports_under_maintenance`); ports an older
    leaf-maintenance Action without a Maintenance record shut become one ticket on the switch;
    every other change is its own, each in a savepoint so one failing is logged and the others
    still land."""
    from fabric.hooks import LinkChange, SwitchReachability
    from fabric.selectors import ports_under_maintenance

    planned: dict[str, set[str]] = {}
    maintenance: dict[tuple[str, int], list] = defaultdict(list)
    for signal in signals:
        if isinstance(signal, LinkChange) and not signal.up and not signal.admin_up:
            if signal.switch not in planned:
                planned[signal.switch] = ports_under_maintenance(signal.switch)
            if signal.port in planned[signal.switch]:
                # Planned work is not a fault: a port its maintenance shut opens no ticket. A
                # link that fails on its own (admin up, oper down) during the work still does.
                continue
        if isinstance(signal, LinkChange) and not signal.up and signal.action_id:
            action = Action.objects.filter(pk=signal.action_id).only("kind").first()
            if action is not None and action.kind == LEAF_MAINTENANCE_KIND:
                maintenance[(signal.switch, signal.action_id)].append(signal.port)
                continue
        if isinstance(signal, LinkChange):
            handler = _link_up if signal.up else _link_down
        elif isinstance(signal, SwitchReachability):
            handler = _switch_answering if signal.reachable else _switch_unreachable
        else:
            continue
        _safely(handler, signal)
    for (switch, action_id), ports in maintenance.items():
        _safely(_maintenance_shut, switch, action_id, ports)


def _safely(handler, *arguments) -> None:
    try:
        with transaction.atomic():
            handler(*arguments)
    except Exception:
        logger.exception("fault intake of %s%r failed", handler.__name__, arguments)


def _port(switch_name: str, port_name: str) -> SwitchPort | None:
    return SwitchPort.objects.select_related("switch").filter(
        switch__hostname=switch_name, name=port_name
    ).first()


def _nics_behind(port: SwitchPort) -> list[NIC]:
    """The NICs cabled to `port` (or to its breakout halves)."""
    port_ids = [port.pk, *port.breakout_children.values_list("pk", flat=True)]
    cables = active_cables().filter(Q(a_port_id__in=port_ids) | Q(b_port_id__in=port_ids))
    nic_ids = [nic for pair in cables.values_list("a_nic", "b_nic") for nic in pair if nic]
    return list(NIC.objects.select_related("node").filter(pk__in=nic_ids).order_by("device"))


def _nic_words(nic: NIC) -> str:
    rail = f" (rail {nic.rail})" if nic.rail is not None else f" ({nic.role})"
    return f"{nic.node.hostname} {nic.device}{rail}"


def _causing_action(switch: Switch, port: str, action_id: int | None) -> Action | None:
    """The portal Action that shut the port: the one that reported it, or a recent port or
    maintenance Action on the switch naming the port."""
    if action_id:
        return Action.objects.filter(pk=action_id).first()
    since = timezone.now() - CAUSING_ACTION_WINDOW
    recent = Action.objects.filter(kind__in=PORT_ACTION_KINDS, created_at__gte=since).order_by(
        "-created_at"
    )
    for action in recent[:50]:
        parameters = action.parameters or {}
        if parameters.get("switch") == switch.hostname and port in parameters.get("ports", []):
            if parameters.get("up") is True:
                continue
            return action
    return None


def _link_action(ticket: FaultTicket, action: Action | None, text: str) -> None:
    if action is None or ticket.actions.filter(pk=action.pk).exists():
        return
    ticket.actions.add(action)
    add_timeline_entry(ticket, TimelineKind.AUTOMATIC, text, action=action)


def _link_down(signal) -> None:
    port = _port(signal.switch, signal.port)
    if port is None:
        return
    switch = port.switch
    nics = _nics_behind(port)
    nodes = sorted({nic.node.hostname for nic in nics})
    shut = not signal.admin_up
    rule = rule_for("port_shut" if shut else "link_down")
    category = subtype = None
    if shut:
        category = (Category.STORAGE_SWITCH if switch.role == Switch.Role.STORAGE
                    else Category.INTERCONNECT_SWITCH)
        subtype = switch.role if switch.role in (Switch.Role.LEAF, Switch.Role.SPINE) else ""
    behind = f": {', '.join(_nic_words(nic) for nic in nics)} cut off" if nics else ""
    summary = f"{switch.hostname} {port.name} {'shut down' if shut else 'link down'}{behind}"
    components = Components(switch=switch, port=port)
    if len(nodes) == 1:
        components.node = nics[0].node  # the node's own signals (its drain) attach here
    details = {"admin": "up" if signal.admin_up else "down",
               "oper": "up" if signal.oper_up else "down"}
    if nodes:
        details["nodes"] = compress_hostlist(nodes)
    incident = _incident(Source.SWITCH, rule, components, summary, details,
                         category=category, subtype=subtype)
    ticket = _apply(incident, {"signal": "link_down", "switch": switch.hostname,
                               "port": port.name, **details})
    action = _causing_action(switch, port.name, signal.action_id) if shut else None
    if action is not None:
        who = action.requested_by.get_username() if action.requested_by_id else "the portal"
        _link_action(ticket, action, f"Caused by Action #{action.pk} ({action.kind}, by {who}: "
                                     f"\"{action.reason}\").")


def _maintenance_shut(switch_name: str, action_id: int, ports: list[str]) -> None:
    """A leaf's maintenance shut its host ports: one ticket on the switch, its impact taken on
    all those ports (its target names them, so their coming back up finds it)."""
    switch = Switch.objects.filter(hostname=switch_name).first()
    action = Action.objects.filter(pk=action_id).first()
    if switch is None or action is None:
        return
    rule = rule_for("port_shut")
    port_rows = list(SwitchPort.objects.filter(switch=switch, name__in=ports))
    nodes = sorted({nic.node.hostname for port in port_rows for nic in _nics_behind(port)})
    hostlist = compress_hostlist(nodes) if nodes else "no node"
    summary = (f"{switch.hostname}: {len(ports)} host ports shut for maintenance "
               f"(Action #{action.pk}); {hostlist} cut off")
    subtype = switch.role if switch.role in (Switch.Role.LEAF, Switch.Role.SPINE) else ""
    category = (Category.STORAGE_SWITCH if switch.role == Switch.Role.STORAGE
                else Category.INTERCONNECT_SWITCH)
    details = {"ports": ",".join(sorted(ports)), "action": action.pk}
    incident = _incident(Source.SWITCH, rule, Components(switch=switch), summary, details,
                         category=category, subtype=subtype)
    incident.details["impact_target"] = f"port:{switch.hostname}:{details['ports']}"
    ticket = _apply(incident, {"signal": "maintenance_shut", "switch": switch.hostname,
                               **details})
    who = action.requested_by.get_username() if action.requested_by_id else "the portal"
    _link_action(ticket, action, f"Caused by Action #{action.pk} ({action.kind}, by {who}: "
                                 f"\"{action.reason}\").")


def _maintenance_tickets_for(port: SwitchPort) -> list[tuple[FaultTicket, list[str]]]:
    """Open maintenance tickets on the port's switch whose ports include it, with the ports."""
    found = []
    prefix = f"port:{port.switch.hostname}:"
    for ticket in _open(FaultTicket.objects.filter(switch=port.switch, port__isnull=True)):
        target = (ticket.impact or {}).get("target", "")
        if target.startswith(prefix):
            names = target[len(prefix):].split(",")
            if port.name in names:
                found.append((ticket, names))
    return found


def _link_up(signal) -> None:
    port = _port(signal.switch, signal.port)
    if port is None:
        return
    for ticket, names in _maintenance_tickets_for(port):
        if ticket.signal_cleared_at is not None:
            continue  # already recorded when the first of these signals found all ports up
        rows = list(SwitchPort.objects.filter(switch=port.switch, name__in=names))
        if all(row.admin_status == "up" and row.oper_status == "up" for row in rows):
            nodes = [nic.node for row in rows for nic in _nics_behind(row)]
            record_signal_cleared(
                ticket, text=f"all {len(rows)} ports of {port.switch.hostname} are up again.",
                rule=rule_for("port_shut"), nodes=nodes,
                action=Action.objects.filter(pk=signal.action_id).first()
                if signal.action_id else None,
            )
    nics = _nics_behind(port)
    tickets = _open(FaultTicket.objects.filter(port=port))
    action = Action.objects.filter(pk=signal.action_id).first() if signal.action_id else None
    for ticket in tickets:
        rule = rule_for("port_shut" if ticket.category != Category.NIC_TRANSCEIVER
                        else "link_down")
        by = f" by Action #{action.pk}" if action else ""
        record_signal_cleared(
            ticket,
            text=f"{port.switch.hostname} {port.name} is up again{by}.",
            rule=rule,
            nodes=[nic.node for nic in nics],
            action=action,
        )


def _switch_unreachable(signal) -> None:
    switch = Switch.objects.select_related("pod").filter(hostname=signal.switch).first()
    if switch is None:
        return
    rule = rule_for("switch_unreachable")
    category = (Category.STORAGE_SWITCH if switch.role == Switch.Role.STORAGE
                else Category.INTERCONNECT_SWITCH)
    subtype = switch.role if switch.role in (Switch.Role.LEAF, Switch.Role.SPINE) else ""
    summary = (f"{switch.hostname} unreachable: {signal.consecutive_failures} polls in a row "
               f"failed ({signal.error[:150]})")
    incident = _incident(Source.SWITCH, rule, Components(switch=switch), summary,
                         {"error": signal.error[:500]}, category=category, subtype=subtype)
    _apply(incident, {"signal": "switch_unreachable", "switch": switch.hostname,
                      "error": signal.error[:500]})


def _switch_answering(signal) -> None:
    rule = rule_for("switch_unreachable")
    # The switch's own tickets (no port), opened as unreachable: not, say, a reboot's.
    tickets = _open(FaultTicket.objects.filter(
        switch__hostname=signal.switch, port__isnull=True, summary__contains=" unreachable: "
    ))
    for ticket in tickets:
        record_signal_cleared(ticket, text=f"{signal.switch} answers the poll again.", rule=rule,
                              nodes=[])


# -- Slurm ---------------------------------------------------------------------------------------


def on_slurm_signal(signal) -> None:
    from jobs.hooks import HealthCheckDrain, JobNodeFail, NodeRecovered

    if isinstance(signal, HealthCheckDrain):
        _health_check_drain(signal)
    elif isinstance(signal, NodeRecovered):
        _node_recovered(signal)
    elif isinstance(signal, JobNodeFail):
        _job_node_fail(signal)


def _health_check_drain(signal) -> None:
    node = signal.node
    rule = rule_for("health_check_drain")
    summary = f"{node.hostname} drained by the node health check: {signal.reason}"
    incident = _incident(Source.SLURM, rule, Components(node=node), summary,
                         {"reason": signal.reason})
    _apply(incident, {"signal": "health_check_drain", "node": node.hostname,
                      "reason": signal.reason})


def _node_recovered(signal) -> None:
    node = signal.node
    rule = rule_for("node_down" if signal.previous_state not in DRAINED_STATES
                    else "health_check_drain")
    answer = _recent_resume_of(node)
    for ticket in _open(FaultTicket.objects.filter(node=node)):
        record_signal_cleared(
            ticket,
            text=f"{node.hostname} is {signal.state} in Slurm (was {signal.previous_state}).",
            rule=rule,
            nodes=[node],
            action=answer,
        )


def _recent_resume_of(node: Node) -> Action | None:
    """The portal's resume that brought `node` back, if one did lately."""
    since = timezone.now() - CAUSING_ACTION_WINDOW
    for action in Action.objects.filter(kind="slurm.resume", created_at__gte=since).order_by(
        "-created_at"
    )[:50]:
        if node.hostname in (action.parameters or {}).get("nodes", []):
            return action
    return None


SIGNALLED_NODE_STATES = frozenset({"down", "not_responding", "fail", "failing"}) | DRAINED_STATES


def _job_node_fail(signal) -> None:
    job = signal.job
    rule = rule_for("node_fail")
    nodes = sorted(job.nodes.all(), key=lambda node: node.hostname)
    failing = [node for node in nodes if node.slurm_state in SIGNALLED_NODE_STATES]
    words = f"job {job.job_id} ({job.user}, {job.account}) ended NODE_FAIL on {job.nodelist}"
    raw = {"signal": "node_fail", "job": job.job_id, "nodes": job.nodelist}
    if failing:
        for node in failing:
            incident = _incident(Source.SLURM, rule, Components(node=node, job=job.job_id),
                                 f"{node.hostname} failed: {words}",
                                 {"job": job.job_id, "state": node.slurm_state})
            _apply(incident, raw)
        return
    # Slurm has not (yet) said which node failed: one ticket for the job, on its nodes.
    incident = _incident(Source.SLURM, rule, Components(job=job.job_id), words.capitalize(),
                         {"job": job.job_id, "nodes": job.nodelist})
    _apply(incident, raw)


# -- recovery ------------------------------------------------------------------------------------


def _open(tickets):
    return list(tickets.filter(status__in=OPEN_STATUSES).select_related("node").order_by("pk"))


def record_signal_cleared(ticket: FaultTicket, *, text: str, rule: Rule, nodes: list[Node],
                          action: Action | None = None) -> None:
    """The signal behind `ticket` cleared: say so on its timeline, and propose (or, where the
    rule's `auto_on_clear` says so, queue) the resume of the nodes still drained."""
    now = timezone.now()
    FaultTicket.objects.filter(pk=ticket.pk).update(signal_cleared_at=now, updated_at=now)
    ticket.signal_cleared_at = now
    add_timeline_entry(ticket, TimelineKind.CLEARED, f"Signal cleared: {text}", action=action)
    if action is not None:
        _link_action(ticket, action, f"Answered by Action #{action.pk} ({action.kind}).")
    fresh = Node.objects.filter(pk__in=[node.pk for node in nodes]).order_by("hostname")
    drained = [node for node in fresh if node.slurm_state in DRAINED_STATES]
    if drained and "resume" in rule.auto_on_clear:
        _resume(ticket, drained, rule)
    elif drained and "resume" in rule.on_clear:
        hostnames = compress_hostlist([node.hostname for node in drained])
        add_timeline_entry(
            ticket, TimelineKind.PROPOSAL,
            f"Proposed on recovery by policy {rule.kind}: {STEP_DESCRIPTIONS['resume']} "
            f"({hostnames}); the signal cleared.",
        )
    publish_ticket_event(ticket, "fault.updated")


def _resume(ticket: FaultTicket, nodes: list[Node], rule: Rule) -> None:
    try:
        action = request_resume_for_ticket(ticket=ticket, nodes=nodes, actor=None,
                                           note=f"policy {rule.kind}: the signal cleared")
    except Conflict as error:
        hostnames = compress_hostlist([node.hostname for node in nodes])
        add_timeline_entry(
            ticket, TimelineKind.PROPOSAL,
            f"Policy {rule.kind} would resume {hostnames}, but other tickets hold them: "
            f"{error.detail}. Resume by hand once they are dealt with.",
        )
        return
    logger.info("%s: resume queued as Action #%s", ticket.reference, action.pk)

