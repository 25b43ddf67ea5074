"""The embedded default of `make demo`, run for real: SQLite, no Redis, tasks in process.

`embedded_environment()` is the test process's environment without the portal's own settings
variables (DATABASE_URL and REDIS_URL among them), so every setting takes the default `make
demo` runs with, and with VAR_DIR pointing at a temporary directory instead of the checkout's
var/. `EmbeddedDemo` prepares it the way the Makefile's `demo` target does and serves it with
scripts/demo-run, the demo's own processes (SONiC emulator and `manage.py rundemo`).
"""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

REPOSITORY = Path(__file__).resolve().parents[2]
# The interpreter `make demo` and scripts/demo-run use.
VENV_PYTHON = REPOSITORY / ".venv" / "bin" / "python"
PYTHON = str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable
# Prefixes of the variables portal/settings.py reads for deployments; the demo sets none.
PORTAL_VARIABLE_PREFIXES = (
    "DATABASE_",
    "REDIS_",
    "CELERY_",
    "CHANNEL_",
    "SLURM_",
    "FABRIC_",
    "JOBS_",
    "ACTION_",
    "FAULTS_",
)
PORTAL_VARIABLES = {
    "DJANGO_SETTINGS_MODULE",
    "SECRET_KEY",
    "REQUIRE_SECRET_KEY",
    "DEBUG",
    "VAR_DIR",
}
# The SONiC emulator serves every switch of the inventory on a port of its own from a base.
EMULATOR_PORTS = 64


def embedded_environment(var_dir: Path) -> dict[str, str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in PORTAL_VARIABLES and not name.startswith(PORTAL_VARIABLE_PREFIXES)
    }
    environment.update(VAR_DIR=str(var_dir), PYTHONUNBUFFERED="1")
    return environment


def fabric_lab_settings(var_dir: Path) -> dict[str, str]:
    """The FABRIC_* settings scripts/demo-run sources from the lab's env file."""
    settings = {}
    for line in (var_dir / "fabric" / "env").read_text().splitlines():
        _export, assignment = shlex.split(line)
        name, _, value = assignment.partition("=")
        settings[name] = value
    return settings


def manage(
    var_dir: Path, *arguments: str, extra: dict[str, str] | None = None, timeout: float = 300
) -> str:
    """`manage.py ARGUMENTS` in the embedded default; its stdout (stderr too on failure)."""
    result = subprocess.run(
        [PYTHON, "manage.py", *arguments],
        cwd=REPOSITORY,
        env={**embedded_environment(var_dir), **(extra or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode:
        raise RuntimeError(
            f"manage.py {' '.join(arguments)} exited {result.returncode}:\n"
            f"{result.stdout}\n{result.stderr}"
        )
    return result.stdout


def run_python(var_dir: Path, code: str, extra: dict[str, str] | None = None) -> str:
    """Python run by `manage.py shell -c` in the embedded default; its stdout."""
    return manage(var_dir, "shell", "-c", code, extra=extra)


def _port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block(size: int) -> int:
    """The first of `size` consecutive free ports (other demos and tests use 2201 and up)."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 60000 - size)
        if all(_port_is_free(port) for port in range(base, base + size)):
            return base
    raise RuntimeError(f"no block of {size} free ports")


class EmbeddedDemo:
    """`make demo` in `var_dir`: migrate, import_topology, seed_demo, then scripts/demo-run."""

    def __init__(self, var_dir: Path, password: str):
        self.var_dir = var_dir
        self.password = password
        self.port = free_port_block(1)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.log_path = var_dir / "demo-run.log"
        self.probe_world = None  # the objects the tests' probes point at, once they exist

    def prepare(self) -> None:
        manage(self.var_dir, "migrate", "--no-input")
        manage(self.var_dir, "import_topology", "inventory/fixtures/sakuraone.yaml")
        # One argument: a random password may start with "-".
        manage(self.var_dir, "seed_demo", f"--password={self.password}")

    def start(self, timeout: float = 90) -> None:
        environment = embedded_environment(self.var_dir)
        environment["FABRIC_EMULATOR_BASE_PORT"] = str(free_port_block(EMULATOR_PORTS))
        # Telemetry has its own tests (tests/telemetry/); here its fixed ports and its history
        # backfill (CPU for seconds) would only slow and entangle this one.
        environment["DEMO_TELEMETRY"] = "0"
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                ["scripts/demo-run", "127.0.0.1", str(self.port)],
                cwd=REPOSITORY,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped as one below
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"scripts/demo-run exited early:\n{self.log()}")
            try:
                # The first request imports the URL conf and views: slow on a busy machine.
                if requests.get(f"{self.base_url}/healthz", timeout=30).status_code == 200:
                    return
            except requests.RequestException:  # not listening yet, or a timeout
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the demo did not answer /healthz in {timeout}s:\n{self.log()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=15)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def server_errors_logged(self) -> list[str]:
        """Lines of the demo's log that report a request that failed inside the portal."""
        return [line for line in self.log().splitlines() if "Internal Server Error" in line]

    def session(self, username: str) -> requests.Session:
        """A browser-like session logged in through the login form."""
        session = requests.Session()
        session.get(f"{self.base_url}/login/", timeout=30)
        response = session.post(
            f"{self.base_url}/login/",
            data={
                "username": username,
                "password": self.password,
                "csrfmiddlewaretoken": session.cookies["csrftoken"],
            },
            allow_redirects=False,
            timeout=30,
        )
        if response.status_code != 302:
            raise RuntimeError(f"login as {username}: {response.status_code}")
        return session

    def api(self, username: str) -> requests.Session:
        """An automation client: a token the user created for themselves, no cookies."""
        browser = self.session(username)
        response = browser.post(
            f"{self.base_url}/api/tokens/",
            json={"name": "embedded default probe"},
            headers={"X-CSRFToken": browser.cookies["csrftoken"]},
            timeout=30,
        )
        response.raise_for_status()
        client = requests.Session()
        client.headers["Authorization"] = f"Token {response.json()['key']}"
        return client

    def world(self) -> dict:
        return json.loads(
            run_python(self.var_dir, "from tests.portal.embedded_world import describe; describe()")
            .strip()
            .splitlines()[-1]
        )
