"""Fault statistics (read-only): Table 13 by category, by month, MTTA, MTTR, MTBF, burn-in.

Definitions (false positives are excluded everywhere, as the paper's on-call engineers did):
- share: count / total x 100, rounded half-up to one decimal; the total row is the total's own
  share (100.0), not the sum of rounded shares (which for Table 13 would be 100.1).
- MTTA: mean of acknowledged - detected; MTTR: mean of resolved - detected, over tickets that
  have the later time.
- time awaiting vendor: the summed time between entering and leaving awaiting_vendor (still
  waiting: until now), from the transition rows.
- MTBF per node / per GPU serial: the observed period divided by that component's fault count,
  where the period runs from the start of the range (default: the first ticket's detection) to
  its end (default: now). Components with no fault have no MTBF (not infinity).
- repair cases per part type and vendor: waiting for the part (requested -> received) versus
  hands-on (opened -> requested plus received -> installed), and MTTR (opened -> installed).
- failures per component type per month (the burn-in curve): the tickets detected in each month
  by Table 13's fault component, and the parts replaced for them (repair cases that reached
  installed) by part type, counted in the month their ticket was detected so a month's row says
  how many of its failures needed a part.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from django.db.models import QuerySet
from django.utils import timezone

from faults.models import Category, FaultTicket, FaultTransition, RecoveryMethod, RepairCase
from faults.workflow import Status
from inventory.models import ComponentKind

TAXONOMY = [category for category in Category if category != Category.UNCLASSIFIED]


def share(count: int, total: int) -> Decimal:
    if not total:
        return Decimal("0.0")
    return (Decimal(count) * 100 / Decimal(total)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)


def counted_tickets(*, start: datetime | None = None, end: datetime | None = None):
    tickets = FaultTicket.objects.exclude(status=Status.FALSE_POSITIVE)
    if start:
        tickets = tickets.filter(detected_at__gte=start)
    if end:
        tickets = tickets.filter(detected_at__lt=end)
    return tickets


@dataclass
class CategoryRow:
    category: str
    label: str
    count: int
    share: Decimal


def table_by_category(tickets: QuerySet[FaultTicket]) -> dict:
    """Table 13's layout: one row per taxonomy category (unclassified only when present)."""
    counts = Counter(tickets.values_list("category", flat=True))
    total = sum(counts.values())
    categories = TAXONOMY + ([Category.UNCLASSIFIED] if counts[Category.UNCLASSIFIED] else [])
    rows = [
        CategoryRow(
            category.value, category.label, counts[category], share(counts[category], total)
        )
        for category in categories
    ]
    return {"rows": rows, "total": total, "total_share": share(total, total)}


def _hours(delta: timedelta | None) -> float | None:
    return round(delta.total_seconds() / 3600, 3) if delta is not None else None


def _mean(deltas: list[timedelta]) -> timedelta | None:
    return sum(deltas, timedelta()) / len(deltas) if deltas else None


def awaiting_vendor_time(tickets: list[FaultTicket], *, now: datetime) -> dict[int, timedelta]:
    """Per ticket, the summed time spent in awaiting_vendor."""
    spent: dict[int, timedelta] = defaultdict(timedelta)
    entered: dict[int, datetime] = {}
    transitions = FaultTransition.objects.filter(ticket__in=[t.pk for t in tickets]).order_by(
        "ticket_id", "at", "pk"
    )
    for transition in transitions:
        if transition.to_status == Status.AWAITING_VENDOR:
            entered[transition.ticket_id] = transition.at
        elif transition.from_status == Status.AWAITING_VENDOR and transition.ticket_id in entered:
            spent[transition.ticket_id] += transition.at - entered.pop(transition.ticket_id)
    for ticket_id, since in entered.items():
        spent[ticket_id] += now - since
    return spent


def _times(tickets: list[FaultTicket], vendor: dict[int, timedelta]) -> dict:
    acknowledge = [t.acknowledged_at - t.detected_at for t in tickets if t.acknowledged_at]
    repair = [t.resolved_at - t.detected_at for t in tickets if t.resolved_at]
    waits = [vendor[t.pk] for t in tickets if t.pk in vendor]
    return {
        "mtta_hours": _hours(_mean(acknowledge)),
        "mttr_hours": _hours(_mean(repair)),
        "awaiting_vendor_hours": _hours(sum(waits, timedelta())) if waits else None,
        "acknowledged": len(acknowledge),
        "resolved": len(repair),
    }


def fault_statistics(*, start: datetime | None = None, end: datetime | None = None) -> dict:
    """Everything the statistics page and API show, for tickets detected in [start, end)."""
    now = timezone.now()
    queryset = counted_tickets(start=start, end=end)
    tickets = list(queryset.select_related("node"))
    vendor = awaiting_vendor_time(tickets, now=now)
    table = table_by_category(queryset)

    per_category = []
    for row in table["rows"]:
        in_category = [t for t in tickets if t.category == row.category]
        per_category.append({**row.__dict__, **_times(in_category, vendor)})

    months: dict[str, list[FaultTicket]] = defaultdict(list)
    for ticket in tickets:
        months[timezone.localtime(ticket.detected_at).strftime("%Y-%m")].append(ticket)
    per_month = []
    for month in sorted(months):
        in_month = months[month]
        counts = Counter(t.category for t in in_month)
        per_month.append({
            "month": month,
            "count": len(in_month),
            "share": share(len(in_month), len(tickets)),
            "by_category": {category.value: counts[category] for category in TAXONOMY},
            **_times(in_month, vendor),
        })

    period_start = start or min((t.detected_at for t in tickets), default=now)
    period = (end or now) - period_start
    by_node = Counter(t.node.hostname for t in tickets if t.node_id)
    by_gpu = Counter(t.gpu_serial for t in tickets if t.gpu_serial)
    recoveries = Counter(t.recovery_method for t in tickets if t.recovery_method)
    return {
        "period": {"start": period_start, "end": end or now, "hours": _hours(period)},
        "by_recovery_method": [
            {"method": method.value, "label": method.label, "count": recoveries[method],
             "share": share(recoveries[method], len(tickets))}
            for method in RecoveryMethod
        ],
        "by_category": per_category,
        "total": table["total"],
        "total_share": table["total_share"],
        "by_month": per_month,
        "overall": _times(tickets, vendor),
        "mtbf_by_node": _mtbf(by_node, period, "node"),
        "mtbf_by_gpu_serial": _mtbf(by_gpu, period, "gpu_serial"),
        "failures_by_component_month": failures_by_component_month(tickets),
        "repair_statistics": repair_statistics(start=start, end=end),
    }


def failures_by_component_month(tickets: list[FaultTicket]) -> list[dict]:
    """Per month of detection: the failures by fault component (Table 13's rows, the burn-in
    curve per component type) and the parts replaced for them by part type. `tickets` are the
    counted ones (false positives out), so a replacement counts only with its failure."""
    month_of = {t.pk: timezone.localtime(t.detected_at).strftime("%Y-%m") for t in tickets}
    failures: dict[str, Counter] = defaultdict(Counter)
    for ticket in tickets:
        failures[month_of[ticket.pk]][ticket.category] += 1
    replaced: dict[str, Counter] = defaultdict(Counter)
    installed = RepairCase.objects.filter(
        ticket_id__in=list(month_of), installed_at__isnull=False
    ).values_list("ticket_id", "component")
    for ticket_id, component in installed:
        replaced[month_of[ticket_id]][component] += 1
    present = set().union(*failures.values()) if failures else set()
    categories = TAXONOMY + ([Category.UNCLASSIFIED] if Category.UNCLASSIFIED in present else [])
    rows = []
    for month in sorted(failures):
        rows.append({
            "month": month,
            "failures": sum(failures[month].values()),
            "by_component": [
                {"component": category.value, "label": category.label,
                 "failures": failures[month][category]}
                for category in categories
            ],
            "replacements": sum(replaced[month].values()),
            "replaced_parts": [
                {"component": kind.value, "label": kind.label,
                 "replacements": replaced[month][kind]}
                for kind in ComponentKind if replaced[month][kind]
            ],
        })
    return rows


def _mtbf(counts: Counter, period: timedelta, key: str) -> list[dict]:
    return [
        {key: name, "faults": count, "mtbf_hours": _hours(period / count)}
        for name, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def repair_statistics(*, start: datetime | None = None, end: datetime | None = None) -> list[dict]:
    """Per failed part type and vendor: how long the node waited for the part (requested ->
    received) versus the hands-on time (opened -> requested, and received -> installed), and
    the MTTR of the case (opened -> installed). Separating the two is the point: a week of
    lead time and an hour at the rack call for different fixes (spares on site, not faster
    hands). Means over the cases that have both dates; None when none has. With `start` /
    `end`, the cases of the tickets detected in [start, end), as the rest of the statistics."""
    cases = RepairCase.objects.all()
    if start:
        cases = cases.filter(ticket__detected_at__gte=start)
    if end:
        cases = cases.filter(ticket__detected_at__lt=end)
    groups: dict[tuple[str, str], list[RepairCase]] = defaultdict(list)
    for case in cases.only(
        "component",
        "vendor",
        "opened_at",
        "waiting_for_part_at",
        "part_received_at",
        "installed_at",
    ):
        groups[(case.component, case.vendor)].append(case)
    rows = []
    for (component, vendor), cases in sorted(groups.items()):
        waits, hands_on, repairs = [], [], []
        for case in cases:
            if case.waiting_for_part_at and case.part_received_at:
                waits.append(case.part_received_at - case.waiting_for_part_at)
            if case.installed_at:
                repairs.append(case.installed_at - case.opened_at)
                before_wait = (case.waiting_for_part_at or case.opened_at) - case.opened_at
                after_arrival = case.installed_at - (case.part_received_at or case.opened_at)
                hands_on.append(before_wait + after_arrival)
        rows.append(
            {
                "component": component,
                "label": ComponentKind(component).label,
                "vendor": vendor,
                "cases": len(cases),
                "waiting_for_part_hours": _hours(_mean(waits)),
                "hands_on_hours": _hours(_mean(hands_on)),
                "mttr_hours": _hours(_mean(repairs)),
            }
        )
    return rows


REPAIR_CASE_CSV_HEADER = [
    "case", "ticket", "category", "component", "vendor", "vendor_case_number", "status",
    "opened_at", "waiting_for_part_at", "part_received_at", "installed_at", "closed_at",
    "waiting_for_part_hours", "serials_out", "serials_in",
]


def repair_case_csv_rows():
    """One row per repair case for the CSV export, with the serials its swaps took out and
    put in (space-separated when a case has several parts)."""

    def stamp(value):
        return value.isoformat() if value else ""

    cases = RepairCase.objects.select_related("ticket").prefetch_related("parts__swap")
    for case in cases.order_by("opened_at", "pk"):
        swaps = [part.swap for part in case.parts.all() if part.swap_id]
        waited = case.waited_for_part
        yield [
            case.reference, case.ticket.reference, case.ticket.category, case.component,
            case.vendor, case.vendor_case_number, case.status,
            stamp(case.opened_at), stamp(case.waiting_for_part_at),
            stamp(case.part_received_at), stamp(case.installed_at), stamp(case.closed_at),
            _hours(waited) if waited is not None else "",
            " ".join(swap.serial_out for swap in swaps if swap.serial_out),
            " ".join(swap.serial_in for swap in swaps),
        ]
