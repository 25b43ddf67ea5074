"""The emulated switch's shell: what runs a command line received over SSH.

A line is split like bash splits it (quotes and backslashes, `;`, `&&` and `||` lists), each
command is split into words with shlex, `sudo` grants root for one command, and the word
decides which emulated tool runs. Pipes and redirections are refused with exit status 2: the
tools the portal drives never need them, and faking them would hide mistakes.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable

from .switch import Switch
from .tools.common import CommandResult, Context, Handler, fail, ok
from .tools.config import config
from .tools.counterpoll import counterpoll
from .tools.dbcli import sonic_db_cli
from .tools.dbdump import sonic_db_dump
from .tools.qos import ecnconfig
from .tools.show import intfutil, portstat, queuestat, show
from .tools.vtysh import vtysh

TOOLS: dict[str, Handler] = {
    "config": config,
    "counterpoll": counterpoll,
    "ecnconfig": ecnconfig,
    "intfutil": intfutil,
    "portstat": portstat,
    "queuestat": queuestat,
    "show": show,
    "sonic-db-cli": sonic_db_cli,
    "sonic-db-dump": sonic_db_dump,
    "vtysh": vtysh,
}
_UNSUPPORTED = ("|", "&", ">", "<")
# `$?` outside single quotes becomes this marker while the line is split, and the previous
# command's exit status when the command runs; no other expansion is emulated.
_LAST_STATUS = "\x00?"
_ROOT_SHELL = (["-s"], ["-i"], ["su"], ["su", "-"], ["bash"])

__all__ = ["TOOLS", "CommandInterpreter", "CommandResult"]


def _after(result: CommandResult, then: Callable[[int], CommandResult]) -> CommandResult:
    """`result`, followed by `then(exit status)` once any questions it asks are answered."""
    if result.continuation is None:
        return result.then(then(result.exit_status))
    ask = result.continuation
    return CommandResult(result.stdout, result.stderr, result.exit_status,
                         continuation=lambda line: _after(ask(line), then))


def split_list(line: str) -> list[tuple[str | None, str]]:
    """Split a command line at unquoted list operators: [(operator before, command text)].

    Raises ValueError for an unterminated quote and NotImplementedError for pipes and
    redirections.
    """
    items: list[tuple[str | None, str]] = []
    operator: str | None = None
    current: list[str] = []
    quote: str | None = None
    index = 0
    while index < len(line):
        char = line[index]
        pair = line[index:index + 2]
        if quote is None and char == "\\" and index + 1 < len(line):
            current.append(pair)
            index += 2
            continue
        if pair == "$?" and quote != "'":
            current.append(_LAST_STATUS)
            index += 2
            continue
        if quote is not None:
            if char == quote:
                quote = None
            elif char == "\\" and quote == '"' and index + 1 < len(line):
                current.append(pair)
                index += 2
                continue
            current.append(char)
        elif char in "'\"":
            quote = char
            current.append(char)
        elif pair in ("&&", "||") or char == ";":
            items.append((operator, "".join(current)))
            operator, current = (pair, []) if pair in ("&&", "||") else (char, [])
            index += len(operator)
            continue
        elif char in _UNSUPPORTED:
            raise NotImplementedError(char)
        else:
            current.append(char)
        index += 1
    if quote is not None:
        raise ValueError(quote)
    items.append((operator, "".join(current)))
    return items


class CommandInterpreter:
    """Runs command lines for one SSH session as user `admin` on one switch.

    `interactive` selects the messages of a login shell (`-bash: x: command not found`)
    rather than of `bash -c` (`bash: line 1: x: command not found`); in an interactive
    session `sudo -s` opens a root shell until `exit`.
    """

    def __init__(self, switch: Switch, interactive: bool = False) -> None:
        self.switch = switch
        self.interactive = interactive
        self.root_shell = False
        self.closed = False  # `exit` ended the session

    @property
    def prompt(self) -> str:
        if self.root_shell:
            return f"root@{self.switch.name}:/home/admin# "
        return f"admin@{self.switch.name}:~$ "

    def _bash_error(self, message: str) -> str:
        return f"-bash: {message}\n" if self.interactive else f"bash: line 1: {message}\n"

    def run(self, line: str) -> CommandResult:
        """Run one line; a result with a `continuation` is waiting for an input line."""
        self.switch.tick()
        try:
            commands = self._parse(line)
        except ValueError as error:
            prefix = "-bash" if self.interactive else "bash: -c: line 1"
            return fail(f"{prefix}: unexpected EOF while looking for matching `{error}'\n", 2)
        except NotImplementedError as error:
            return fail(self._bash_error(f"the SONiC emulator does not support '{error}' "
                                         "(pipes, background jobs, redirection)"), 2)
        except SyntaxError as error:
            return fail(self._bash_error(f"syntax error near unexpected token `{error.msg}'"), 2)
        return self._run_list(commands, 0, 0)

    @staticmethod
    def _parse(line: str) -> list[tuple[str | None, list[str]]]:
        """All commands of a line as (operator before, words), checked before any runs."""
        items = split_list(line)
        commands = []
        for index, (operator, text) in enumerate(items):
            words = shlex.split(text)
            last = index == len(items) - 1
            if not words and not (last and operator in (None, ";")):
                raise SyntaxError(items[index + 1][0] if not last else "newline")
            if words:
                commands.append((operator, words))
        return commands

    def execute(self, line: str, input_lines: Iterable[str] = ()) -> CommandResult:
        """Run one line to completion, answering its questions from `input_lines`, then EOF."""
        answers = iter(input_lines)
        result = self.run(line)
        output = CommandResult(result.stdout, result.stderr, result.exit_status)
        while result.continuation is not None:
            result = result.continuation(next(answers, None))
            output = output.then(CommandResult(result.stdout, result.stderr, result.exit_status))
        return output

    def _run_list(self, commands: list[tuple[str | None, list[str]]], index: int, status: int
                  ) -> CommandResult:
        if index == len(commands) or self.closed:
            return CommandResult(exit_status=status)
        operator, argv = commands[index]
        if (operator == "&&" and status != 0) or (operator == "||" and status == 0):
            return self._run_list(commands, index + 1, status)
        argv = [word.replace(_LAST_STATUS, str(status)) for word in argv]
        return _after(self._run_command(argv),
                      lambda code: self._run_list(commands, index + 1, code))

    def _run_command(self, argv: list[str]) -> CommandResult:
        if argv[0] == "sudo":
            return self._sudo(argv[1:])
        return self._dispatch(argv, root=self.root_shell)

    def _sudo(self, argv: list[str]) -> CommandResult:
        while argv and argv[0] in ("-n", "-E", "-H", "-S", "-k"):
            argv = argv[1:]
        if argv[:2] == ["-u", "root"]:
            argv = argv[2:]
        if not argv:
            return fail("usage: sudo -h | -K | -k | -V\n"
                        "usage: sudo -v [-AknS] [-g group] [-h host] [-p prompt] [-u user]\n")
        if argv in _ROOT_SHELL:
            self.root_shell = self.interactive
            return ok()
        if self._lookup(argv[0]) is None and argv[0] not in _BUILTINS:
            return fail(f"sudo: {argv[0]}: command not found\n")
        return self._dispatch(argv, root=True)

    @staticmethod
    def _lookup(name: str) -> Handler | None:
        # Scripts live in /usr/local/bin (sonic-utilities) or /usr/bin (sonic-db-cli, vtysh).
        return TOOLS.get(name.rsplit("/", 1)[-1] if name.startswith("/usr/") else name)

    def _dispatch(self, argv: list[str], root: bool) -> CommandResult:
        builtin = _BUILTINS.get(argv[0])
        if builtin is not None:
            return builtin(self, argv[1:], root)
        handler = self._lookup(argv[0])
        if handler is None:
            return fail(self._bash_error(f"{argv[0]}: command not found"), 127)
        return handler(Context(self.switch, root), argv[1:])

    # -- shell builtins ----------------------------------------------------------------

    def _exit(self, argv: list[str], root: bool) -> CommandResult:
        status = int(argv[0]) if argv and argv[0].lstrip("-").isdigit() else 0
        if self.root_shell:
            self.root_shell = False
        else:
            self.closed = True
        return CommandResult(exit_status=status & 0xFF)

    def _echo(self, argv: list[str], root: bool) -> CommandResult:
        return ok(" ".join(argv) + "\n")

    def _hostname(self, argv: list[str], root: bool) -> CommandResult:
        return ok(f"{self.switch.name}\n")

    def _whoami(self, argv: list[str], root: bool) -> CommandResult:
        return ok("root\n" if root else "admin\n")

    def _true(self, argv: list[str], root: bool) -> CommandResult:
        return ok()

    def _false(self, argv: list[str], root: bool) -> CommandResult:
        return CommandResult(exit_status=1)


_BUILTINS: dict[str, Callable[[CommandInterpreter, list[str], bool], CommandResult]] = {
    "exit": CommandInterpreter._exit,
    "logout": CommandInterpreter._exit,
    "echo": CommandInterpreter._echo,
    "hostname": CommandInterpreter._hostname,
    "whoami": CommandInterpreter._whoami,
    "true": CommandInterpreter._true,
    "false": CommandInterpreter._false,
}
