"""Slurm-style hostlist expressions: `gpu[001-016,020],leaf-p1-r[0-3]`.

Rules (as Slurm's `scontrol show hostnames` reads them):
- Top-level commas separate items; commas inside brackets separate ranges.
- An item may hold several bracket groups; they expand as a cartesian product, left to right
  (`r[1-2]n[1-2]` -> r1n1, r1n2, r2n1, r2n2).
- A range `lo-hi` pads its numbers to the width `lo` is written in
  (`[001-016]` -> 001 ... 016, `[8-10]` -> 8, 9, 10, `[098-100]` -> 098, 099, 100).
- Expansion keeps the order written and drops repeats.
"""

from __future__ import annotations

import re
from collections import defaultdict

from portal.errors import InvalidInput

MAX_HOSTS = 100_000  # an expression may not expand past this: a typo must not exhaust memory

_NAME_CHARACTERS = re.compile(r"^[A-Za-z0-9._-]*$")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_LAST_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")


def _error(field: str, part: str, message: str) -> InvalidInput:
    return InvalidInput({field: [f"{part!r}: {message}"]})


def _split_top_level(expression: str, field: str) -> list[str]:
    """Split on commas outside brackets, checking that brackets balance and do not nest."""
    items, depth, start = [], 0, 0
    for position, character in enumerate(expression):
        if character == "[":
            if depth:
                raise _error(field, expression, f"nested '[' at position {position}")
            depth = 1
        elif character == "]":
            if not depth:
                raise _error(field, expression, f"']' without '[' at position {position}")
            depth = 0
        elif character == "," and not depth:
            items.append(expression[start:position])
            start = position + 1
    if depth:
        raise _error(field, expression, "'[' is never closed")
    items.append(expression[start:])
    return items


def _expand_ranges(item: str, body: str, field: str) -> list[str]:
    if not body:
        raise _error(field, item, "empty brackets")
    numbers: list[str] = []
    for part in body.split(","):
        match = _RANGE.match(part)
        if not match:
            raise _error(field, item, f"range {part!r} is not a number or lo-hi")
        low_text, high_text = match.group(1), match.group(2)
        if high_text is None:
            numbers.append(low_text)
            continue
        low, high = int(low_text), int(high_text)
        if low > high:
            raise _error(field, item, f"range {part!r} runs backwards")
        if high - low >= MAX_HOSTS:
            raise _error(field, item, f"range {part!r} has more than {MAX_HOSTS} numbers")
        width = len(low_text)
        numbers.extend(f"{number:0{width}d}" for number in range(low, high + 1))
    return numbers


def _expand_item(item: str, field: str) -> list[str]:
    # Pieces alternate: literal text, bracket body, literal text, ...
    pieces = re.split(r"\[([^\]]*)\]", item)
    for literal in pieces[0::2]:
        if not _NAME_CHARACTERS.match(literal):
            raise _error(field, item, "host names use letters, digits, '.', '_' and '-'")
    names = [pieces[0]]
    for index in range(1, len(pieces), 2):
        numbers = _expand_ranges(item, pieces[index], field)
        suffix = pieces[index + 1]
        if len(names) * len(numbers) > MAX_HOSTS:
            raise _error(field, item, f"expands to more than {MAX_HOSTS} names")
        names = [f"{name}{number}{suffix}" for name in names for number in numbers]
    return names


def expand_hostlist(expression: str, *, field: str = "hostlist") -> list[str]:
    """Every host name an expression denotes, in order, without repeats.

    Raises InvalidInput naming the malformed part under `field`.
    """
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidInput({field: ["An empty hostlist names no hosts."]})
    expression = expression.strip()
    if any(character.isspace() for character in expression):
        raise _error(field, expression, "spaces are not allowed inside a hostlist")
    names: dict[str, None] = {}
    for position, item in enumerate(_split_top_level(expression, field), start=1):
        if not item:
            raise _error(field, expression, f"item {position} is empty (a stray or doubled comma)")
        for name in _expand_item(item, field):
            names[name] = None
            if len(names) > MAX_HOSTS:
                raise _error(field, expression, f"expands to more than {MAX_HOSTS} names")
    return list(names)


def _ranges(numbers: list[int], width: int) -> str:
    parts, start, previous = [], numbers[0], numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        if start == previous:
            parts.append(f"{start:0{width}d}")
        else:
            parts.append(f"{start:0{width}d}-{previous:0{width}d}")
        if number is not None:
            start = previous = number
    return ",".join(parts)


def compress_hostlist(names) -> str:
    """The shortest bracket form of `names`, grouping on the last number in each name.

    Names are sorted and de-duplicated: `compress_hostlist(["gpu002", "gpu001", "gpu003",
    "gpu007"])` is `gpu[001-003,007]`. Padded and unpadded numbers (`gpu01`, `gpu1`) stay in
    separate groups, so that expanding the result gives back exactly the same names.
    """
    numbered: list[tuple[str, str, str]] = []
    plain: set[str] = set()
    for name in names:
        match = _LAST_NUMBER.match(name)
        if match:
            numbered.append(match.groups())
        else:
            plain.add(name)
    # Zero-padded numbers fix their group's width; an unpadded number joins a padded group of
    # its own width (gpu099, gpu100 -> gpu[099-100]) or else the unpadded group (gpu[8-10]).
    padded_widths = {
        (prefix, suffix, len(digits))
        for prefix, digits, suffix in numbered
        if len(digits) > 1 and digits[0] == "0"
    }
    groups: dict[tuple[str, str, int], set[int]] = defaultdict(set)
    for prefix, digits, suffix in numbered:
        width = len(digits) if (prefix, suffix, len(digits)) in padded_widths else 0
        groups[(prefix, suffix, width)].add(int(digits))
    items: list[tuple[tuple, str]] = [((name, "", 0, 0), name) for name in plain]
    for (prefix, suffix, width), numbers in groups.items():
        ordered = sorted(numbers)
        if len(ordered) == 1:
            text = f"{prefix}{ordered[0]:0{width}d}{suffix}"
        else:
            text = f"{prefix}[{_ranges(ordered, width)}]{suffix}"
        items.append(((prefix, suffix, ordered[0], width), text))
    return ",".join(text for _, text in sorted(items))
