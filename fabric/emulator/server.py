"""SSH front end: one process serves many emulated switches, each on its own TCP port.

Every switch has a persistent ed25519 host key (generated once into `host_key_dir`), accepts
user `admin` by password and, when keys are given, by public key, and answers both exec
requests (`ssh admin@switch 'show version'`) and interactive shells with the SONiC prompt.
Faults for tests: `response_delay` holds every answer back, `unreachable` closes the listener
so connections are refused (sessions already open carry on).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from .commands import CommandInterpreter
from .database import Database
from .dump import SwitchDump
from .platform import KERNEL_VERSION
from .spec import SwitchSpec
from .switch import Switch, connect_fabric
from .tools.common import CommandResult

logger = logging.getLogger(__name__)

USERNAME = "admin"
# SONiC's factory default for admin: an emulator credential, never a real one.
DEFAULT_PASSWORD = "YourPaSsWoRd"  # noqa: S105
HOST_KEY_NAME = "ssh_host_ed25519_key"
# Key exchanges of Debian 12's OpenSSH 9.2 (which SONiC 202311 runs) that asyncssh offers;
# leaving out asyncssh's newer post-quantum ones keeps clients' negotiation realistic.
KEX_ALGORITHMS = (
    "curve25519-sha256",
    "curve25519-sha256@libssh.org",
    "ecdh-sha2-nistp256",
    "ecdh-sha2-nistp384",
    "ecdh-sha2-nistp521",
    "diffie-hellman-group-exchange-sha256",
    "diffie-hellman-group16-sha512",
    "diffie-hellman-group18-sha512",
    "diffie-hellman-group14-sha256",
)

MOTD = f"""Linux {{hostname}} {KERNEL_VERSION} #1 SMP PREEMPT_DYNAMIC Debian 6.1.38-4 x86_64
You are on
  ____   ___  _   _ _  ____
 / ___| / _ \\| \\ | (_)/ ___|
 \\___ \\| | | |  \\| | | |
  ___) | |_| | |\\  | | |___
 |____/ \\___/|_| \\_|_|\\____|

-- Software for Open Networking in the Cloud --

Unauthorized access and/or use are prohibited.
All access and/or use are subject to monitoring.

Help:    https://sonic-net.github.io/SONiC/

"""

DatabaseFactory = Callable[[SwitchSpec], Database]


def load_host_key(directory: Path, hostname: str) -> asyncssh.SSHKey:
    """The switch's host key, generated on first use and reused on every later start."""
    path = directory / hostname / HOST_KEY_NAME
    if path.exists():
        return asyncssh.read_private_key(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = asyncssh.generate_private_key("ssh-ed25519", comment=f"root@{hostname}")
    key.write_private_key(path)
    path.chmod(0o600)
    key.write_public_key(path.with_name(HOST_KEY_NAME + ".pub"))
    return key


class _AdminOnlyServer(asyncssh.SSHServer):
    """Authentication: user admin, by password or by one of the authorized keys.

    Open connections are kept in `connections` so that the server can end them on close.
    """

    def __init__(self, password: str, authorized_keys: asyncssh.SSHAuthorizedKeys | None,
                 connections: set[asyncssh.SSHServerConnection]):
        self._password = password
        self._authorized_keys = authorized_keys
        self._connections = connections
        self._conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn
        self._connections.add(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self._conn)

    def begin_auth(self, username: str) -> bool:
        if self._conn is not None and self._authorized_keys is not None:
            self._conn.set_authorized_keys(self._authorized_keys if username == USERNAME else None)
        return True

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        return username == USERNAME and secrets.compare_digest(password, self._password)

    def public_key_auth_supported(self) -> bool:
        return self._authorized_keys is not None


@dataclass
class _Endpoint:
    """One switch's listener and its fault settings."""

    switch: Switch
    host_key: asyncssh.SSHKey
    port: int
    response_delay: float
    acceptor: asyncssh.SSHAcceptor | None = None
    connections: set[asyncssh.SSHServerConnection] = field(default_factory=set)
    sessions: set[asyncio.Task] = field(default_factory=set)


class FabricServer:
    """The running emulator: `switches` and `ports` by hostname; `close()` stops it."""

    def __init__(
        self,
        host: str,
        password: str,
        authorized_keys: asyncssh.SSHAuthorizedKeys | None,
    ) -> None:
        self.host = host
        self._password = password
        self._authorized_keys = authorized_keys
        self._endpoints: dict[str, _Endpoint] = {}

    @property
    def switches(self) -> dict[str, Switch]:
        return {name: endpoint.switch for name, endpoint in self._endpoints.items()}

    @property
    def ports(self) -> dict[str, int]:
        return {name: endpoint.port for name, endpoint in self._endpoints.items()}

    def host_key(self, hostname: str) -> asyncssh.SSHKey:
        """The public half of a switch's host key."""
        return self._endpoints[hostname].host_key.convert_to_public()

    def known_hosts(self) -> str:
        """OpenSSH known_hosts lines (`[host]:port key`) for every switch."""
        return "".join(
            f"[{self.host}]:{endpoint.port} "
            f"{endpoint.host_key.export_public_key().decode().strip()}\n"
            for endpoint in self._endpoints.values()
        )

    async def _add(self, switch: Switch, host_key: asyncssh.SSHKey, port: int,
                   unreachable: bool) -> None:
        endpoint = _Endpoint(switch, host_key, port, switch.spec.response_delay)
        self._endpoints[switch.name] = endpoint
        await self._listen(endpoint)
        if unreachable:
            await self.set_unreachable(switch.name, True)

    async def _listen(self, endpoint: _Endpoint) -> None:
        async def handle(process: asyncssh.SSHServerProcess) -> None:
            await self._session(endpoint, process)

        endpoint.acceptor = await asyncssh.listen(
            self.host, endpoint.port,
            server_host_keys=[endpoint.host_key],
            kex_algs=list(KEX_ALGORITHMS),
            server_factory=lambda: _AdminOnlyServer(self._password, self._authorized_keys,
                                                    endpoint.connections),
            process_factory=handle,
            encoding="utf-8",
            reuse_address=True,
        )
        endpoint.port = endpoint.acceptor.get_port()

    async def set_unreachable(self, hostname: str, unreachable: bool) -> None:
        """Refuse (True) or accept again (False) new connections to a switch."""
        endpoint = self._endpoints[hostname]
        if unreachable and endpoint.acceptor is not None:
            endpoint.acceptor.close()
            await endpoint.acceptor.wait_closed()
            endpoint.acceptor = None
        elif not unreachable and endpoint.acceptor is None:
            await self._listen(endpoint)

    def set_response_delay(self, hostname: str, seconds: float) -> None:
        """Hold back every answer of a switch by `seconds` (0 to answer at once)."""
        if seconds < 0:
            raise ValueError("a delay cannot be negative")
        self._endpoints[hostname].response_delay = seconds

    async def close(self) -> None:
        """Stop listening, end the sessions still running and close their connections."""
        for endpoint in self._endpoints.values():
            if endpoint.acceptor is not None:
                endpoint.acceptor.close()
                await endpoint.acceptor.wait_closed()
                endpoint.acceptor = None
            for task in list(endpoint.sessions):
                task.cancel()
            await asyncio.gather(*endpoint.sessions, return_exceptions=True)
            for connection in list(endpoint.connections):
                connection.close()
                await connection.wait_closed()

    # -- sessions --------------------------------------------------------------------------

    async def _session(self, endpoint: _Endpoint, process: asyncssh.SSHServerProcess) -> None:
        task = asyncio.current_task()
        if task is not None:
            endpoint.sessions.add(task)
        status = 1
        try:
            if process.command is not None:
                status = await self._exec(endpoint, process)
            elif process.subsystem is not None:
                process.stderr.write(f"subsystem {process.subsystem} is not supported\n")
            else:
                status = await self._shell(endpoint, process)
            process.exit(status)
        except (asyncssh.Error, OSError) as error:
            # The client went away mid-session; nothing is left to answer.
            logger.debug("session on %s ended: %s", endpoint.switch.name, error)
        finally:
            if task is not None:
                endpoint.sessions.discard(task)

    async def _exec(self, endpoint: _Endpoint, process: asyncssh.SSHServerProcess) -> int:
        interpreter = CommandInterpreter(endpoint.switch, interactive=False)
        await asyncio.sleep(endpoint.response_delay)
        return await self._deliver(interpreter.run(process.command or ""), process)

    async def _shell(self, endpoint: _Endpoint, process: asyncssh.SSHServerProcess) -> int:
        interpreter = CommandInterpreter(endpoint.switch, interactive=True)
        process.stdout.write(MOTD.format(hostname=endpoint.switch.name))
        status = 0
        while not interpreter.closed:
            process.stdout.write(interpreter.prompt)
            line = await _read_line(process)
            if line is None:
                process.stdout.write("logout\n")
                break
            await asyncio.sleep(endpoint.response_delay)
            status = await self._deliver(interpreter.run(line), process)
        return status

    @staticmethod
    async def _deliver(result: CommandResult, process: asyncssh.SSHServerProcess) -> int:
        """Write a result, feeding its questions from the client's input; the exit status."""
        while True:
            process.stdout.write(result.stdout)
            process.stderr.write(result.stderr)
            if result.continuation is None:
                return result.exit_status
            result = result.continuation(await _read_line(process))


async def _read_line(process: asyncssh.SSHServerProcess) -> str | None:
    """One input line without its end, or None at end of input.

    Ctrl-C (a break or an INT signal) abandons the line as bash does: an empty line.
    """
    while True:
        try:
            line = await process.stdin.readline()
        except asyncssh.TerminalSizeChanged:
            continue
        except (asyncssh.BreakReceived, asyncssh.SignalReceived):
            if process.get_terminal_type() is not None:
                # Drop the half-typed line the line editor would otherwise redraw.
                process.channel.clear_input()
            process.stdout.write("^C\n")
            return ""
        return line.rstrip("\r\n") if line else None


async def serve_fabric(
    switches: list[SwitchSpec],
    *,
    host_key_dir: str | Path,
    host: str = "127.0.0.1",
    base_port: int = 0,
    authorized_keys: str | Path | asyncssh.SSHAuthorizedKeys | None = None,
    password: str = DEFAULT_PASSWORD,
    database: DatabaseFactory | None = None,
    clock: Callable[[], float] = time.monotonic,
    dumps: list[SwitchDump] | None = None,
) -> FabricServer:
    """Boot the switches, cable those that name each other, and start their SSH listeners.

    Switch i listens on `base_port + i`, or on a port the OS picks when `base_port` is 0.
    `authorized_keys` is an OpenSSH authorized_keys file (or parsed keys) for user admin;
    `database` makes each switch's database (in memory when None). `dumps` adds switches
    served from database dumps (fabric.emulator.dump), after those of `switches`.
    """
    dumped = [(dump.spec(), dump) for dump in dumps or []]
    names = [spec.hostname for spec in switches] + [spec.hostname for spec, _ in dumped]
    if len(set(names)) != len(names):
        raise ValueError("switch hostnames must be unique")
    if isinstance(authorized_keys, str | Path):
        authorized_keys = asyncssh.read_authorized_keys(str(authorized_keys))
    booted = [Switch(spec, database(spec) if database else None, clock) for spec in switches]
    booted += [Switch(spec, database(spec) if database else None, clock, dump=dump)
               for spec, dump in dumped]
    connect_fabric(booted)
    server = FabricServer(host, password, authorized_keys)
    key_dir = Path(host_key_dir)
    try:
        for index, switch in enumerate(booted):
            port = base_port + index if base_port else 0
            await server._add(switch, load_host_key(key_dir, switch.name), port,
                              switch.spec.unreachable)
    except BaseException:
        await server.close()
        raise
    return server
