"""Port lists as ranges: `Ethernet40-96 (every 4th)` rather than fifteen names in a row.

SONiC numbers a port by its first SerDes lane, so the host-facing halves of 2x400G breakouts
on a leaf are Ethernet0, Ethernet4, Ethernet8, ... A run of names whose numbers step evenly
reads as one range; the step is said when it is not 1, so nothing is implied that is not there
(Ethernet40-96 alone would claim Ethernet41). Runs shorter than three stay names.
"""

from __future__ import annotations

import re
from collections import defaultdict

_NAME_NUMBER = re.compile(r"^(.*?)(\d+)$")
MINIMUM_RUN = 3


def port_ranges(names) -> list[str]:
    """`names` grouped by prefix, in natural order, each evenly stepped run of three or more as
    one `Prefix<first>-<last>` entry (`(every Nth)` when the step is N > 1)."""
    by_prefix: dict[str, list[int]] = defaultdict(list)
    plain: list[str] = []
    for name in dict.fromkeys(names):
        match = _NAME_NUMBER.match(name)
        if match and not (len(match.group(2)) > 1 and match.group(2).startswith("0")):
            by_prefix[match.group(1)].append(int(match.group(2)))
        else:
            plain.append(name)
    entries: list[str] = []
    for prefix in sorted(by_prefix):
        numbers = sorted(set(by_prefix[prefix]))
        start = 0
        while start < len(numbers):
            end = start + 1
            if end < len(numbers):
                step = numbers[end] - numbers[start]
                while end + 1 < len(numbers) and numbers[end + 1] - numbers[end] == step:
                    end += 1
                if end - start + 1 >= MINIMUM_RUN:
                    every = "" if step == 1 else f" (every {_ordinal(step)})"
                    entries.append(f"{prefix}{numbers[start]}-{numbers[end]}{every}")
                    start = end + 1
                    continue
            entries.append(f"{prefix}{numbers[start]}")
            start += 1
    return entries + sorted(plain)


def _ordinal(number: int) -> str:
    if 10 <= number % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"
