"""What a production deployment drives, for the production-shape tests: the inventory's
switches served by the SONiC emulator over real SSH (the real Slurm test cluster is
tests/jobs/slurm_fixtures.py's `real_slurm`)."""

from __future__ import annotations

import json

import pytest

from fabric.drivers.emulated import specs_from_inventory
from inventory.models import Switch
from tests.deploy.compose import SWITCHES
from tests.fabric.driver_contract import EMULATOR_LOGIN, EmulatorThread, write_credentials


@pytest.fixture
def emulated_switches(transactional_db, tmp_path):
    """The inventory's switches served by the SONiC emulator over SSH on loopback, and the
    secrets a site mounts for them: a credentials store and known_hosts (no trust on first
    use)."""
    Switch.objects.bulk_create(
        [
            Switch(hostname=name, role=Switch.Role.SPINE, credentials_ref="sonic/admin")
            for name in SWITCHES
        ]
    )
    keys = tmp_path / "emulator-keys"
    keys.mkdir()
    fabric = EmulatorThread(specs_from_inventory(), keys)
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    known_hosts = secrets_dir / "known_hosts"
    known_hosts.write_text(fabric.known_hosts())
    credentials = write_credentials(
        secrets_dir / "fabric-credentials.json", {"sonic/admin": EMULATOR_LOGIN}
    )
    fabric.settings = {
        "FABRIC_DRIVER": "fabric.drivers.ssh.SonicSshDriver",
        "FABRIC_SWITCH_ENDPOINTS": json.dumps(
            {name: f"127.0.0.1:{fabric.port_of(name)}" for name in SWITCHES}
        ),
        "FABRIC_CREDENTIALS_FILE": str(credentials),
        "FABRIC_KNOWN_HOSTS_FILE": str(known_hosts),
    }
    yield fabric
    fabric.stop()
