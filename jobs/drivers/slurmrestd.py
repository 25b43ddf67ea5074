"""Slurm through slurmrestd with a JWT (X-SLURM-USER-NAME / X-SLURM-USER-TOKEN headers).

Reads use the v0.0.38 API of Slurm 22.05 (also served by 23.02): /slurm/v0.0.38/{ping,nodes,jobs}
and /slurmdb/v0.0.38/jobs for accounting. Drain and resume need a node-update endpoint
(POST /slurm/v0.0.39+/node/{node_name}, Slurm 23.02 and later); the driver looks for one in the
server's /openapi/v3 once and otherwise raises SlurmNotSupported: Slurm 22.05's REST API has no
node update (POST /slurm/v0.0.38/node/{name} answers 405), so such a cluster drains with the
CLI driver.

22.05 quirks handled here (measured, see SLURM-NOTES.md):
- dbv0.0.38 reports exit code 0 for jobs that exited non-zero; the controller's own job record
  (/slurm/v0.0.38/jobs, kept MinJobAge seconds after the end) has the real wait status, so exit
  codes are taken from there while it still knows the job. Older jobs keep slurmdbd's 0: import
  accounting often, or from `sacct -P` (CLI driver, `manage.py import_sacct`).
- an unreachable controller is HTTP 500 with "Unspecified error" in the document;
- dbv0.0.38 reads times in the server's local zone: windows are sent as "now-N seconds" and
  the exact window is applied here on absolute times.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from inventory.hostlist import compress_hostlist, expand_hostlist
from jobs.drivers.base import (
    BatchJobRequest,
    FinishedJob,
    SlurmDriver,
    SlurmError,
    SlurmJob,
    SlurmNodeState,
    SlurmNotSupported,
    SlurmRejected,
    SlurmUnavailable,
)
from jobs.drivers.openapi38 import (
    ACTIVE_JOB_STATES,
    describe_errors,
    epoch_to_datetime,
    parse_jobs,
    parse_nodes,
    select_nodes,
)
from jobs.drivers.validation import checked_node_names, checked_reason
from portal.errors import InvalidInput

logger = logging.getLogger(__name__)

READ_API = "v0.0.38"
ACCOUNTING_API = "v0.0.38"  # served by the dbv0.0.38 plugin
NODE_UPDATE_NOT_SUPPORTED = (
    "Drain and resume are not supported by this Slurm through slurmrestd: its REST API offers no "
    "node update (22.05 REST has no node update; POST /slurm/v0.0.38/node/{name} is 405, the "
    "endpoint arrived with v0.0.39 in Slurm 23.02). Use jobs.drivers.cli.ScontrolDriver for "
    "drain and resume on this cluster."
)
_NODE_UPDATE_PATH = re.compile(r"^/slurm/v0\.0\.(\d+)/node/\{node_name\}$")
# Slurm's error numbers that mean "the request names something that does not exist".
_INVALID_NODE_NAME = 2018
_NOTHING_FOUND = 9003
# Accounting windows are sent relative to the server's "now": allow for clock skew.
CLOCK_SKEW_MARGIN_SECONDS = 120


class SlurmrestdDriver(SlurmDriver):
    """The REST driver. Arguments override settings (tests pass a fresh token)."""

    def __init__(
        self,
        *,
        url: str | None = None,
        user: str | None = None,
        token: str | None = None,
        token_file: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.url = (settings.SLURM_REST_URL if url is None else url).rstrip("/")
        if urllib.parse.urlsplit(self.url).scheme not in ("http", "https"):
            raise SlurmRejected(f"SLURM_REST_URL must be an http(s) URL, not {self.url!r}")
        self.user = settings.SLURM_REST_USER if user is None else user
        self.token = settings.SLURM_REST_TOKEN if token is None else token
        self.token_file = settings.SLURM_REST_TOKEN_FILE if token_file is None else token_file
        self.timeout = float(settings.SLURM_REST_TIMEOUT if timeout is None else timeout)
        self._node_update_path: str | None = None  # "" once probed and absent

    # --- reads --------------------------------------------------------------------------------

    def ping(self) -> None:
        pings = self._request("GET", f"/slurm/{READ_API}/ping").get("pings") or []
        if not any(str(ping.get("ping", "")).upper() == "UP" for ping in pings):
            states = ", ".join(f"{p.get('hostname')}: {p.get('ping')}" for p in pings) or "none"
            raise SlurmUnavailable(f"slurmctld is not answering (slurmrestd ping: {states})")

    def nodes(self, names: Sequence[str] | None = None) -> list[SlurmNodeState]:
        wanted = None if names is None else checked_node_names(names, allow_empty=True)
        return select_nodes(parse_nodes(self._request("GET", f"/slurm/{READ_API}/nodes")), wanted)

    def jobs(self) -> list[SlurmJob]:
        return parse_jobs(self._request("GET", f"/slurm/{READ_API}/jobs"))

    def accounting(self, since: datetime, until: datetime | None = None) -> list[FinishedJob]:
        since_epoch = _epoch(since)
        until_epoch = _epoch(until) if until is not None else None
        now = time.time()
        query = {"start_time": _relative(since_epoch - CLOCK_SKEW_MARGIN_SECONDS, now)}
        if until_epoch is not None:
            query["end_time"] = _relative(until_epoch + CLOCK_SKEW_MARGIN_SECONDS, now)
        document = self._request(
            "GET", f"/slurmdb/{ACCOUNTING_API}/jobs", query=query, nothing_found_ok=True
        )
        floor = math.floor(since_epoch)
        ended = [
            raw
            for raw in document.get("jobs") or []
            if _state(raw) not in ACTIVE_JOB_STATES
            and (raw.get("time") or {}).get("end")
            and floor <= raw["time"]["end"]
            and (until_epoch is None or raw["time"]["end"] < until_epoch)
        ]
        exit_statuses = self._controller_exit_statuses(ended)
        finished = [_finished_job(raw, exit_statuses.get(str(raw["job_id"]))) for raw in ended]
        return sorted(finished, key=lambda job: (job.end_time, _numeric_id(job.job_id)))

    # --- writes -------------------------------------------------------------------------------

    def drain(self, names: Sequence[str], reason: str) -> None:
        hostlist = self._checked_hostlist(names)
        reason = checked_reason(reason)
        self._update_nodes(hostlist, {"state": ["DRAIN"], "reason": reason})

    def resume(self, names: Sequence[str]) -> None:
        hostlist = self._checked_hostlist(names)
        try:
            self._update_nodes(hostlist, {"state": ["RESUME"]})
        except SlurmRejected as error:
            # As with scontrol: "Invalid node state" for named nodes that were not drained,
            # although the drains were cleared.
            if "Invalid node state" not in str(error):
                raise
            if any("DRAIN" in node.flags for node in self.nodes(expand_hostlist(hostlist))):
                raise

    # --- internals ----------------------------------------------------------------------------

    def submit_batch_job(self, request: BatchJobRequest) -> str:
        # Measured on 22.05.8: POST /slurm/v0.0.38/job/submit answers 'Disabled key:
        # "required_nodes"', so a job cannot be pinned to the node being validated.
        raise SlurmNotSupported(
            "slurmrestd v0.0.38 cannot place a job on a named node (required_nodes is a "
            "disabled key in Slurm 22.05): validation runs need the CLI driver"
        )

    def node_update_path(self) -> str:
        """The newest POST .../node/{node_name} path the server documents; SlurmNotSupported
        when it has none (probed once per driver instance)."""
        if self._node_update_path is None:
            paths = self._request("GET", "/openapi/v3").get("paths") or {}
            offered = [
                (int(match.group(1)), path)
                for path, operations in paths.items()
                if (match := _NODE_UPDATE_PATH.match(path)) and "post" in operations
            ]
            self._node_update_path = max(offered)[1] if offered else ""
        if not self._node_update_path:
            raise SlurmNotSupported(NODE_UPDATE_NOT_SUPPORTED)
        return self._node_update_path

    def _checked_hostlist(self, names: Sequence[str]) -> str:
        names = checked_node_names(names)
        self.node_update_path()  # unsupported: say so before anything else
        known = {node.name for node in self.nodes(names)}
        unknown = [name for name in names if name not in known]
        if unknown:
            raise SlurmRejected(
                f"Slurm does not know node(s) {compress_hostlist(unknown)}; nothing was changed"
            )
        return compress_hostlist(names)

    def _update_nodes(self, hostlist: str, body: dict[str, Any]) -> None:
        path = self.node_update_path().replace("{node_name}", urllib.parse.quote(hostlist, safe=""))
        self._request("POST", path, body=body)

    def _controller_exit_statuses(self, ended: list[dict]) -> dict[str, int]:
        """{job id: wait status} from the controller, for jobs slurmdbd says exited 0 although
        they did not complete (the 22.05 dbv0.0.38 exit-code bug)."""
        suspicious = [
            raw for raw in ended if _state(raw) != "COMPLETED" and not _exit_code_and_signal(raw)[0]
        ]
        if not suspicious:
            return {}
        try:
            document = self._request("GET", f"/slurm/{READ_API}/jobs")
        except SlurmUnavailable:
            return {}  # accounting works without the controller; codes stay as slurmdbd has them
        return {
            str(job["job_id"]): int(job["exit_code"])
            for job in document.get("jobs") or []
            if isinstance(job.get("exit_code"), int)
        }

    def _token(self) -> str:
        token = self.token
        if not token and self.token_file:
            try:
                token = Path(self.token_file).read_text().strip()
            except OSError as error:
                raise SlurmRejected(
                    f"cannot read the slurmrestd token file {self.token_file}: {error.strerror}"
                ) from error
        if not token:
            raise SlurmRejected(
                "no slurmrestd token configured: set SLURM_REST_TOKEN or SLURM_REST_TOKEN_FILE"
            )
        return token.removeprefix("SLURM_JWT=")

    def _headers(self) -> dict[str, str]:
        token = self._token()
        claims = _jwt_claims(token)
        expires = claims.get("exp")
        if isinstance(expires, int | float) and expires < time.time():
            expired_at = datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%d %H:%M:%S")
            raise SlurmRejected(
                f"the slurmrestd token expired at {expired_at} UTC: issue a new one "
                "(scontrol token) and update SLURM_REST_TOKEN or its file"
            )
        user = self.user or str(claims.get("sun") or "")
        if not user:
            raise SlurmRejected("no slurmrestd user configured: set SLURM_REST_USER")
        return {
            "X-SLURM-USER-NAME": user,
            "X-SLURM-USER-TOKEN": token,
            "Accept": "application/json",
        }

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        nothing_found_ok: bool = False,
    ) -> dict[str, Any]:
        url = self.url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        headers = self._headers()
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        # The scheme is checked in __init__: only http(s) URLs are ever opened.
        request = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310
        what = f"{method} {path}"
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        except TimeoutError as error:
            raise SlurmUnavailable(f"{what}: no answer within {self.timeout:g}s") from error
        except OSError as error:  # URLError: refused, unknown host; a timeout while connecting
            reason = getattr(error, "reason", error)
            if isinstance(reason, TimeoutError):
                raise SlurmUnavailable(f"{what}: no answer within {self.timeout:g}s") from error
            raise SlurmUnavailable(
                f"{what}: slurmrestd at {self.url} unreachable: {reason}"
            ) from error
        logger.info("slurmrestd: %s -> HTTP %d in %.3fs", what, status, time.monotonic() - started)
        document = _json_or_none(raw)
        errors = (document or {}).get("errors") or []
        if (
            nothing_found_ok
            and errors
            and all(error.get("error_number") == _NOTHING_FOUND for error in errors)
        ):
            return {**document, "errors": [], "jobs": []}
        if 200 <= status < 300 and not errors:
            if document is None:
                raise SlurmError(f"{what}: slurmrestd answered without JSON")
            return document
        raise _error_for(what, status, errors, raw)


def _error_for(what: str, status: int, errors: list, raw: bytes) -> SlurmError:
    detail = describe_errors(errors) if errors else raw.decode(errors="replace").strip()[:300]
    text = f"{what}: HTTP {status}: {detail}"
    if status in (401, 403):
        return SlurmRejected(f"{text} (slurmrestd refused the user or token)")
    if status in (404, 405, 501):
        return SlurmNotSupported(f"{text} (not offered by this slurmrestd)")
    numbers = {error.get("error_number", error.get("errno")) for error in errors}
    if _INVALID_NODE_NAME in numbers or "Invalid node" in detail:
        return SlurmRejected(text)
    if status == 400:
        return SlurmRejected(text)
    # 5xx, or errors in a 200: without a controller v0.0.38 says only "Unspecified error".
    return SlurmUnavailable(text)


def _json_or_none(raw: bytes) -> dict[str, Any] | None:
    try:
        document = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return document if isinstance(document, dict) else None


def _jwt_claims(token: str) -> dict[str, Any]:
    """The JWT's payload, unverified (only to report expiry and default the user name)."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(payload)
    except (ValueError, json.JSONDecodeError):
        return {}
    return claims if isinstance(claims, dict) else {}


def _epoch(moment: datetime) -> float:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _relative(epoch: float, now: float) -> str:
    """Slurm's "now-N" / "now+N" (seconds) for an absolute time: no time zone involved."""
    delta = epoch - now
    return f"now+{math.ceil(delta)}" if delta > 0 else f"now-{math.ceil(-delta)}"


def _state(raw: Mapping[str, Any]) -> str:
    state = raw.get("state") or {}
    current = state.get("current", "") if isinstance(state, dict) else state
    return str(current or "").split(" ", 1)[0].upper()


def _exit_code_and_signal(raw: Mapping[str, Any]) -> tuple[int, int]:
    exit_code = raw.get("exit_code") or {}
    if isinstance(exit_code, int):
        return (exit_code >> 8) & 0xFF, exit_code & 0x7F
    signal = exit_code.get("signal") or {}
    signal_id = signal.get("signal_id") if isinstance(signal, dict) else signal
    return int(exit_code.get("return_code") or 0), int(signal_id or 0)


def _gpus(raw: Mapping[str, Any]) -> int:
    """Allocated GPUs from the TRES list (untyped gres/gpu, else the sum of typed ones)."""
    untyped = typed = 0
    for tres in (raw.get("tres") or {}).get("allocated") or []:
        if tres.get("type") != "gres":
            continue
        name, count = tres.get("name") or "", int(tres.get("count") or 0)
        if name == "gpu":
            untyped = count
        elif name.startswith("gpu:"):
            typed += count
    return untyped or typed


def _finished_job(raw: Mapping[str, Any], controller_exit_status: int | None) -> FinishedJob:
    job_id = str(raw["job_id"])
    if controller_exit_status is not None:
        exit_code, signal = (controller_exit_status >> 8) & 0xFF, controller_exit_status & 0x7F
    else:
        exit_code, signal = _exit_code_and_signal(raw)
    times = raw.get("time") or {}
    nodes = raw.get("nodes") or ""
    try:
        no_nodes = nodes in {"", "None assigned", "(null)"}
        node_names = () if no_nodes else tuple(expand_hostlist(nodes))
    except InvalidInput as error:
        raise SlurmError(f"job {job_id}: unreadable node list {nodes!r}") from error
    association = raw.get("association") or {}
    return FinishedJob(
        job_id=job_id,
        name=raw.get("name") or "",
        user=raw.get("user") or association.get("user") or "",
        account=raw.get("account") or association.get("account") or "",
        partition=raw.get("partition") or "",
        state=_state(raw),
        exit_code=exit_code,
        signal=signal,
        submit_time=epoch_to_datetime(times.get("submission")),
        start_time=epoch_to_datetime(times.get("start")),
        end_time=epoch_to_datetime(times.get("end")),
        elapsed_seconds=int(times.get("elapsed") or 0),
        node_names=node_names,
        gpus=_gpus(raw),
    )


def _numeric_id(job_id: str) -> float:
    head = job_id.split("_", 1)[0]
    return int(head) if head.isdigit() else math.inf
