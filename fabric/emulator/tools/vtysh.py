"""`vtysh -c "..."`: FRR's shell, for the BGP summary the portal reads."""

from __future__ import annotations

import json

from .common import CommandResult, Context, fail, ok

# Spellings FRR accepts for the IPv4 unicast summary in JSON.
_SUMMARY_JSON = {
    "show bgp ipv4 summary json",
    "show bgp ipv4 unicast summary json",
    "show ip bgp summary json",
    "show bgp summary json",
}


def vtysh(ctx: Context, argv: list[str]) -> CommandResult:
    commands = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "-c"]
    if not commands:
        return fail("% The emulator does not offer an interactive vtysh; use vtysh -c\n")
    output = ""
    for command in commands:
        line = " ".join(command.split())
        if line not in _SUMMARY_JSON:
            return CommandResult(stdout=f"{output}% Unknown command: {line}\n", exit_status=1)
        # FRR prints JSON with json-c's pretty style: two-space indent, no space after colons.
        output += json.dumps(ctx.switch.bgp_summary(), indent=2, separators=(",", ":")) + "\n"
    return ok(output)
