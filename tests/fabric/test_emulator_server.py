"""The SSH server around the switches: scale, host keys, injected faults, Redis, the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path

import asyncssh
import pytest
import redis

from fabric.emulator import (
    DEFAULT_PASSWORD,
    FabricServer,
    NeighborSpec,
    RedisDatabase,
    SwitchSpec,
    generic_specs,
    serve_fabric,
)

pytestmark = pytest.mark.emulator

REPOSITORY = Path(__file__).resolve().parents[2]


async def run(server: FabricServer, hostname: str, command: str, **options: object
              ) -> asyncssh.SSHCompletedProcess:
    async with asyncssh.connect(
        server.host, server.ports[hostname], username="admin", password=DEFAULT_PASSWORD,
        client_keys=None, known_hosts=asyncssh.import_known_hosts(server.known_hosts()),
    ) as connection:
        return await connection.run(command, **options)


@pytest.mark.asyncio
async def test_one_process_serves_26_switches(tmp_path):
    specs = generic_specs(26)
    server = await serve_fabric(specs, host_key_dir=tmp_path)
    try:
        assert len(set(server.ports.values())) == 26
        results = await asyncio.gather(*(run(server, spec.hostname, "hostname") for spec in specs))
        assert [result.stdout for result in results] == [f"{spec.hostname}\n" for spec in specs]
        keys = {server.host_key(spec.hostname).export_public_key() for spec in specs}
        assert len(keys) == 26
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_switches_keep_their_host_key_across_restarts(tmp_path):
    specs = [SwitchSpec("leaf01"), SwitchSpec("leaf02")]
    first = await serve_fabric(specs, host_key_dir=tmp_path)
    try:
        port = first.ports["leaf01"]
        before = (await asyncssh.get_server_host_key(first.host, port)).get_fingerprint()
        assert before == first.host_key("leaf01").get_fingerprint()
    finally:
        await first.close()
    assert (tmp_path / "leaf01" / "ssh_host_ed25519_key.pub").exists()

    second = await serve_fabric(specs, host_key_dir=tmp_path)
    try:
        presented = await asyncssh.get_server_host_key(second.host, second.ports["leaf01"])
        assert presented.get_fingerprint() == before
        # Strict host key checking against the stored key succeeds after the restart.
        assert (await run(second, "leaf01", "hostname")).stdout == "leaf01\n"
    finally:
        await second.close()


@pytest.mark.asyncio
async def test_response_delay_makes_the_client_time_out(tmp_path):
    server = await serve_fabric([SwitchSpec("slow01", response_delay=5.0)], host_key_dir=tmp_path)
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(run(server, "slow01", "show version"), timeout=0.5)
        server.set_response_delay("slow01", 0)
        result = await asyncio.wait_for(run(server, "slow01", "hostname"), timeout=10)
        assert result.stdout == "slow01\n"
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_an_unreachable_switch_refuses_connections(tmp_path):
    server = await serve_fabric([SwitchSpec("dark01", unreachable=True), SwitchSpec("lit01")],
                                host_key_dir=tmp_path)
    try:
        with pytest.raises(ConnectionRefusedError):
            await run(server, "dark01", "hostname")
        assert (await run(server, "lit01", "hostname")).exit_status == 0
        await server.set_unreachable("dark01", False)
        assert (await run(server, "dark01", "hostname")).stdout == "dark01\n"
        await server.set_unreachable("dark01", True)
        with pytest.raises(ConnectionRefusedError):
            await run(server, "dark01", "hostname")
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_switch_state_can_live_in_redis(tmp_path):
    prefix = f"test-emulator-{uuid.uuid4().hex[:8]}:"
    numbers = dict.fromkeys(("APPL_DB", "COUNTERS_DB", "CONFIG_DB", "STATE_DB"), 14)
    databases: list[RedisDatabase] = []

    def database(spec: SwitchSpec) -> RedisDatabase:
        databases.append(RedisDatabase(f"{prefix}{spec.hostname}:", db_numbers=numbers))
        return databases[-1]

    spec = SwitchSpec("leaf01", neighbors=[NeighborSpec("Ethernet8", "gpu001", "mlx5_0")])
    server = await serve_fabric([spec], host_key_dir=tmp_path, database=database)
    raw = redis.Redis(db=14, decode_responses=True)
    try:
        result = await run(server, "leaf01", "sudo config interface shutdown Ethernet8")
        assert result.exit_status == 0
        assert raw.hget(f"{prefix}leaf01:CONFIG_DB:PORT|Ethernet8", "admin_status") == "down"
        assert raw.hget(f"{prefix}leaf01:APPL_DB:PORT_TABLE:Ethernet8", "oper_status") == "down"
        # A raw write reaches the switch as it reaches portmgrd on a real box.
        raw.hset(f"{prefix}leaf01:CONFIG_DB:PORT|Ethernet8", "admin_status", "up")
        result = await run(server, "leaf01", 'sonic-db-cli CONFIG_DB HGET "PORT|Ethernet8" mtu')
        assert result.stdout == "9100\n"
        result = await run(server, "leaf01",
                           'sonic-db-cli CONFIG_DB HSET "PORT|Ethernet8" admin_status up')
        assert result.stdout == "0\n"
        result = await run(server, "leaf01",
                           'sonic-db-cli APPL_DB HGET "PORT_TABLE:Ethernet8" oper_status')
        assert result.stdout == "up\n"
    finally:
        await server.close()
        for key in raw.scan_iter(match=f"{prefix}*", count=1000):
            raw.delete(key)
        raw.close()
        for db in databases:
            db.close()


def test_command_line_prints_the_ports_and_serves_until_terminated(tmp_path):
    spec_file = tmp_path / "fabric.json"
    spec_file.write_text(json.dumps({"switches": [
        {"hostname": "leaf01", "neighbors": [
            {"port": "Ethernet0", "peer_name": "spine01", "peer_port": "Ethernet0"}]},
        {"hostname": "spine01", "role": "spine", "neighbors": [
            {"port": "Ethernet0", "peer_name": "leaf01", "peer_port": "Ethernet0"}]},
    ]}))
    process = subprocess.Popen(
        [sys.executable, "-m", "fabric.emulator", "--spec", str(spec_file), "--base-port", "0",
         "--keys", str(tmp_path / "keys"), "--password", "s3cret"],
        cwd=REPOSITORY, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        ports = json.loads(process.stdout.readline())
        assert set(ports) == {"leaf01", "spine01"}

        async def ask() -> str:
            async with asyncssh.connect("127.0.0.1", ports["spine01"], username="admin",
                                        password="s3cret", client_keys=None,
                                        known_hosts=None) as connection:
                result = await connection.run('sonic-db-cli APPL_DB HGET '
                                              '"LLDP_ENTRY_TABLE:Ethernet0" lldp_rem_sys_name')
                return result.stdout

        assert asyncio.run(ask()) == "leaf01\n"
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
