"""Pieces shared by the emulated command-line tools.

SONiC's `show` and `config` are click 7.0 applications (sonic-utilities pins click==7.0) and
its scripts (`intfutil`, `portstat`) use argparse. The helpers here reproduce their output
conventions: click's usage errors (exit 2), `Aborted!` (exit 1), argparse errors (exit 2), and
tabulate's "simple" tables with right-aligned columns.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from ..switch import Switch


@dataclass
class CommandResult:
    """What a command wrote and how it exited.

    A command that asks a question (`config save` without `-y`) returns its prompt in
    `stdout` and a `continuation`; the caller feeds it the next input line, or None at end of
    input, and gets the rest of the result.
    """

    stdout: str = ""
    stderr: str = ""
    exit_status: int = 0
    continuation: Callable[[str | None], CommandResult] | None = None

    def then(self, rest: CommandResult) -> CommandResult:
        """This result's output followed by another's; the second decides the exit status."""
        return CommandResult(
            self.stdout + rest.stdout, self.stderr + rest.stderr, rest.exit_status,
            rest.continuation,
        )


@dataclass
class Context:
    """The switch a command runs on and whether it runs with root privileges."""

    switch: Switch
    root: bool


Handler = Callable[[Context, list[str]], CommandResult]


def ok(stdout: str = "") -> CommandResult:
    return CommandResult(stdout=stdout)


def fail(stderr: str, exit_status: int = 1, stdout: str = "") -> CommandResult:
    return CommandResult(stdout=stdout, stderr=stderr, exit_status=exit_status)


def lines(text: Iterable[str]) -> str:
    """Join output lines, each ending in a newline as print() writes them."""
    return "".join(f"{line}\n" for line in text)


# -- click ---------------------------------------------------------------------------------

class ClickError(Exception):
    """A click UsageError: usage line, help hint and message on stderr, exit status 2."""

    def __init__(self, path: str, usage: str, message: str, help_option: str = "-h") -> None:
        super().__init__(message)
        self.path = path
        self.usage = usage
        self.message = message
        # sonic-utilities' show/config register -h; a plain click group only --help.
        self.help_option = help_option

    def result(self) -> CommandResult:
        return fail(
            f"Usage: {self.path} {self.usage}\n"
            f'Try "{self.path} {self.help_option}" for help.\n\n'
            f"Error: {self.message}\n",
            exit_status=2,
        )


def aborted(stdout: str = "") -> CommandResult:
    """click.Abort in standalone mode."""
    return fail("Aborted!\n", stdout=stdout)


@dataclass(frozen=True)
class Option:
    """A click option. `kind` is "flag", "str", "int" or "choice"; `bounds` an IntRange."""

    names: tuple[str, ...]
    dest: str
    kind: str = "str"
    required: bool = False
    choices: tuple[str, ...] = ()
    bounds: tuple[int, int] | None = None


@dataclass(frozen=True)
class Argument:
    """A click positional argument; `metavar` is what click names it in errors."""

    dest: str
    metavar: str
    required: bool = True
    choices: tuple[str, ...] = ()


@dataclass
class ClickCommand:
    """Parses argv the way a click 7.0 command does and reports errors the same way."""

    path: str
    options: Sequence[Option] = ()
    arguments: Sequence[Argument] = ()
    help_text: str = ""
    help_option: str = "-h"
    _by_name: dict[str, Option] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name = {name: option for option in self.options for name in option.names}

    @property
    def usage(self) -> str:
        return " ".join(["[OPTIONS]", *(arg.metavar for arg in self.arguments)])

    def error(self, message: str) -> ClickError:
        return ClickError(self.path, self.usage, message, self.help_option)

    def help(self) -> CommandResult:
        return ok(
            f"Usage: {self.path} {self.usage}\n\n  {self.help_text}\n\n"
            "Options:\n  -h, --help  Show this message and exit.\n"
        )

    def parse(self, argv: Sequence[str]) -> dict[str, object]:
        """Values by dest; raises ClickError. Options may precede or follow arguments."""
        values: dict[str, object] = {o.dest: False if o.kind == "flag" else None
                                     for o in self.options}
        positional: list[str] = []
        words = list(argv)
        while words:
            word = words.pop(0)
            if word == "--":
                positional.extend(words)
                break
            if word.startswith("-") and len(word) > 1 and not _is_number(word):
                name, has_value, inline = word.partition("=")
                option = self._by_name.get(name)
                if option is None:
                    raise self.error(f"no such option: {name}")
                if option.kind == "flag":
                    values[option.dest] = True
                    continue
                if not has_value:
                    if not words:
                        raise self.error(f"{name} option requires an argument")
                    inline = words.pop(0)
                values[option.dest] = self._convert_option(option, inline)
            else:
                positional.append(word)
        for option in self.options:
            if option.required and values[option.dest] is None:
                raise self.error(f'Missing option "{option.names[0]}".')
        for argument in self.arguments:
            if positional:
                value = positional.pop(0)
                if argument.choices and value not in argument.choices:
                    raise self.error(
                        f'Invalid value for "{argument.metavar}": invalid choice: {value}. '
                        f"(choose from {', '.join(argument.choices)})"
                    )
                values[argument.dest] = value
            elif argument.required:
                raise self.error(f'Missing argument "{argument.metavar}".')
            else:
                values[argument.dest] = None
        if positional:
            plural = "s" if len(positional) > 1 else ""
            raise self.error(f"Got unexpected extra argument{plural} ({' '.join(positional)})")
        return values

    def _convert_option(self, option: Option, raw: str) -> object:
        hint = f'"{option.names[0]}"'
        if option.kind == "int":
            if not _is_number(raw):
                raise self.error(f"Invalid value for {hint}: {raw} is not a valid integer")
            number = int(raw)
            if option.bounds and not option.bounds[0] <= number <= option.bounds[1]:
                low, high = option.bounds
                raise self.error(
                    f"Invalid value for {hint}: {number} is not in the valid range of "
                    f"{low} to {high}."
                )
            return number
        if option.kind == "choice" and raw not in option.choices:
            raise self.error(
                f"Invalid value for {hint}: invalid choice: {raw}. "
                f"(choose from {', '.join(option.choices)})"
            )
        return raw


def _is_number(text: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", text) is not None


class ClickGroup:
    """A click group with sonic-utilities' AliasedGroup resolution (unique prefixes work).

    `callback` runs after the subcommand name resolved and before the subcommand parses its
    own arguments, which is where `config` checks for root. `plain` is a bare click.Group
    (counterpoll): no prefix matching, and only --help.
    """

    def __init__(
        self,
        path: str,
        commands: dict[str, Handler],
        help_text: str = "",
        callback: Callable[[Context], CommandResult | None] | None = None,
        plain: bool = False,
    ) -> None:
        self.path = path
        self.commands = commands
        self.help_text = help_text
        self.callback = callback
        self.plain = plain

    def __call__(self, ctx: Context, argv: list[str]) -> CommandResult:
        usage = "[OPTIONS] COMMAND [ARGS]..."
        if not argv or argv[0] in ("-h", "--help"):
            listing = "".join(f"  {name}\n" for name in sorted(self.commands))
            return ok(f"Usage: {self.path} {usage}\n\n  {self.help_text}\n\n"
                      f"Options:\n  -h, --help  Show this message and exit.\n\n"
                      f"Commands:\n{listing}")
        name = argv[0]
        help_option = "--help" if self.plain else "-h"
        if name.startswith("-"):
            return ClickError(self.path, usage, f"no such option: {name}", help_option).result()
        matches = [cmd for cmd in self.commands if cmd.lower().startswith(name.lower())]
        if name in self.commands or self.plain:
            matches = [name] if name in self.commands else []
        if not matches:
            return ClickError(self.path, usage, f'No such command "{name}".',
                              help_option).result()
        if len(matches) > 1:
            message = f"Too many matches: {', '.join(sorted(matches))}"
            return ClickError(self.path, usage, message).result()
        if self.callback is not None:
            refused = self.callback(ctx)
            if refused is not None:
                return refused
        return self.commands[matches[0]](ctx, argv[1:])


def click_command(command: ClickCommand, body: Callable[[Context, dict], CommandResult]) -> Handler:
    """Wrap a body taking parsed values into a handler that reports click errors."""

    def handler(ctx: Context, argv: list[str]) -> CommandResult:
        if any(arg in ("-h", "--help") for arg in argv):
            return command.help()
        try:
            return body(ctx, command.parse(argv))
        except ClickError as error:  # from parsing, or a body's ctx.fail()
            return error.result()

    return handler


# -- argparse ------------------------------------------------------------------------------

class ToolExit(Exception):
    """Raised instead of sys.exit() by `ToolArgumentParser`."""

    def __init__(self, result: CommandResult) -> None:
        super().__init__(result.stderr)
        self.result = result


class ToolArgumentParser(argparse.ArgumentParser):
    """argparse with real messages, captured instead of printed and exiting.

    Help and usage wrap at 80 columns whatever the emulator's own terminal is.
    """

    def __init__(self, prog: str, description: str) -> None:
        super().__init__(prog=prog, description=description,
                         formatter_class=partial(argparse.RawTextHelpFormatter, width=80))

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise ToolExit(CommandResult(stderr=message or "", exit_status=status))

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.format_usage()}{self.prog}: error: {message}\n")

    def print_help(self, file: object = None) -> None:
        raise ToolExit(ok(self.format_help()))


# -- formatting ----------------------------------------------------------------------------

def natural_key(text: str) -> list[object]:
    """natsort's order: Ethernet8 before Ethernet16."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """tabulate(rows, headers, tablefmt="simple", stralign="right") without the dependency.

    Every column is right-aligned and at least two characters wider than its header.
    """
    body = [[str(cell) for cell in row] for row in rows]
    widths = [len(header) + 2 for header in headers]
    for row in body:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    rendered = [
        "  ".join(header.rjust(width) for header, width in zip(headers, widths, strict=True)),
        "  ".join("-" * width for width in widths),
        *("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
          for row in body),
    ]
    return lines(rendered)


def parse_interface_filter(text: str | None) -> list[str]:
    """sonic-utilities' parse_interface_in_filter (202311): comma lists and numeric ranges.

    `Ethernet0-16` expands to every number from 0 to 16; names that are not ports are simply
    never matched later, which is how a range steps over the ports that exist.
    """
    names: list[str] = []
    if not text:
        return names
    for item in text.split(","):
        if "-" not in item:
            names.append(item)
            continue
        prefix = next((p for p in ("PortChannel", "Ethernet") if item.startswith(p)), None)
        if prefix is None:
            continue
        start, _, end = item[len(prefix):].partition("-")
        if start.isdigit() and end.isdigit():
            names.extend(f"{prefix}{number}" for number in range(int(start), int(end) + 1))
    return names
