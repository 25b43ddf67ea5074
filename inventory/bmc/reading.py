"""What a node's BMC says about it, read live in one call: health, sensors, firmware, the newest
event-log entries and its GPUs matched to the inventory's (issue 24 item 2's read side).

Every part is a `Section` with a status an operator can act on:
- "ok": the BMC answered; `items` is what it said;
- "not_offered": the BMC has no such resource (sushy-emulator has no event log or firmware
  inventory: a 404 is a fact about the BMC, not a fault);
- "error": "the BMC did not answer: <its message>", never a 500 and never a guess.
Once the BMC fails to answer at all, the remaining parts are not asked (each would wait out its
own timeout), and say so. Nothing here reads or returns credentials: the driver's messages never
hold a secret (inventory.bmc.drivers.base.BmcError).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from django.conf import settings

from inventory.bmc.drivers.base import (
    BmcDriver,
    BmcError,
    BmcNotSupported,
    BmcUnreachable,
    get_bmc_driver,
)
from inventory.bmc.gpus import match_gpus
from inventory.bmc.targets import bmc_target, has_bmc
from inventory.models import GPU

OK, NOT_OFFERED, ERROR = "ok", "not_offered", "error"
SECTION_STATUSES = (OK, NOT_OFFERED, ERROR)
MATCHED, BMC_ONLY = "matched", "bmc_only"
GPU_STATES = (MATCHED, BMC_ONLY)
NOT_OFFERED_MESSAGE = "not offered by this BMC"
DEFAULT_EVENT_LIMIT = 20
MAX_EVENT_LIMIT = 200


@dataclass
class Section:
    status: str = OK
    message: str = ""
    items: list = field(default_factory=list)


@dataclass
class BmcReading:
    hostname: str
    bmc_configured: bool
    answered: bool  # False: the BMC did not answer (or the node has none); `error` says why
    error: str = ""
    health: dict | None = None
    sensors: Section = field(default_factory=Section)
    firmware: Section = field(default_factory=Section)
    events: Section = field(default_factory=Section)
    gpus: Section = field(default_factory=Section)
    # The boot source override as the BMC reads it back: a "Continuous" left over from a
    # one-time request (sushy-emulator stores Once so) would boot from PXE at every boot.
    boot_override: Section = field(default_factory=Section)
    # The inventory's GPUs on the node that no BMC GPU matched by serial or UUID: after a swap,
    # the old serial is still recorded here while the BMC reports the new one (BMC-only).
    inventory_only_gpus: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def did_not_answer(error: BmcError) -> str:
    return f"the BMC did not answer: {error}"


def _read(call) -> tuple[Section, BmcUnreachable | None]:
    try:
        return Section(items=call()), None
    except BmcNotSupported:
        return Section(status=NOT_OFFERED, message=NOT_OFFERED_MESSAGE), None
    except BmcUnreachable as error:
        return Section(status=ERROR, message=did_not_answer(error)), error
    except BmcError as error:
        return Section(status=ERROR, message=did_not_answer(error)), None


def _gpu_rows(node, driver: BmcDriver, target) -> tuple[list[dict], list[dict]]:
    inventory = list(GPU.objects.filter(node=node).order_by("index"))
    matches = match_gpus(node, driver.gpus(target))
    matched_ids = {match.gpu.pk for match in matches if match.gpu is not None}
    rows = [
        {
            "bmc_id": match.bmc.bmc_id,
            "serial": match.bmc.serial,
            "uuid": match.bmc.uuid,
            "model": match.bmc.model,
            "health": match.bmc.health,
            "matched_by": match.matched_by,
            "state": MATCHED if match.gpu is not None else BMC_ONLY,
            "inventory_index": match.gpu.index if match.gpu is not None else None,
            "inventory_serial": match.gpu.serial if match.gpu is not None else "",
        }
        for match in matches
    ]
    inventory_only = [
        {"index": gpu.index, "serial": gpu.serial, "uuid": gpu.uuid, "model": gpu.model}
        for gpu in inventory
        if gpu.pk not in matched_ids
    ]
    return rows, inventory_only


def bmc_reading(
    node,
    *,
    event_limit: int = DEFAULT_EVENT_LIMIT,
    timeout: float | None = None,
    driver: BmcDriver | None = None,
) -> BmcReading:
    """Read `node`'s BMC now (each request bounded by `timeout`, default BMC_PAGE_TIMEOUT)."""
    reading = BmcReading(hostname=node.hostname, bmc_configured=has_bmc(node), answered=False)
    if not reading.bmc_configured:
        reading.error = f"{node.hostname} has no BMC address: record it in the inventory first."
        return reading
    driver = driver or get_bmc_driver()
    event_limit = max(1, min(event_limit, MAX_EVENT_LIMIT))
    try:
        target = bmc_target(node, timeout=timeout or settings.BMC_PAGE_TIMEOUT)
        health = driver.health(target)
    except BmcError as error:
        reading.error = did_not_answer(error)
        skipped = Section(status=ERROR, message=reading.error)
        reading.sensors = reading.firmware = reading.events = reading.gpus = skipped
        reading.boot_override = skipped
        return reading
    reading.answered = True
    reading.health = asdict(health)
    inventory_only: list[dict] = []

    def gpus() -> list[dict]:
        rows, rest = _gpu_rows(node, driver, target)
        inventory_only.extend(rest)
        return rows

    calls = {
        "sensors": lambda: [
            {
                "name": sensor.name,
                "reading": sensor.reading,
                "units": sensor.units,
                "kind": sensor.kind,
                "status": sensor.health,
            }
            for sensor in driver.sensors(target)
        ],
        "firmware": lambda: [
            {"id": item.id, "component": item.name, "version": item.version}
            for item in driver.firmware(target)
        ],
        "events": lambda: [
            {
                "id": entry.id,
                "created": entry.created,
                "severity": entry.severity,
                "message": entry.message,
                "log": entry.log,
            }
            for entry in driver.event_log(target, limit=event_limit)[:event_limit]
        ],
        "gpus": gpus,
        "boot_override": lambda: [asdict(driver.boot_override(target))],
    }
    unreachable: BmcUnreachable | None = None
    for name, call in calls.items():
        if unreachable is not None:
            section = Section(status=ERROR, message=did_not_answer(unreachable))
        else:
            section, unreachable = _read(call)
        setattr(reading, name, section)
    if reading.gpus.status == OK:
        reading.inventory_only_gpus = inventory_only
    return reading
