"""One natural-sort key for names with numbers in them (pods p2 before p10, racks p2-rack2
before p2-rack10, gpu99 before gpu100), shared by selectors and templates so every page lists
pods and racks in the same order."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

Item = TypeVar("Item")
_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str | None) -> tuple:
    """A sort key that compares runs of digits as numbers and the rest case-insensitively.

    Text and number parts alternate from a text part (re.split keeps the digits at odd
    positions), so two keys always compare like with like and never str with int.
    """
    parts = _DIGITS.split(text or "")
    return tuple(int(part) if index % 2 else part.casefold() for index, part in enumerate(parts))


def natural_sorted(items: Iterable[Item], key: Callable[[Item], str | None] = str) -> list[Item]:
    return sorted(items, key=lambda item: natural_key(key(item)))
