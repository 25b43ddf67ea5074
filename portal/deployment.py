"""What kind of deployment this is: the demo (simulated and emulated parts allowed, and said so on
every page) or production (real drivers only, and everything they need set).

`DEPLOYMENT=production` exists so that a forgotten `SLURM_DRIVER` cannot leave a real deployment
quietly driving the built-in simulated cluster: settings.py calls `production_problems()` and
refuses to start with one message naming every variable to fix, so an administrator fixes them
all in one go rather than one restart at a time.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

DEMO = "demo"
PRODUCTION = "production"
DEPLOYMENTS = (DEMO, PRODUCTION)

SIMULATOR_SLURM_DRIVER = "jobs.drivers.simulator.SimulatorDriver"
CLI_SLURM_DRIVER = "jobs.drivers.cli.ScontrolDriver"
REST_SLURM_DRIVER = "jobs.drivers.slurmrestd.SlurmrestdDriver"
EMULATED_FABRIC_DRIVER = "fabric.drivers.emulated.EmulatedDriver"
# Where Slurm's client tools look for slurm.conf when SLURM_CONF is not set (Debian's package).
DEFAULT_SLURM_CONF = "/etc/slurm/slurm.conf"
# `manage.py fabric_emulator_setup` writes the emulator's spec beside the credentials store it
# makes; a credentials store with that file beside it belongs to the demo's emulator lab.
EMULATOR_LAB_MARKER = "spec.json"

# What production always needs from the environment, besides what the chosen drivers need
# (tests/portal/test_deployment.py checks each is set by docker-compose.yml or in .env.example).
REQUIRED_IN_PRODUCTION = ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "SLURM_DRIVER")
# What each real driver needs (SLURM_CONF and SLURM_REST_TOKEN_FILE have alternatives: Slurm's
# default slurm.conf, SLURM_REST_TOKEN; the checks below accept those too).
REQUIRED_BY_DRIVER = {
    CLI_SLURM_DRIVER: ("SLURM_CONF",),
    REST_SLURM_DRIVER: ("SLURM_REST_URL", "SLURM_REST_TOKEN_FILE"),
    "fabric.drivers.ssh.SonicSshDriver": ("FABRIC_CREDENTIALS_FILE", "FABRIC_KNOWN_HOSTS_FILE"),
}


def is_emulator_lab(credentials_file: str) -> bool:
    """The credentials store is the one the demo's SONiC emulator lab wrote (admin/emulator
    password for every switch), so whatever the driver, the switches it reaches are emulated."""
    return (
        bool(credentials_file) and (Path(credentials_file).parent / EMULATOR_LAB_MARKER).is_file()
    )


def simulated_parts(
    *, slurm_driver: str, fabric_driver: str, fabric_credentials_file: str
) -> list[str]:
    """What of the outside world is made up in this process, in the words the page header uses."""
    parts = []
    if slurm_driver == SIMULATOR_SLURM_DRIVER:
        parts.append("simulated cluster")
    if fabric_driver == EMULATED_FABRIC_DRIVER or is_emulator_lab(fabric_credentials_file):
        parts.append("emulated switches")
    return parts


def _is_importable(dotted_path: str) -> bool:
    module_name, _, class_name = dotted_path.rpartition(".")
    if not module_name or not class_name:
        return False
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        return False


def _missing_file(path: str) -> bool:
    return not path or not Path(path).is_file()


def production_problems(environ: Mapping[str, str], settings: Mapping[str, object]) -> list[str]:
    """Every reason this environment is not a production deployment, one line per variable.

    `environ` is the process environment (to tell a value that was set from a default);
    `settings` the values settings.py derived from it.
    """
    problems = []
    for name in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL"):
        if not environ.get(name, "").strip():
            problems.append(f"{name} is not set")
    if environ.get("DATABASE_URL", "").strip() and str(
        settings["DATABASES"]["default"]["ENGINE"]  # type: ignore[index]
    ).endswith("sqlite3"):
        problems.append("DATABASE_URL must point at PostgreSQL, not SQLite")

    slurm_driver = str(settings["SLURM_DRIVER"])
    if not environ.get("SLURM_DRIVER", "").strip():
        problems.append(
            f"SLURM_DRIVER is not set (the default is the simulated cluster); use "
            f"{CLI_SLURM_DRIVER} or {REST_SLURM_DRIVER}"
        )
    elif slurm_driver == SIMULATOR_SLURM_DRIVER:
        problems.append(f"SLURM_DRIVER={slurm_driver} is the simulated cluster")
    elif not _is_importable(slurm_driver):
        problems.append(f"SLURM_DRIVER={slurm_driver} cannot be imported")
    elif slurm_driver == CLI_SLURM_DRIVER:
        slurm_conf = str(settings["SLURM_CONF"]) or DEFAULT_SLURM_CONF
        if _missing_file(slurm_conf):
            problems.append(
                f"SLURM_CONF: {slurm_conf} does not exist (Slurm's client tools read it)"
            )
        bin_dir = str(settings["SLURM_BIN_DIR"])
        if not shutil.which("scontrol", path=bin_dir or os.environ.get("PATH")):
            problems.append(
                f"SLURM_BIN_DIR: no scontrol in {bin_dir or 'PATH'} (install slurm-client)"
            )
    elif slurm_driver == REST_SLURM_DRIVER:
        if not environ.get("SLURM_REST_URL", "").strip():
            problems.append("SLURM_REST_URL is not set")
        token_file = str(settings["SLURM_REST_TOKEN_FILE"])
        if not settings["SLURM_REST_TOKEN"] and not token_file:
            problems.append("SLURM_REST_TOKEN_FILE (or SLURM_REST_TOKEN) is not set")
        elif token_file and _missing_file(token_file):
            problems.append(f"SLURM_REST_TOKEN_FILE: {token_file} does not exist")

    fabric_driver = str(settings["FABRIC_DRIVER"])
    credentials_file = str(settings["FABRIC_CREDENTIALS_FILE"])
    known_hosts_file = str(settings["FABRIC_KNOWN_HOSTS_FILE"])
    if fabric_driver == EMULATED_FABRIC_DRIVER:
        problems.append(f"FABRIC_DRIVER={fabric_driver} runs emulated switches")
    elif not _is_importable(fabric_driver):
        problems.append(f"FABRIC_DRIVER={fabric_driver} cannot be imported")
    if _missing_file(credentials_file):
        problems.append(f"FABRIC_CREDENTIALS_FILE: {credentials_file} does not exist")
    elif is_emulator_lab(credentials_file):
        problems.append(
            f"FABRIC_CREDENTIALS_FILE: {credentials_file} is the demo's SONiC emulator lab "
            f"({EMULATOR_LAB_MARKER} beside it), not real switches"
        )
    if _missing_file(known_hosts_file):
        problems.append(
            f"FABRIC_KNOWN_HOSTS_FILE: {known_hosts_file} does not exist (ssh-keyscan the switches)"
        )
    problems += sign_in_problems(settings)
    return problems


def sign_in_problems(settings: Mapping[str, object]) -> list[str]:
    """What makes the directory or single sign-on settings unsafe for production."""
    problems = []
    if settings.get("LDAP_ENABLED"):
        uri = str(settings["AUTH_LDAP_SERVER_URI"])
        if uri.startswith("ldap://") and not settings["AUTH_LDAP_START_TLS"]:
            problems.append(
                f"LDAP_SERVER_URI={uri} without LDAP_START_TLS sends every password in clear "
                "text; use ldaps:// or set LDAP_START_TLS=1"
            )
        if settings["AUTH_LDAP_BIND_DN"] and not settings["AUTH_LDAP_BIND_PASSWORD"]:
            problems.append("LDAP_BIND_PASSWORD_FILE (or LDAP_BIND_PASSWORD) is not set")
        if not settings["LDAP_ROLE_GROUPS"]:
            problems.append(
                "LDAP_SERVER_URI is set but no LDAP_<ROLE>_GROUP is: nobody could sign in"
            )
    if settings.get("REMOTE_AUTH_ENABLED"):
        everyone = [n for n in settings["REMOTE_AUTH_TRUSTED_PROXIES"] if n.prefixlen == 0]  # type: ignore[attr-defined]
        if everyone:
            problems.append(
                f"REMOTE_AUTH_TRUSTED_PROXIES includes {everyone[0]}: any client could name "
                "any user; list the proxy's own addresses"
            )
    return problems
