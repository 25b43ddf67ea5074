"""Typed, located reading of nested YAML/JSON values: the error plumbing of spec.py."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Any

from portal.errors import InvalidInput

# Placeholders each format string may use, with a sample value to try the format on.
PLACEHOLDER_SAMPLES: dict[str, Any] = {
    "pod": "p1",
    "index": 0,
    "n": 1,
    "rail": 0,
    "hostname": "gpu001",
    "device": "mlx5_0",
    "role": "rail",
    "ordinal": 1,
    "number": 1,
}


@dataclass(frozen=True, slots=True)
class SpecError:
    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


class SpecErrors(list):
    def add(self, location: str, message: str) -> None:
        self.append(SpecError(location, message))

    def raise_if_any(self) -> None:
        if self:
            raise InvalidInput(
                [str(error) for error in self],
                errors=[{"location": error.location, "message": error.message} for error in self],
            )


class Reader:
    """Typed access to one mapping of the spec, recording errors at their location."""

    def __init__(self, errors: SpecErrors, value: Any, location: str, required=(), optional=()):
        self.errors = errors
        self.location = location
        self.ok = isinstance(value, dict)
        self.data: dict = value if self.ok else {}
        if not self.ok:
            errors.add(location or "spec", f"must be a mapping, not {kind(value)}")
            return
        allowed = set(required) | set(optional)
        for key in self.data:
            if key not in allowed:
                errors.add(
                    self.at(key), f"unknown key (expected one of: {', '.join(sorted(allowed))})"
                )
        for key in required:
            if key not in self.data:
                errors.add(self.at(key), "is required")
                self.ok = False

    def at(self, key) -> str:
        return f"{self.location}.{key}" if self.location else str(key)

    def fail(self, key, message: str) -> None:
        self.errors.add(self.at(key), message)
        self.ok = False

    def string(self, key, default: str = "", pattern: re.Pattern | None = None) -> str:
        value = self.data.get(key, default)
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)  # YAML reads a version like 202311 as a number
        if not isinstance(value, str):
            self.fail(key, f"must be a string, not {kind(value)}")
            return default
        if pattern is not None and key in self.data and not pattern.match(value):
            self.fail(key, f"{value!r} does not match {pattern.pattern}")
        return value

    def integer(self, key, default: int | None = None, minimum=None, maximum=None) -> int | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(key, f"must be an integer, not {kind(value)}")
            return default
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            low = minimum if minimum is not None else "-inf"
            high = maximum if maximum is not None else "inf"
            bounds = f"{low}-{high}"
            self.fail(key, f"{value} is out of range {bounds}")
            return default
        return value

    def boolean(self, key, default: bool = False) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            self.fail(key, f"must be true or false, not {kind(value)}")
            return default
        return value

    def choice(self, key, choices, default: str | None = None) -> str | None:
        value = self.data.get(key, default)
        if value not in choices:
            self.fail(key, f"{value!r} is not one of: {', '.join(choices)}")
            return default
        return value

    def sequence(self, key) -> list:
        if key not in self.data:
            return []  # a missing required key was reported when the mapping was read
        value = self.data[key]
        if not isinstance(value, list):
            self.fail(key, f"must be a list, not {kind(value)}")
            return []
        return value

    def format_string(self, key, placeholders: set[str], default: str | None = None) -> str:
        value = self.string(key, default or "")
        check_format(value, self.at(key), self.errors, placeholders)
        return value


def kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "nothing" if value is None else type(value).__name__
    )


def check_format(template: str, location: str, errors: SpecErrors, allowed: set[str]) -> bool:
    """A format string may use only `allowed` plain placeholders, e.g. `leaf-{pod}-r{index}`."""
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        errors.add(location, f"bad format string: {exc}")
        return False
    for name in names:
        if name not in allowed:
            shown = ", ".join(f"{{{item}}}" for item in sorted(allowed))
            errors.add(location, f"unknown placeholder {{{name}}} (allowed: {shown})")
            return False
    try:
        template.format(**{name: PLACEHOLDER_SAMPLES[name] for name in allowed})
    except (ValueError, TypeError, KeyError) as exc:
        errors.add(location, f"bad format string: {exc}")
        return False
    return True
