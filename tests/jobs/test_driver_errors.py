"""Fast checks of the real drivers' edges that a healthy 22.05 cluster cannot show: hung or
missing clients, error classification, the exact argv sent, a slurmrestd that offers node update
(23.02+), bad credentials. Slurm's answers here are recorded from the real 22.05 cluster."""

from __future__ import annotations

import base64
import json
import socket
import stat
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from jobs.drivers.base import SlurmNotSupported, SlurmRejected, SlurmUnavailable
from jobs.drivers.cli import ScontrolDriver
from jobs.drivers.openapi38 import gpus_from_gres
from jobs.drivers.slurmrestd import SlurmrestdDriver
from jobs.drivers.validation import checked_node_names, checked_reason

# --- validation and parsing ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["gpu[001-002]", "gpu001,gpu002", "gpu 001", 'gpu"1', "-gpu001", "gpu001;", "", "a" * 64],
)
def test_malformed_node_names_are_rejected(name):
    with pytest.raises(SlurmRejected, match="not a valid node hostname"):
        checked_node_names([name])


def test_node_names_are_sorted_without_repeats():
    assert checked_node_names(["gpu010", "gpu002", "gpu010", "n1.example.org"]) == [
        "gpu002",
        "gpu010",
        "n1.example.org",
    ]
    with pytest.raises(SlurmRejected, match="not the string"):
        checked_node_names("gpu001")


@pytest.mark.parametrize("reason", ["", "   ", "two\nlines", "tab\there", "x" * 1001])
def test_unusable_reasons_are_rejected(reason):
    with pytest.raises(SlurmRejected):
        checked_reason(reason)


@pytest.mark.parametrize(
    ("gres", "gpus"),
    [
        ("gpu:8", 8),
        ("gpu:0", 0),
        ("gpu:8(IDX:0-7)", 8),
        ("gpu:h100:4(IDX:0-3),nic:2", 4),
        ("gpu:h100:2(S:0),gpu:a100:2(S:1)", 4),
        ("N/A", 0),
        ("", 0),
    ],
)
def test_gpus_from_gres(gres, gpus):
    assert gpus_from_gres(gres) == gpus


# --- CLI driver with stand-in Slurm clients ---------------------------------------------------

SHOW_NODE = "NodeName={name} Arch=x86_64 CPUTot=2 State={state} Partitions=gpu Reason={reason}"


def fake_client(bin_dir: Path, program: str, script: str) -> None:
    """An executable `program` in bin_dir: records its argv (NUL-separated), then runs script."""
    path = bin_dir / program
    path.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\0" "$@" >> "{bin_dir}/{program}.argv"\n'
        f'printf "\\n" >> "{bin_dir}/{program}.argv"\n'
        f"{script}\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def recorded_argv(bin_dir: Path, program: str) -> list[list[str]]:
    text = (bin_dir / program).with_suffix(".argv").read_text()
    return [line.rstrip("\0").split("\0") for line in text.split("\0\n") if line]


def test_missing_client_is_unavailable(tmp_path):
    with pytest.raises(SlurmUnavailable, match=r"cannot run .*scontrol"):
        ScontrolDriver(bin_dir=str(tmp_path)).ping()


def test_hung_client_times_out_as_unavailable(tmp_path):
    fake_client(tmp_path, "scontrol", "exec sleep 10")
    started = time.monotonic()

    with pytest.raises(SlurmUnavailable, match=r"did not finish within 0.3s"):
        ScontrolDriver(bin_dir=str(tmp_path), timeout=0.3).ping()

    assert time.monotonic() - started < 5


def test_drain_sends_one_hostlist_and_the_reason_as_single_arguments(tmp_path):
    show = "\n".join(
        SHOW_NODE.format(name=f"gpu00{i}", state="IDLE", reason="(null)") for i in (1, 2, 3)
    )
    fake_client(
        tmp_path,
        "scontrol",
        f'if [ "$1" = update ]; then exit 0; fi\ncat <<"EOF"\n{show}\nEOF',
    )
    reason = """a; b $(c) `d` "e" 'f' g=h"""

    ScontrolDriver(bin_dir=str(tmp_path)).drain(["gpu003", "gpu001", "gpu002"], reason)

    assert recorded_argv(tmp_path, "scontrol") == [
        ["-o", "show", "node", "gpu[001-003]"],
        # scontrol strips one quote from each end of the value: the reason arrives verbatim.
        ["update", "NodeName=gpu[001-003]", "State=DRAIN", f'Reason="{reason}"'],
    ]


@pytest.mark.parametrize(
    ("stderr", "error"),
    [
        (
            "slurm_update error: Unable to contact slurm controller (connect failure)",
            SlurmUnavailable,
        ),
        ("slurm_update error: Socket timed out on send/recv operation", SlurmUnavailable),
        ("slurm_update error: Access/permission denied", SlurmRejected),
        ("slurm_update error: Invalid node name specified", SlurmRejected),
    ],
)
def test_update_errors_carry_slurms_message(tmp_path, stderr, error):
    show = SHOW_NODE.format(name="gpu001", state="IDLE", reason="(null)")
    fake_client(
        tmp_path,
        "scontrol",
        f'if [ "$1" = update ]; then echo "{stderr}" >&2; exit 1; fi\necho "{show}"',
    )

    with pytest.raises(error) as raised:
        ScontrolDriver(bin_dir=str(tmp_path)).drain(["gpu001"], "r")

    assert stderr in str(raised.value)


def test_resume_invalid_state_is_success_only_when_nothing_is_still_drained(tmp_path):
    # 22.05: RESUME of a list with a node that was not drained exits 1 but clears the drains.
    state_file = tmp_path / "state"
    state_file.write_text("IDLE+DRAIN")
    fake_client(
        tmp_path,
        "scontrol",
        'if [ "$1" = update ]; then echo "slurm_update error: Invalid node state specified" >&2;'
        f" echo IDLE > {state_file}; exit 1; fi\n"
        f'echo "NodeName=gpu001 State=$(cat {state_file}) Reason=x"',
    )
    ScontrolDriver(bin_dir=str(tmp_path)).resume(["gpu001"])

    # The same answer while the node stays drained is a refusal naming the node.
    fake_client(
        tmp_path,
        "scontrol",
        'if [ "$1" = update ]; then echo "slurm_update error: Invalid node state specified" >&2;'
        ' exit 1; fi\necho "NodeName=gpu001 State=DOWN+DRAIN Reason=x"',
    )
    with pytest.raises(SlurmRejected, match="still drained: gpu001"):
        ScontrolDriver(bin_dir=str(tmp_path)).resume(["gpu001"])


def test_document_errors_with_the_controller_down_are_unavailable(tmp_path):
    # What 22.05's sinfo --json prints (exit 0) and scontrol ping says without a controller.
    document = {"meta": {}, "errors": [{"error": "Unspecified error", "errno": -1}], "nodes": []}
    fake_client(tmp_path, "sinfo", f"echo '{json.dumps(document)}'")
    fake_client(tmp_path, "scontrol", 'echo "Slurmctld(primary) at vm is DOWN"; exit 1')

    with pytest.raises(SlurmUnavailable, match=r"slurmctld is not answering.*Unspecified error"):
        ScontrolDriver(bin_dir=str(tmp_path)).nodes()


# --- slurmrestd driver against a stand-in server ----------------------------------------------


def jwt(claims: dict) -> str:
    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.signature"


TOKEN = jwt({"exp": int(time.time()) + 3600, "iat": int(time.time()), "sun": "portal"})
NODES_38 = {
    "errors": [],
    "nodes": [
        {"name": name, "state": "idle", "state_flags": [], "gres": "gpu:8", "gres_used": "gpu:0"}
        for name in ("gpu001", "gpu002")
    ],
}


class FakeSlurmrestd:
    """A threaded HTTP server answering from `routes` {(method, path): (status, document)}."""

    def __init__(self, routes: dict):
        self.routes = routes
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                fake.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": {key.lower(): value for key, value in self.headers.items()},
                        "body": json.loads(body) if body else None,
                    }
                )
                status, document = fake.routes.get((self.command, path), (404, None))
                payload = json.dumps(document).encode() if document is not None else b"no route"
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_rest():
    servers = []

    def start(routes: dict) -> FakeSlurmrestd:
        server = FakeSlurmrestd(routes)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def openapi(*node_update_versions: int) -> dict:
    paths = {"/slurm/v0.0.38/nodes": {"get": {}}, "/slurm/v0.0.38/node/{node_name}": {"get": {}}}
    for version in node_update_versions:
        paths[f"/slurm/v0.0.{version}/node/{{node_name}}"] = {"get": {}, "post": {}, "delete": {}}
    return {"openapi": "3.0.2", "paths": paths}


def test_rest_drain_and_resume_use_the_newest_node_update_endpoint(fake_rest):
    server = fake_rest(
        {
            ("GET", "/openapi/v3"): (200, openapi(39, 40)),
            ("GET", "/slurm/v0.0.38/nodes"): (200, NODES_38),
            ("POST", "/slurm/v0.0.40/node/gpu%5B001-002%5D"): (200, {"errors": []}),
        }
    )
    driver = SlurmrestdDriver(url=server.url, user="", token=TOKEN, timeout=5)

    driver.drain(["gpu002", "gpu001"], 'fan; $(x) "y"')
    driver.resume(["gpu001", "gpu002"])

    posts = [request for request in server.requests if request["method"] == "POST"]
    assert [post["path"] for post in posts] == ["/slurm/v0.0.40/node/gpu%5B001-002%5D"] * 2
    assert posts[0]["body"] == {"state": ["DRAIN"], "reason": 'fan; $(x) "y"'}
    assert posts[1]["body"] == {"state": ["RESUME"]}
    assert posts[0]["headers"]["x-slurm-user-name"] == "portal"  # from the token's "sun"
    assert posts[0]["headers"]["x-slurm-user-token"] == TOKEN
    assert sum(request["path"] == "/openapi/v3" for request in server.requests) == 1


def test_rest_drain_of_unknown_node_changes_nothing(fake_rest):
    server = fake_rest(
        {
            ("GET", "/openapi/v3"): (200, openapi(40)),
            ("GET", "/slurm/v0.0.38/nodes"): (200, NODES_38),
        }
    )
    driver = SlurmrestdDriver(url=server.url, user="portal", token=TOKEN, timeout=5)

    with pytest.raises(SlurmRejected, match=r"does not know node.*gpu003"):
        driver.drain(["gpu001", "gpu003"], "r")

    assert not [request for request in server.requests if request["method"] == "POST"]


def test_rest_without_node_update_says_not_supported(fake_rest):
    server = fake_rest({("GET", "/openapi/v3"): (200, openapi())})
    driver = SlurmrestdDriver(url=server.url, user="portal", token=TOKEN, timeout=5)

    with pytest.raises(SlurmNotSupported, match=r"22\.05 REST has no node update"):
        driver.drain(["gpu001"], "r")
    with pytest.raises(SlurmNotSupported, match="not supported by this Slurm"):
        driver.resume(["gpu001"])


def test_rest_refused_token_is_rejected(fake_rest):
    server = fake_rest({("GET", "/slurm/v0.0.38/ping"): (401, {"errors": []})})

    with pytest.raises(SlurmRejected, match=r"HTTP 401.*refused the user or token"):
        SlurmrestdDriver(url=server.url, user="portal", token=TOKEN, timeout=5).ping()


def test_rest_expired_token_is_rejected_without_a_request(fake_rest, tmp_path):
    server = fake_rest({})
    token_file = tmp_path / "token"
    token_file.write_text("SLURM_JWT=" + jwt({"exp": int(time.time()) - 60, "sun": "portal"}))
    driver = SlurmrestdDriver(url=server.url, user="", token="", token_file=str(token_file))

    with pytest.raises(SlurmRejected, match="token expired"):
        driver.nodes()

    assert server.requests == []
    token_file.write_text(TOKEN + "\n")  # a rotated token is read on the next request
    server.routes[("GET", "/slurm/v0.0.38/nodes")] = (200, NODES_38)
    assert [node.name for node in driver.nodes()] == ["gpu001", "gpu002"]


def test_rest_controller_down_and_server_down_are_unavailable(fake_rest):
    # What slurmrestd 22.05 answers while slurmctld is stopped (measured).
    down = {"errors": [{"error": "Unspecified error", "errno": -1}], "nodes": []}
    server = fake_rest({("GET", "/slurm/v0.0.38/nodes"): (500, down)})
    with pytest.raises(SlurmUnavailable, match="HTTP 500: Unspecified error"):
        SlurmrestdDriver(url=server.url, user="portal", token=TOKEN, timeout=5).nodes()

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    with pytest.raises(SlurmUnavailable, match="unreachable"):
        SlurmrestdDriver(url=f"http://127.0.0.1:{closed_port}", user="u", token=TOKEN).ping()


def test_rest_accounting_takes_exit_codes_from_the_controller_while_it_remembers(fake_rest):
    now = int(time.time())
    failed = {
        "job_id": 41,
        "name": "exit3",
        "user": "alice",
        "account": "med",
        "partition": "gpu",
        "nodes": "gpu[001-002]",
        "state": {"current": "FAILED", "reason": "None"},
        # 22.05's dbv0.0.38 answer for a job that exited 3 (measured).
        "exit_code": {"status": "SUCCESS", "return_code": 0},
        "time": {"submission": now - 30, "start": now - 20, "end": now - 10, "elapsed": 10},
        "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 16}]},
    }
    server = fake_rest(
        {
            ("GET", "/slurmdb/v0.0.38/jobs"): (200, {"errors": [], "jobs": [failed]}),
            # The controller's own record: the wait status (3 << 8).
            ("GET", "/slurm/v0.0.38/jobs"): (
                200,
                {"errors": [], "jobs": [{"job_id": 41, "exit_code": 768, "job_state": "FAILED"}]},
            ),
        }
    )
    driver = SlurmrestdDriver(url=server.url, user="portal", token=TOKEN, timeout=5)

    (job,) = driver.accounting(datetime.now(UTC) - timedelta(minutes=5))

    assert (job.job_id, job.state, job.exit_code, job.signal) == ("41", "FAILED", 3, 0)
    assert job.node_names == ("gpu001", "gpu002") and job.gpus == 16
    assert job.gpu_seconds == 160
    query = next(r["path"] for r in server.requests if r["path"].startswith("/slurmdb"))
    assert "start_time=now-" in query  # relative: the server's time zone never matters

    server.routes[("GET", "/slurmdb/v0.0.38/jobs")] = (
        200,
        {"errors": [{"error_number": 9003, "error": "Nothing found with query"}]},
    )
    assert driver.accounting(datetime.now(UTC) - timedelta(minutes=5)) == []
