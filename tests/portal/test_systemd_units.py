"""The bare-metal path: systemd units for web, worker and beat on a management node,
checked by systemd's own `systemd-analyze verify` and against the compose commands."""

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "deploy" / "systemd"
INSTALL_DIR = "/opt/gpu-ops-portal"
ENVIRONMENT_FILE = "/etc/gpu-ops-portal/portal.env"
SERVICES = {
    "web": "portal-web.service",
    "worker": "portal-worker.service",
    "beat": "portal-beat.service",
}


def directives(unit: Path) -> dict[str, list[str]]:
    """`Key=value` lines by key (systemd allows a key more than once)."""
    found: dict[str, list[str]] = {}
    for line in unit.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def installed_copies(tmp_path: Path) -> list[Path]:
    """The units as installed with this checkout as the install directory (its .venv has python
    and celery), so that verify can check that every ExecStart is an executable."""
    copies = []
    for name in SERVICES.values():
        copy = tmp_path / name
        copy.write_text((UNITS / name).read_text().replace(INSTALL_DIR, str(REPO)))
        copies.append(copy)
    return copies


def test_systemd_analyze_verify_passes_without_a_warning(tmp_path):
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing: apt-get install systemd"
    result = subprocess.run(
        [analyze, "verify", *map(str, installed_copies(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    # Unknown or misspelt keys are only warnings to verify ("ignoring"): none is allowed.
    assert result.stderr.strip() == "" and result.stdout.strip() == ""


def test_systemd_analyze_verify_catches_a_broken_unit(tmp_path):
    """verify is not vacuous here: a misspelt key and a missing program are reported."""
    web = installed_copies(tmp_path)[0]
    web.write_text(
        web.read_text()
        .replace("Restart=on-failure", "Restrat=on-failure")
        .replace(f"{REPO}/.venv/bin/python", "/nonexistent/python")
    )
    result = subprocess.run(
        ["systemd-analyze", "verify", str(web)], capture_output=True, text=True, timeout=60
    )
    assert "Unknown key 'Restrat'" in result.stderr
    assert result.returncode != 0 and "/nonexistent/python is not executable" in result.stderr


@pytest.mark.parametrize("service", SERVICES)
def test_each_unit_runs_what_compose_runs_as_the_portal_user_from_the_environment_file(service):
    unit = directives(UNITS / SERVICES[service])
    assert unit["EnvironmentFile"] == [ENVIRONMENT_FILE]
    assert unit["User"] == ["portal"] and unit["WorkingDirectory"] == [INSTALL_DIR]
    assert unit["Restart"] == ["on-failure"]
    assert unit["WantedBy"] == ["multi-user.target"]
    command = shlex.split(unit["ExecStart"][0])
    assert command[0] == f"{INSTALL_DIR}/.venv/bin/{Path(command[0]).name}"
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"][service]
    compose_command = compose["command"]
    # The same program and application; listening address and schedule path are the node's.
    assert Path(command[0]).name == compose_command[0]
    if service == "web":
        assert command[-1] == compose_command[-1] == "portal.asgi:application"
    if service == "worker":
        assert command[1:] == compose_command[1:]
    if service == "beat":
        assert command[1:4] == compose_command[1:4]
        schedule = command[command.index("--schedule") + 1]
        assert schedule.startswith("/var/lib/" + unit["StateDirectory"][0] + "/")
