"""Reads of the faults app, restricted by who is asking, and what the workflow and the policy
say of a ticket (reopenable, repeat offender) for pages to show instead of restating.

Fault tickets are operational data about shared hardware: the cluster-wide roles (admin,
operator, on-call, viewer) see them; tenant admins see none at all.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, Prefetch, Q, QuerySet
from django.utils import timezone

from faults.models import (
    FaultTicket,
    IntakeRecord,
    RepairCase,
    RepairPart,
    TimelineEntry,
    TimelineKind,
)
from faults.policies import STEP_DESCRIPTIONS, repeat_threshold
from faults.repair_workflow import OPEN_REPAIR_STATUSES
from faults.workflow import BOARD_STATUSES, OPEN_STATUSES, is_reopenable
from inventory.models import GPU, Node, ReservationStatus, SpareReservation
from inventory.selectors import spare_stock_list
from portal.roles import may

SEVERITY_ORDER = {"critical": 0, "major": 1, "minor": 2}


def action_targets(action) -> tuple[list[str], str, list[str]]:
    """The nodes, the switch and its ports an Action's parameters name."""
    parameters = action.parameters or {}
    nodes = list(parameters.get("nodes") or [])
    if isinstance(parameters.get("node"), str):
        nodes.append(parameters["node"])
    switch = parameters.get("switch") if isinstance(parameters.get("switch"), str) else ""
    ports = list(parameters.get("ports") or []) if switch else []
    return [name for name in nodes if isinstance(name, str)], switch, ports


def action_touches_an_open_ticket(action) -> bool:
    """Whether a just-queued Action acts on a node or port with an open ticket. Asked for every
    drain and resume before Slurm hears of it, and the answer is nearly always no: a node's
    case is one statement written once (0.7 ms here, against 1.7 for the same query built by
    the ORM each time)."""
    nodes, switch, ports = action_targets(action)
    if ports and FaultTicket.objects.filter(
        port__switch__hostname=switch, port__name__in=ports, status__in=OPEN_STATUSES
    ).exists():
        return True
    if not nodes:
        return False
    with connection.cursor() as cursor:
        cursor.execute(_open_ticket_on_nodes_sql(len(nodes)), [*nodes, *sorted(OPEN_STATUSES)])
        return cursor.fetchone() is not None


@functools.lru_cache(maxsize=64)
def _open_ticket_on_nodes_sql(node_count: int) -> str:
    """From the models' own table and column names; one statement per list length."""
    quote = connection.ops.quote_name
    ticket, node = FaultTicket._meta, Node._meta
    placeholders = ", ".join(["%s"] * node_count)
    statuses = ", ".join(["%s"] * len(OPEN_STATUSES))
    return (
        f"SELECT 1 FROM {quote(ticket.db_table)} INNER JOIN {quote(node.db_table)} "  # noqa: S608 - names from the models' metadata only
        f"ON {quote(node.db_table)}.{quote(node.pk.column)} = "
        f"{quote(ticket.db_table)}.{quote(ticket.get_field('node').column)} "
        f"WHERE {quote(node.db_table)}.{quote(node.get_field('hostname').column)} "
        f"IN ({placeholders}) "
        f"AND {quote(ticket.db_table)}.{quote(ticket.get_field('status').column)} "
        f"IN ({statuses}) LIMIT 1"
    )


def ticket_list(*, user, filters: dict | None = None) -> QuerySet[FaultTicket]:
    """Tickets `user` may see, with the components the lists show, filtered by
    status (or "open"), category, severity, source, pod (name), node (hostname), component
    ("gpu", "nic", "switch", "port", "node") and q (summary text)."""
    if not may(user, "read_faults"):
        return FaultTicket.objects.none()
    tickets = FaultTicket.objects.select_related(
        "node__pod", "gpu", "nic__node", "switch", "port__switch", "responder"
    )
    filters = filters or {}
    status = filters.get("status")
    if status == "open":
        tickets = tickets.filter(status__in=OPEN_STATUSES)
    elif status:
        tickets = tickets.filter(status=status)
    if filters.get("category"):
        tickets = tickets.filter(category=filters["category"])
    if filters.get("severity"):
        tickets = tickets.filter(severity=filters["severity"])
    if filters.get("source"):
        # JSON list membership, written so SQLite (the embedded demo) understands it too.
        tickets = tickets.filter(sources__icontains=f'"{filters["source"]}"')
    if filters.get("pod"):
        pod = filters["pod"]
        tickets = tickets.filter(Q(node__pod__name=pod) | Q(switch__pod__name=pod))
    if filters.get("node"):
        tickets = tickets.filter(node__hostname=filters["node"])
    component = filters.get("component")
    if component in ("gpu", "nic", "switch", "port", "node"):
        tickets = tickets.filter(**{f"{component}__isnull": False})
        if component == "node":  # node-level: no more specific component named
            tickets = tickets.filter(gpu__isnull=True, nic__isnull=True)
    if filters.get("q"):
        tickets = tickets.filter(summary__icontains=filters["q"])
    return tickets


def ticket_get(*, user, pk: int) -> FaultTicket | None:
    return ticket_list(user=user).filter(pk=pk).first()


def board_columns(*, user, filters: dict | None = None) -> list[tuple[str, list[FaultTicket]]]:
    """The on-call board: tickets waiting for someone, one column per state."""
    tickets = ticket_list(user=user, filters={**(filters or {}), "status": ""}).filter(
        status__in=BOARD_STATUSES
    )
    by_status: dict[str, list[FaultTicket]] = {status: [] for status in BOARD_STATUSES}
    for ticket in tickets.order_by("detected_at"):
        by_status[ticket.status].append(ticket)
    for column in by_status.values():  # most severe first, then oldest first (sort is stable)
        column.sort(key=lambda ticket: SEVERITY_ORDER.get(ticket.severity, 9))
    return [(status, by_status[status]) for status in BOARD_STATUSES]


def ticket_timeline(ticket: FaultTicket) -> QuerySet[TimelineEntry]:
    return ticket.timeline.select_related("author", "action")


def component_history(ticket: FaultTicket) -> QuerySet[FaultTicket]:
    """Every other ticket on the same component, earlier or later: the same GPU serial (a GPU's
    history follows its serial from node to node), else the same node, else the same switch."""
    others = FaultTicket.objects.exclude(pk=ticket.pk).select_related("node", "gpu")
    if ticket.gpu_serial:
        return others.filter(gpu_serial=ticket.gpu_serial)
    if ticket.node_id:
        return others.filter(node_id=ticket.node_id)
    if ticket.switch_id:
        return others.filter(switch_id=ticket.switch_id)
    return others.none()


def earlier_tickets_for_component(ticket: FaultTicket) -> QuerySet[FaultTicket]:
    """The tickets that count towards `ticket` being a repeat offender: those of its history
    detected no later than it. Only a GPU's or a node's count: the repeat rule proposes an RMA
    with the vendor, which faults.policies asks for GPUs and nodes, never a switch."""
    if not (ticket.gpu_serial or ticket.node_id):
        return FaultTicket.objects.none()
    return component_history(ticket).filter(detected_at__lte=ticket.detected_at)


@dataclass(frozen=True)
class TicketStanding:
    """What the workflow and the policy say of a ticket now."""

    reopenable: bool  # the workflow lets its status come back as a new linked ticket
    earlier_tickets: int  # earlier_tickets_for_component
    repeat_threshold: int  # policies.repeat_threshold()

    @property
    def is_repeat_offender(self) -> bool:
        return self.earlier_tickets >= self.repeat_threshold


def ticket_standing(ticket: FaultTicket) -> TicketStanding:
    return TicketStanding(
        reopenable=is_reopenable(ticket.status),
        earlier_tickets=earlier_tickets_for_component(ticket).count(),
        repeat_threshold=repeat_threshold(),
    )


def is_repeat_offender(ticket: FaultTicket) -> bool:
    """The policy's repeat rule: FAULTS_REPEAT_THRESHOLD earlier tickets on the GPU or node."""
    return ticket_standing(ticket).is_repeat_offender


def component_standing(*, node: Node | None = None, gpu_serial: str = "") -> TicketStanding:
    """The standing the policy would give the component's next ticket, were it detected now:
    the same rule (earlier_tickets_for_component against the threshold) asked of a ticket not
    yet saved. A repeat offender here is a node or GPU whose next fault proposes a vendor case,
    which is what flagging it is for."""
    return ticket_standing(
        FaultTicket(node=node, gpu_serial=gpu_serial, detected_at=timezone.now())
    )


@dataclass(frozen=True)
class RepeatOffender:
    """A node, or a GPU (by serial: the rule follows the serial) and the slot it is in."""

    kind: str  # "node" or "gpu"
    node: str  # hostname; for a GPU the node it is installed in, else where it last failed
    gpu_index: int | None
    gpu_serial: str
    installed: bool  # a GPU: its serial is still in that slot (else it was swapped out)
    faults: int  # its tickets so far (the next ticket's earlier_tickets)


@dataclass(frozen=True)
class RepeatOffenders:
    threshold: int
    nodes: list[RepeatOffender]
    gpus: list[RepeatOffender]


def repeat_offenders(*, user, node: Node | None = None) -> RepeatOffenders:
    """Nodes and GPUs whose next ticket the repeat rule would call a repeat offender
    (component_standing), most faults first; with `node`, that node and the GPUs now in its
    slots. Only components with at least `threshold` tickets are asked (a component with fewer
    cannot have that many earlier ones), so the rule runs once per such component."""
    threshold = repeat_threshold()
    if not may(user, "read_faults"):
        return RepeatOffenders(threshold, [], [])
    tickets = FaultTicket.objects.all()
    gpus_here: dict[str, GPU] = {}
    if node is not None:
        # .all(): the node page has its GPUs prefetched already.
        gpus_here = {gpu.serial: gpu for gpu in node.gpus.all() if gpu.serial}
    node_counts = tickets.filter(node__isnull=False)
    serial_counts = tickets.exclude(gpu_serial="")
    if node is not None:
        node_counts = node_counts.filter(node=node)
        serial_counts = serial_counts.filter(gpu_serial__in=list(gpus_here))
    node_ids = [
        row["node"] for row in node_counts.values("node").annotate(faults=Count("pk"))
        .filter(faults__gte=threshold)
    ]
    serials = [
        row["gpu_serial"] for row in serial_counts.values("gpu_serial")
        .annotate(faults=Count("pk")).filter(faults__gte=threshold)
    ]
    nodes = []
    for candidate in Node.objects.filter(pk__in=node_ids):
        standing = component_standing(node=candidate)
        if standing.is_repeat_offender:
            nodes.append(RepeatOffender("node", candidate.hostname, None, "", True,
                                        standing.earlier_tickets))
    if serials and node is None:
        gpus_here = {gpu.serial: gpu
                     for gpu in GPU.objects.filter(serial__in=serials).select_related("node")}
    gpus = []
    for serial in serials:
        standing = component_standing(gpu_serial=serial)
        if not standing.is_repeat_offender:
            continue
        gpu = gpus_here.get(serial)
        if gpu is None:  # swapped out since: where it last failed
            last = (tickets.filter(gpu_serial=serial).select_related("node", "gpu")
                    .order_by("-detected_at", "-pk").first())
            hostname = last.node.hostname if last.node_id else ""
            index = last.gpu.index if last.gpu_id else None
            gpus.append(RepeatOffender("gpu", hostname, index, serial, False,
                                       standing.earlier_tickets))
        else:
            hostname = node.hostname if node is not None else gpu.node.hostname
            gpus.append(RepeatOffender("gpu", hostname, gpu.index, serial, True,
                                       standing.earlier_tickets))

    def order(offender):
        return (-offender.faults, offender.node, offender.gpu_index or 0, offender.gpu_serial)

    return RepeatOffenders(threshold, sorted(nodes, key=order), sorted(gpus, key=order))


def node_open_tickets(*, user, node) -> QuerySet[FaultTicket]:
    return ticket_list(user=user, filters={"status": "open"}).filter(node=node)


def intake_list(*, user) -> QuerySet[IntakeRecord]:
    if not may(user, "read_faults"):
        return IntakeRecord.objects.none()
    return IntakeRecord.objects.select_related("submitted_by").prefetch_related("tickets")


def _open_ticket_blockers(nodes: Sequence[Node], why_held) -> dict[str, str]:
    """{hostname: why} for each of `nodes` that an open ticket holds: `why_held(ticket)` says
    why, or nothing when that ticket does not hold it; a node's reasons are joined."""
    blockers: dict[str, str] = {}
    tickets = (
        FaultTicket.objects.filter(node__in=list(nodes), status__in=OPEN_STATUSES)
        .select_related("node")
        .order_by("pk")
    )
    for ticket in tickets:
        why = why_held(ticket)
        if why:
            host = ticket.node.hostname
            blockers[host] = f"{blockers[host]}; {why}" if host in blockers else why
    return blockers


def open_ticket_resume_blockers(nodes: Sequence[Node]) -> dict[str, str]:
    """The jobs resume guard: a node with an open ticket stays out unless overridden."""
    return _open_ticket_blockers(
        nodes, lambda ticket: f"open fault ticket {ticket.reference} ({ticket.status}): "
                              f"{ticket.summary}")


# -- repair cases --------------------------------------------------------------------------------


def repair_case_list(*, user, filters: dict | None = None) -> QuerySet[RepairCase]:
    """Repair cases of the tickets `user` may see, with their parts and the swaps that put them
    in (one query each, whatever the page size). Filters: ticket (id), status, vendor, node."""
    if not may(user, "read_faults"):
        return RepairCase.objects.none()
    parts = RepairPart.objects.select_related("node", "gpu", "nic", "swap__returned_from")
    cases = RepairCase.objects.select_related("ticket", "opened_by").prefetch_related(
        Prefetch("parts", queryset=parts.order_by("pk"))
    )
    filters = {name: value for name, value in (filters or {}).items() if value}
    if "ticket" in filters:
        if not str(filters["ticket"]).isdigit():
            return RepairCase.objects.none()
        cases = cases.filter(ticket_id=int(filters["ticket"]))
    if "status" in filters:
        cases = cases.filter(status=filters["status"])
    if "vendor" in filters:
        cases = cases.filter(vendor__iexact=filters["vendor"])
    if "node" in filters:
        cases = cases.filter(ticket__node__hostname=filters["node"])
    return cases.order_by("opened_at", "pk")


def vendor_case_proposal(ticket: FaultTicket) -> str:
    """The policy's proposal of a vendor case on `ticket` in its own words (a repeat offender's
    next ticket, or a rule that always proposes one), or "" when it made none: the repair panel
    shows it by the form that opens the case."""
    return (
        ticket.timeline.filter(kind=TimelineKind.PROPOSAL,
                               text__contains=STEP_DESCRIPTIONS["vendor"])
        .order_by("-at", "-pk").values_list("text", flat=True).first()
        or ""
    )


def ticket_repair_cases(*, user, ticket: FaultTicket) -> list[RepairCase]:
    """The ticket's cases for its page, each with `spares` (the reservations it holds or held on
    the shelves) and `spare_shelves` (where a free spare of its failed component's type could be
    reserved now: none once it holds one, is installed or closed). Two queries for all cases."""
    cases = list(repair_case_list(user=user, filters={"ticket": ticket.pk}))
    if not cases:
        return cases
    reservations = list(
        SpareReservation.objects.filter(reference__in=[case.reference for case in cases])
        .select_related("stock", "swap").order_by("reserved_at", "pk")
    )
    shelves = list(spare_stock_list(user=user).filter(free__gt=0))
    for case in cases:
        case.spares = [spare for spare in reservations if spare.reference == case.reference]
        holds_one = any(spare.status == ReservationStatus.RESERVED for spare in case.spares)
        reservable = case.status in OPEN_REPAIR_STATUSES and not holds_one
        case.spare_shelves = [shelf for shelf in shelves
                              if reservable and shelf.kind == case.component]
    return cases


@dataclass(frozen=True)
class RecoveryEvidence:
    method: str  # faults.models.RecoveryMethod
    source: str  # what shows it, in words: "Action #12 (bmc.power power_cycle)", "RC-3"


# What a succeeded Action says was done to the node. A reboot through Slurm restarts the OS
# (warm); a power cycle or a forced off-then-on through the BMC cuts the power (cold).
WARM_REBOOT_ACTIONS = frozenset({"slurm.reboot"})
COLD_POWER_OPERATIONS = frozenset({"power_cycle", "force_off", "graceful_off"})


def recovery_evidence(ticket: FaultTicket) -> RecoveryEvidence | None:
    """How the ticket's fault was recovered, from what was actually done for it: a part the
    vendor case installed, else the last restart its linked Actions carried out. None when
    nothing done for the ticket says (the person then says it)."""
    from faults.models import RecoveryMethod
    from portal.models import ActionStatus

    installed = ticket.repair_cases.filter(parts__swap__isnull=False).order_by("-pk").first()
    if installed is not None:
        return RecoveryEvidence(RecoveryMethod.PART_REPLACED, f"{installed.reference}: part "
                                                              "installed")
    for action in ticket.actions.filter(status=ActionStatus.SUCCEEDED).order_by("-finished_at",
                                                                                 "-pk"):
        if action.kind in WARM_REBOOT_ACTIONS:
            return RecoveryEvidence(RecoveryMethod.WARM_REBOOT,
                                    f"Action #{action.pk} ({action.kind})")
        operation = (action.parameters or {}).get("operation")
        if action.kind == "bmc.power" and operation in COLD_POWER_OPERATIONS:
            return RecoveryEvidence(RecoveryMethod.COLD_REBOOT,
                                    f"Action #{action.pk} ({action.kind} {operation})")
    return None


# -- the checked return to service ------------------------------------------------------------


def validation_hold(ticket: FaultTicket) -> str:
    """Why `ticket`'s node must not go back into service unvalidated, in words (empty: it may).

    The one rule every resume follows (the node page, the API, the ticket's own step): the last
    validation on the ticket did not pass, or the node was restarted or repaired for the ticket
    (a succeeded reboot or power Action, a part installed) and has not passed a validation since.
    A ticket nothing was done for (a link that came back by itself) holds nothing here.
    """
    from django.utils.dateparse import parse_datetime

    from portal.models import ActionStatus

    validation = ticket.validation or {}
    if validation and not validation.get("passed"):
        return (f"{ticket.reference}: its last validation did not pass "
                f"({validation_summary(validation)})")
    restarts = [
        (action.finished_at, f"Action #{action.pk} ({_restart_label(action)})")
        for action in ticket.actions.filter(status=ActionStatus.SUCCEEDED,
                                            finished_at__isnull=False).order_by("pk")
        if action.kind in WARM_REBOOT_ACTIONS or (
            action.kind == "bmc.power"
            and (action.parameters or {}).get("operation") in COLD_POWER_OPERATIONS)
    ]
    restarts += [(case.installed_at, f"{case.reference}: part installed")
                 for case in ticket.repair_cases.filter(installed_at__isnull=False)]
    if not restarts:
        return ""
    restarted_at, what = max(restarts, key=lambda pair: pair[0])
    validated_at = parse_datetime(validation.get("finished_at") or "") if validation else None
    if validated_at is not None and validated_at >= restarted_at:
        return ""
    return f"{ticket.reference}: not validated since {what}"


def _restart_label(action) -> str:
    operation = (action.parameters or {}).get("operation")
    return f"{action.kind} {operation}" if operation else action.kind


def validation_summary(validation: dict) -> str:
    """A validation result in one line: "job 42 FAILED, exit 1" / "job 42 COMPLETED, exit 0"."""
    if not validation:
        return "not validated"
    job = f"job {validation['job_id']}" if validation.get("job_id") else "no job"
    text = f"{job} {validation.get('state') or ''}".strip()
    if validation.get("exit_code") is not None:
        text += f", exit {validation['exit_code']}"
    if validation.get("error"):
        text += f": {validation['error']}"
    return text


def validation_resume_blockers(nodes: Sequence[Node]) -> dict[str, str]:
    """The jobs resume guard of the checked return to service: {hostname: why} for each node an
    open ticket holds until it passes its validation (validation_hold)."""
    return _open_ticket_blockers(nodes, validation_hold)
