"""manage.py fabric_emulator_setup [--dir var/fabric] [--base-port 2201]

Prepares the SONiC emulator lab for the demo (and for anyone trying the SSH driver without a
switch): one emulated switch per inventory switch, cabled and LLDP-wired as the inventory says,
and the settings that point the real SSH driver at it. Writes into DIR:
  spec.json         the emulator's switches (`python -m fabric.emulator --spec`)
  credentials.yaml  every credentials_ref of the inventory -> the emulator's admin login
  env               FABRIC_* variables: endpoints (127.0.0.1, one port per switch from
                    BASE_PORT in spec order), the credentials file, known_hosts with
                    trust-on-first-use for these lab switches only
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import yaml
from django.core.management.base import BaseCommand

from fabric.drivers.emulated import specs_from_inventory
from fabric.emulator import DEFAULT_PASSWORD
from inventory.models import Switch


class Command(BaseCommand):
    help = (
        "Write the SONiC emulator lab's spec, credentials and FABRIC_* settings from the inventory."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dir", default="var/fabric", type=Path)
        parser.add_argument("--base-port", default=2201, type=int)

    def handle(self, *args, **options):
        directory: Path = options["dir"].resolve()
        directory.mkdir(parents=True, exist_ok=True)
        specs = specs_from_inventory()
        (directory / "spec.json").write_text(
            json.dumps({"switches": [spec.to_dict() for spec in specs]}, indent=1)
        )
        # The emulator gives switch i of the spec the port base + i.
        endpoints = {
            spec.hostname: f"127.0.0.1:{options['base_port'] + index}"
            for index, spec in enumerate(specs)
        }
        references = sorted(
            set(
                Switch.objects.exclude(credentials_ref="").values_list("credentials_ref", flat=True)
            )
        )
        credentials = {
            ref: {"username": "admin", "password": DEFAULT_PASSWORD} for ref in references
        }
        credentials_file = directory / "credentials.yaml"
        credentials_file.write_text(yaml.safe_dump(credentials))
        credentials_file.chmod(0o600)
        settings = {
            "FABRIC_SWITCH_ENDPOINTS": json.dumps(endpoints, separators=(",", ":")),
            "FABRIC_CREDENTIALS_FILE": str(credentials_file),
            "FABRIC_KNOWN_HOSTS_FILE": str(directory / "known_hosts"),
            "FABRIC_TRUST_ON_FIRST_USE": ",".join(endpoints),
            "FABRIC_DRIVER": "fabric.drivers.ssh.SonicSshDriver",
        }
        (directory / "env").write_text(
            "".join(f"export {name}={shlex.quote(value)}\n" for name, value in settings.items())
        )
        self.stdout.write(
            f"{len(specs)} emulated switches on 127.0.0.1:{options['base_port']}-"
            f"{options['base_port'] + len(specs) - 1}; settings in {directory / 'env'}"
        )
