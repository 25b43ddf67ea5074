"""Write sushy-emulator's configuration for scripts/bmc-up: its fake driver with one system per
node, Basic auth from an htpasswd file (bcrypt, as sushy-tools checks it), loopback only, and the
portal's side of the same facts (a BMC credentials store, the endpoint and system id of each node).

    python scripts/bmc/emulator_config.py --dir DIR --nodes 100 --port 8610

System ids are UUIDs derived from the host name (`system_uuid`), so a test or the inventory can
name a node's system without asking the emulator. No Django: bmc-up runs it before anything else.
"""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path

import bcrypt

# Test-only login of the emulated BMCs; the emulator listens on loopback only.
USERNAME = "portal"
PASSWORD = "portal-bmc-test"  # noqa: S105 - a test double's password, written to its own dir
CREDENTIALS_REF = "emulator"
SYSTEM_NAMESPACE = uuid.UUID("6f1d3c52-9a1e-4c8e-8f3e-5b1f2a7d0c11")


def system_uuid(hostname: str) -> str:
    return str(uuid.uuid5(SYSTEM_NAMESPACE, hostname))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--port", type=int, default=8610)
    args = parser.parse_args()
    if not 1 <= args.nodes <= 999:
        parser.error("--nodes must be 1..999")
    directory = args.dir.resolve()
    hostnames = [f"gpu{number:03d}" for number in range(1, args.nodes + 1)]
    systems = [
        {
            "uuid": system_uuid(hostname),
            "name": hostname,
            "power_state": "On",
            "external_notifier": False,
            "nics": [{"mac": f"02:00:00:00:{number // 256:02x}:{number % 256:02x}"}],
        }
        for number, hostname in enumerate(hostnames, start=1)
    ]
    digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    (directory / "htpasswd").write_text(f"{USERNAME}:{digest}\n")
    (directory / "emulator.conf").write_text(
        "\n".join(
            [
                "SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'",
                f"SUSHY_EMULATOR_LISTEN_PORT = {args.port}",
                "SUSHY_EMULATOR_FAKE_DRIVER = True",
                f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}",
                f"SUSHY_EMULATOR_AUTH_FILE = {str(directory / 'htpasswd')!r}",
                f"SUSHY_EMULATOR_STATE_DIR = {str(directory / 'state')!r}",
                "",
            ]
        )
    )
    credentials = directory / "credentials.json"
    credentials.write_text(
        json.dumps({CREDENTIALS_REF: {"username": USERNAME, "password": PASSWORD}})
    )
    credentials.chmod(0o600)
    url = f"http://127.0.0.1:{args.port}"
    (directory / "systems.json").write_text(
        json.dumps(
            {
                "url": url,
                "credentials_ref": CREDENTIALS_REF,
                "systems": {hostname: system_uuid(hostname) for hostname in hostnames},
            }
        )
    )


if __name__ == "__main__":
    main()
