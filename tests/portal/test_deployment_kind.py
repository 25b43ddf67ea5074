"""DEPLOYMENT=production refuses simulated or emulated drivers and missing driver settings,
and in the demo every page's header says what is simulated."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

REPO = Path(__file__).resolve().parents[2]
BANNER = 'class="demo-banner"'


def manage_check(environment: dict[str, str]) -> subprocess.CompletedProcess:
    """`manage.py check` in a fresh process with only this environment (and PATH, HOME)."""
    base = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env={**base, **environment},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def real_driver_files(tmp_path) -> dict[str, str]:
    """What a real CLI + SSH deployment points at: slurm.conf, credentials store, known_hosts."""
    slurm_conf = tmp_path / "slurm.conf"
    slurm_conf.write_text("ClusterName=test\nSlurmctldHost=controller\n")
    credentials = tmp_path / "secrets" / "fabric-credentials.yaml"
    credentials.parent.mkdir()
    credentials.write_text("switch-admin: {username: admin, key_file: /run/secrets/switch-key}\n")
    known_hosts = tmp_path / "secrets" / "known_hosts"
    known_hosts.write_text("leaf01 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample\n")
    return {
        "SLURM_CONF": str(slurm_conf),
        "FABRIC_CREDENTIALS_FILE": str(credentials),
        "FABRIC_KNOWN_HOSTS_FILE": str(known_hosts),
    }


@pytest.fixture
def production_environment(real_driver_files) -> dict[str, str]:
    return {
        "DEPLOYMENT": "production",
        "SECRET_KEY": "x" * 60,
        "DATABASE_URL": "postgresql://portal:secret@127.0.0.1:5432/portal",
        "REDIS_URL": "redis://127.0.0.1:6379/11",
        "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver",
        **real_driver_files,
    }


def test_production_with_the_simulator_refuses_to_start_naming_each_variable():
    result = manage_check({"DEPLOYMENT": "production"})
    assert result.returncode != 0
    message = result.stderr.split("ConfigurationError:", 1)[-1]
    for name in (
        "SECRET_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "SLURM_DRIVER",
        "FABRIC_CREDENTIALS_FILE",
        "FABRIC_KNOWN_HOSTS_FILE",
    ):
        assert name in message, f"{name} not named in: {message}"
    # One error names them all: an administrator fixes everything in one restart.
    assert result.stderr.count("ConfigurationError:") == 1


def test_production_with_every_real_setting_starts(production_environment):
    assert shutil.which("scontrol"), "slurm-client is not installed on this machine"
    result = manage_check(production_environment)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"SLURM_DRIVER": "jobs.drivers.simulator.SimulatorDriver"}, "SLURM_DRIVER="),
        ({"FABRIC_DRIVER": "fabric.drivers.emulated.EmulatedDriver"}, "FABRIC_DRIVER="),
        ({"SLURM_DRIVER": "jobs.drivers.nothing.Here"}, "SLURM_DRIVER=jobs.drivers.nothing"),
        ({"SLURM_CONF": "/nonexistent/slurm.conf"}, "SLURM_CONF"),
        ({"SLURM_BIN_DIR": "/nonexistent"}, "SLURM_BIN_DIR"),
        ({"DATABASE_URL": "sqlite:///portal.sqlite3"}, "DATABASE_URL"),
        ({"DEPLOYMENT": "staging"}, "DEPLOYMENT='staging'"),
        (
            {"SLURM_DRIVER": "jobs.drivers.slurmrestd.SlurmrestdDriver"},
            "SLURM_REST_URL is not set",
        ),
        (
            {
                "SLURM_DRIVER": "jobs.drivers.slurmrestd.SlurmrestdDriver",
                "SLURM_REST_URL": "http://slurmrestd:6820",
            },
            "SLURM_REST_TOKEN_FILE",
        ),
        (
            {
                "SLURM_DRIVER": "jobs.drivers.slurmrestd.SlurmrestdDriver",
                "SLURM_REST_URL": "http://slurmrestd:6820",
                "SLURM_REST_TOKEN_FILE": "/nonexistent/token",
            },
            "SLURM_REST_TOKEN_FILE: /nonexistent/token does not exist",
        ),
        (
            {
                "LDAP_SERVER_URI": "ldap://directory.example",
                "LDAP_USER_SEARCH_BASE": "ou=people,dc=example,dc=org",
                "LDAP_GROUP_SEARCH_BASE": "ou=groups,dc=example,dc=org",
                "LDAP_ADMIN_GROUP": "cn=hpc-admins,ou=groups,dc=example,dc=org",
            },
            "LDAP_SERVER_URI=ldap://directory.example without LDAP_START_TLS",
        ),
    ],
)
def test_production_refuses_each_fake_or_missing_part(production_environment, change, named):
    result = manage_check({**production_environment, **change})
    assert result.returncode != 0
    assert named in result.stderr.split("ConfigurationError:", 1)[-1], result.stderr[-2000:]


def test_production_refuses_the_demos_emulator_lab(production_environment, tmp_path):
    """The SSH driver pointed at the demo's SONiC emulator (what `fabric_emulator_setup` writes)
    reaches emulated switches, however real the driver."""
    lab = tmp_path / "fabric"
    lab.mkdir()
    (lab / "spec.json").write_text('{"switches": []}')
    (lab / "credentials.yaml").write_text("lab: {username: admin, password: admin}\n")
    result = manage_check(
        {**production_environment, "FABRIC_CREDENTIALS_FILE": str(lab / "credentials.yaml")}
    )
    assert result.returncode != 0
    assert "FABRIC_CREDENTIALS_FILE" in result.stderr and "emulator lab" in result.stderr


def test_the_demo_tells_every_page_it_is_simulated(db, settings):
    settings.SLURM_DRIVER = "jobs.drivers.simulator.SimulatorDriver"
    settings.FABRIC_DRIVER = "fabric.drivers.emulated.EmulatedDriver"
    page = Client().get("/login/")
    assert page.status_code == 200
    html = page.content.decode()
    assert BANNER in html
    assert "demo: simulated cluster" in html and "demo: emulated switches" in html


def test_the_demos_emulator_lab_is_called_emulated(db, settings, tmp_path):
    (tmp_path / "spec.json").write_text('{"switches": []}')
    settings.SLURM_DRIVER = "jobs.drivers.cli.ScontrolDriver"
    settings.FABRIC_DRIVER = "fabric.drivers.ssh.SonicSshDriver"
    settings.FABRIC_CREDENTIALS_FILE = str(tmp_path / "credentials.yaml")
    html = Client().get("/login/").content.decode()
    assert "demo: emulated switches" in html and "simulated cluster" not in html


def test_real_drivers_show_no_demo_banner(db, settings, real_driver_files):
    settings.SLURM_DRIVER = "jobs.drivers.cli.ScontrolDriver"
    settings.FABRIC_DRIVER = "fabric.drivers.ssh.SonicSshDriver"
    settings.FABRIC_CREDENTIALS_FILE = real_driver_files["FABRIC_CREDENTIALS_FILE"]
    html = Client().get("/login/").content.decode()
    assert BANNER not in html and "demo:" not in html
