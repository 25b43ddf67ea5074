"""Reading Slurm 22.05's OpenAPI v0.0.38 documents into the driver dataclasses.

`sinfo --json` / `squeue --json` print exactly what slurmrestd serves on /slurm/v0.0.38/nodes
and /slurm/v0.0.38/jobs (their "meta" says openapi/v0.0.38), so the CLI and REST drivers share
these parsers. Accounting (dbv0.0.38) is REST only and lives in the slurmrestd driver.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from inventory.hostlist import expand_hostlist
from jobs.drivers.base import SlurmError, SlurmJob, SlurmNodeState, SlurmUnavailable
from jobs.drivers.sacct import gpus_from_tres
from portal.errors import InvalidInput

# squeue keeps finished jobs for MinJobAge seconds; jobs() reports only these live states.
ACTIVE_JOB_STATES = frozenset(
    {
        "PENDING",
        "RUNNING",
        "SUSPENDED",
        "COMPLETING",
        "CONFIGURING",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
    }
)
# Slurm's "no value" markers for 32-bit fields (NO_VAL, INFINITE).
_NO_VALUE = 0xFFFFFFFE
_PARENTHESES = re.compile(r"\([^)]*\)")


def epoch_to_datetime(value: Any) -> datetime | None:
    """Slurm writes 0 (or nothing) for "not set"."""
    if not value:
        return None
    return datetime.fromtimestamp(int(value), tz=UTC)


def gpus_from_gres(gres: str | None) -> int:
    """`gpu:8`, `gpu:h100:8(S:0-1)`, `gpu:h100:4(IDX:0-3),nic:2` -> GPU count (8, 8, 4)."""
    if not gres or gres in {"N/A", "(null)"}:
        return 0
    total = 0
    for item in _PARENTHESES.sub("", gres).split(","):
        parts = item.strip().split(":")
        if parts[0] == "gpu" and len(parts) >= 2 and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def check_errors(document: Mapping[str, Any], what: str) -> None:
    """v0.0.38 reports failures inside the document (sinfo --json even exits 0): raise them.

    Without a controller the errors say only "Unspecified error", so every error here counts as
    "could not read", which is worth retrying.
    """
    errors = document.get("errors") or []
    if errors:
        raise SlurmUnavailable(f"{what} failed: {describe_errors(errors)}")


def describe_errors(errors: Iterable[Mapping[str, Any]]) -> str:
    texts = []
    for error in errors:
        words = [str(error.get(key)) for key in ("description", "error") if error.get(key)]
        number = error.get("error_number", error.get("errno"))
        source = error.get("source")
        text = ": ".join(words) or "unknown error"
        if number not in (None, -1, 0):
            text += f" (errno {number})"
        if source:
            text += f" [{source}]"
        texts.append(text)
    return "; ".join(texts)


def parse_nodes(document: Mapping[str, Any]) -> list[SlurmNodeState]:
    """Every node of a v0.0.38 nodes document, once each, in name order."""
    nodes: dict[str, SlurmNodeState] = {}
    for raw in document.get("nodes") or []:
        name = raw["name"]
        nodes[name] = SlurmNodeState(
            name=name,
            state=str(raw.get("state") or "unknown").lower(),
            flags=tuple(str(flag).upper() for flag in raw.get("state_flags") or ()),
            reason=raw.get("reason") or "",
            reason_set_at=epoch_to_datetime(raw.get("reason_changed_at")),
            reason_set_by=raw.get("reason_set_by_user") or "",
            gpus_total=gpus_from_gres(raw.get("gres")),
            gpus_used=gpus_from_gres(raw.get("gres_used")),
            boot_time=epoch_to_datetime(raw.get("boot_time")),
        )
    return [nodes[name] for name in sorted(nodes)]


def select_nodes(nodes: list[SlurmNodeState], names: Sequence[str] | None) -> list[SlurmNodeState]:
    """The named nodes only (names Slurm does not know are left out), in name order."""
    if names is None:
        return nodes
    wanted = set(names)
    return [node for node in nodes if node.name in wanted]


def _hostlist(value: str | None, what: str) -> tuple[str, ...]:
    if not value or value in {"None assigned", "(null)"}:
        return ()
    try:
        return tuple(expand_hostlist(value))
    except InvalidInput as error:
        raise SlurmError(f"{what}: Slurm printed an unreadable node list {value!r}") from error


def _minutes(value: Any) -> int | None:
    if value is None or value == "" or int(value) >= _NO_VALUE:
        return None
    return int(value)


def parse_jobs(document: Mapping[str, Any]) -> list[SlurmJob]:
    """Running and pending jobs of a v0.0.38 jobs document (finished ones are dropped)."""
    jobs = []
    for raw in document.get("jobs") or []:
        state = str(raw.get("job_state") or "").upper()
        if state not in ACTIVE_JOB_STATES:
            continue
        job_id = str(raw["job_id"])
        # Allocated TRES once running; until then what was asked for.
        tres = raw.get("tres_alloc_str") or raw.get("tres_req_str") or ""
        node_names = _hostlist(raw.get("nodes"), f"job {job_id}")
        jobs.append(
            SlurmJob(
                job_id=job_id,
                name=raw.get("name") or "",
                user=raw.get("user_name") or str(raw.get("user_id", "")),
                account=raw.get("account") or "",
                partition=raw.get("partition") or "",
                state=state,
                node_names=node_names,
                node_count=int(raw.get("node_count") or len(node_names)),
                gpus=gpus_from_tres(tres),
                submit_time=epoch_to_datetime(raw.get("submit_time")),
                start_time=epoch_to_datetime(raw.get("start_time")) if state != "PENDING" else None,
                time_limit_minutes=_minutes(raw.get("time_limit")),
                state_reason=_state_reason(raw.get("state_reason")),
            )
        )
    return sorted(jobs, key=lambda job: _job_sort_key(job.job_id))


def _state_reason(value: Any) -> str:
    return "" if not value or value == "None" else str(value)


def _job_sort_key(job_id: str) -> tuple[int, str]:
    head = job_id.split("_", 1)[0]
    return (int(head), job_id) if head.isdigit() else (0, job_id)
