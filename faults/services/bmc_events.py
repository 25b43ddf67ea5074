"""BMC events become tickets: each node's Redfish event log and health, polled by a periodic task
(faults.tasks.poll_bmc_events).

A run reads at most `BMC_EVENT_POLL_NODES_PER_RUN` nodes, those polled longest ago first, and at
most `BMC_EVENT_POLL_ENTRIES` entries of each; of those only entries past the node's cursor
(faults.models.BmcEventCursor) are new, so an entry read twice never counts twice. A Warning or
Critical entry about a GPU, power supply, fan, temperature or memory goes through the same intake
and de-duplication as every other channel (kept raw as an IntakeRecord, then `apply_incident`),
with the entry's own message and time; informational entries are only read past.

A BMC that does not answer is recorded on the cursor (`last_error`) and the run goes on with the
next node: one dead BMC must not stop the others' events.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from faults.models import BmcEventCursor, IntakeRecord, Source
from faults.parsing import Components, Incident
from faults.policies import rule_for
from faults.services.deduplication import apply_incident
from faults.services.intake import record_intake
from inventory.bmc.drivers.base import BmcError, LogEntry, get_bmc_driver
from inventory.bmc.gpus import match_gpus
from inventory.bmc.targets import bmc_target
from inventory.models import GPU, Node

logger = logging.getLogger(__name__)

TICKETED_SEVERITIES = frozenset({"Warning", "Critical"})

# (rule kind, Redfish LogEntry.SensorType values, words in the message), tried in order: a GPU's
# ECC error is the GPU's, not host memory's. SensorType values are DSP8010's LogEntry enum.
_KINDS = (
    ("bmc_gpu", (), re.compile(r"\bGPU", re.IGNORECASE)),
    (
        "bmc_psu",
        ("Power Supply / Converter", "Power Unit"),
        re.compile(r"\bPSU|power supply", re.IGNORECASE),
    ),
    ("bmc_fan", ("Fan",), re.compile(r"\bfan\b", re.IGNORECASE)),
    (
        "bmc_temperature",
        ("Temperature",),
        re.compile(r"temperature|thermal|overheat", re.IGNORECASE),
    ),
    ("bmc_memory", ("Memory",), re.compile(r"\bDIMM|memory|\bECC\b", re.IGNORECASE)),
)
# How an HGX BMC names a GPU in its messages (GPU_SXM_1..8), matched to inventory by serial.
_BMC_GPU_NAME = re.compile(r"\bGPU_SXM_\d+\b")


@dataclass
class BmcPollResult:
    nodes_polled: int = 0
    unreachable: int = 0
    entries_read: int = 0
    tickets_opened: int = 0
    tickets_joined: int = 0


def classify_log_entry(entry: LogEntry) -> str | None:
    """The rule kind for a BMC log entry, or None for one that opens no ticket."""
    if entry.severity not in TICKETED_SEVERITIES:
        return None
    for kind, sensor_types, words in _KINDS:
        if entry.sensor_type in sensor_types or words.search(entry.message):
            return kind
    return None


def poll_bmc_events() -> BmcPollResult:
    """One bounded run over the nodes with a BMC, longest unpolled first."""
    result = BmcPollResult()
    for node in _nodes_due():
        result.nodes_polled += 1
        try:
            _poll_node(node, result)
        except BmcError as error:
            result.unreachable += 1
            _record_poll(node, error=str(error))
            logger.warning("BMC events of %s not read: %s", node.hostname, error, exc_info=True)
    return result


def _nodes_due() -> list[Node]:
    with_bmc = Q(bmc_address__isnull=False) & ~Q(bmc_address="")
    endpoints = list(settings.BMC_ENDPOINTS)
    if endpoints:
        with_bmc |= Q(hostname__in=endpoints)
    return list(
        Node.objects.filter(with_bmc).order_by(
            F("bmc_event_cursor__polled_at").asc(nulls_first=True), "hostname"
        )[: settings.BMC_EVENT_POLL_NODES_PER_RUN]
    )


def _record_poll(node: Node, *, error: str = "", health: str | None = None, **cursor) -> None:
    values = {"polled_at": timezone.now(), "last_error": error[:500], **cursor}
    if health is not None:
        values["health"] = health
    BmcEventCursor.objects.update_or_create(node=node, defaults=values)


def _poll_node(node: Node, result: BmcPollResult) -> None:
    driver = get_bmc_driver()
    target = bmc_target(node)
    health = driver.health(target)
    entries = driver.event_log(target, limit=settings.BMC_EVENT_POLL_ENTRIES)
    result.entries_read += len(entries)
    # The GPU list is read before the cursor is locked: no BMC round trip under a row lock.
    unlocked = BmcEventCursor.objects.filter(node=node).first() or BmcEventCursor(node=node)
    gpu_of = _gpu_lookup(node, target, _entries_past(unlocked, entries))
    with transaction.atomic():
        cursor, _ = BmcEventCursor.objects.select_for_update().get_or_create(node=node)
        new_entries = _entries_past(cursor, entries)  # again: a run beside this one moved it
        for entry, created in new_entries:
            kind = classify_log_entry(entry)
            if kind is None or _too_old_for_first_poll(cursor, created):
                continue
            ticket_created = _ticket_entry(node, entry, created, kind, gpu_of)
            if ticket_created:
                result.tickets_opened += 1
            else:
                result.tickets_joined += 1
        cursor_fields = {}
        if new_entries:
            newest = max(created for _, created in new_entries)
            previous = cursor.ids_at_last_created if cursor.last_created == newest else []
            cursor_fields = {
                "last_created": newest,
                "ids_at_last_created": sorted(
                    {*previous, *(_entry_key(e) for e, created in new_entries if created == newest)}
                ),
            }
        _record_poll(node, health=health.health or "", **cursor_fields)


def _entry_key(entry: LogEntry) -> str:
    return f"{entry.log}/{entry.id}"


def _created_at(entry: LogEntry) -> datetime | None:
    try:
        created = datetime.fromisoformat(entry.created)
    except (TypeError, ValueError):
        return None
    return created if created.tzinfo else created.replace(tzinfo=timezone.get_current_timezone())


def _entries_past(
    cursor: BmcEventCursor, entries: list[LogEntry]
) -> list[tuple[LogEntry, datetime]]:
    """The entries the cursor has not passed, oldest first. An entry without a readable time
    cannot be placed after the cursor, so it is skipped (and logged) rather than ticketed on
    every poll."""
    seen_at_last = set(cursor.ids_at_last_created)
    fresh = []
    for entry in entries:
        created = _created_at(entry)
        if created is None:
            logger.warning(
                "BMC log entry %s has no readable time %r", _entry_key(entry), entry.created
            )
            continue
        last = cursor.last_created
        if (
            last is None
            or created > last
            or (created == last and _entry_key(entry) not in seen_at_last)
        ):
            fresh.append((entry, created))
    return sorted(fresh, key=lambda pair: pair[1])


def _too_old_for_first_poll(cursor: BmcEventCursor, created: datetime) -> bool:
    # A node polled for the first time brings its whole history; only its recent entries are
    # news, or a new install would open a ticket for every fan that failed last year.
    if cursor.last_created is not None:
        return False
    return created < timezone.now() - timedelta(hours=settings.BMC_EVENT_FIRST_POLL_HOURS)


def _gpu_lookup(node, target, new_entries) -> dict[str, GPU]:
    """{BMC GPU name: inventory GPU} when a new entry names a GPU; matched by serial or UUID,
    never by the number in the BMC's name (HGX numbers GPUs unlike the host)."""
    if not any(_BMC_GPU_NAME.search(entry.message) for entry, _ in new_entries):
        return {}
    try:
        matches = match_gpus(node, get_bmc_driver().gpus(target))
    except BmcError as error:
        logger.warning("GPUs of %s's BMC not read: %s", node.hostname, error)
        return {}
    return {match.bmc.bmc_id: match.gpu for match in matches if match.gpu is not None}


def _ticket_entry(node, entry: LogEntry, created: datetime, kind: str, gpu_of) -> bool:
    record = record_intake(
        channel=Source.BMC,
        raw_body=json.dumps({"node": node.hostname, **asdict(entry)}),
    )
    named = _BMC_GPU_NAME.search(entry.message)
    gpu = gpu_of.get(named.group(0)) if named and kind == "bmc_gpu" else None
    rule = rule_for(kind)
    incident = Incident(
        source=Source.BMC,
        rule=rule,
        components=Components(node=node, gpu=gpu),
        summary=f"{node.hostname} BMC: {entry.message}"[:300],
        detected_at=created,
        category=rule.category,
        subtype=rule.subtype,
        severity=rule.severity,
        details={"log_entry": _entry_key(entry), "bmc_severity": entry.severity},
    )
    ticket, created_ticket = apply_incident(incident, actor=None, intake=record)
    IntakeRecord.objects.filter(pk=record.pk).update(accepted=True)
    record.tickets.add(ticket)
    return created_ticket
