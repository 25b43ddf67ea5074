"""Checks every real driver applies before anything reaches Slurm.

Node names must be plain hostnames (RFC 1123 labels): that rules out hostlist brackets, commas,
spaces, quotes and a leading '-', so a name can never change the meaning of the hostlist or
argument it is put into. Reasons are one line of text (Slurm stores them verbatim).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jobs.drivers.base import SlurmRejected

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOSTNAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")
MAX_HOSTNAME_LENGTH = 253
MAX_REASON_LENGTH = 1000


def checked_node_names(names: Sequence[str], *, allow_empty: bool = False) -> list[str]:
    """The names sorted and without repeats; SlurmRejected names every malformed one."""
    if isinstance(names, str):
        raise SlurmRejected(f"node names must be a list of hostnames, not the string {names!r}")
    unique = sorted(set(names))
    bad = [
        name
        for name in unique
        if not isinstance(name, str) or len(name) > MAX_HOSTNAME_LENGTH or not HOSTNAME.match(name)
    ]
    if bad:
        shown = ", ".join(repr(name) for name in bad[:10])
        raise SlurmRejected(f"not a valid node hostname: {shown}")
    if not unique and not allow_empty:
        raise SlurmRejected("no node named")
    return unique


def checked_reason(reason: str) -> str:
    """A drain reason as Slurm will store it; SlurmRejected says what is wrong."""
    if not isinstance(reason, str) or not reason.strip():
        raise SlurmRejected("a drain needs a reason (Slurm refuses to drain without one)")
    if len(reason) > MAX_REASON_LENGTH:
        raise SlurmRejected(f"the reason is longer than {MAX_REASON_LENGTH} characters")
    if any(ord(character) < 32 or ord(character) == 127 for character in reason):
        raise SlurmRejected("the reason must be one line of printable text")
    return reason
