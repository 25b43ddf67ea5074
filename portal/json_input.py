"""JSON from clients, bounded in depth: Python's decoder recurses once per level, so a body of
a few kilobytes of brackets raises RecursionError (a 500 with a long traceback per request),
and every walk over the parsed value afterwards recurses as deep again. Nothing the portal
accepts nests past a handful of levels; MAX_JSON_DEPTH leaves room for any of it."""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 64


class JSONTooDeep(ValueError):
    """Input nested past MAX_JSON_DEPTH; the message names the depth and where it was passed."""

    def __init__(self, where: str = ""):
        at = f" (at {where})" if where else ""
        super().__init__(f"JSON nested deeper than {MAX_JSON_DEPTH} levels{at}.")


def too_deep_at(value: Any, limit: int = MAX_JSON_DEPTH) -> str | None:
    """The path (`spec.pods[0]`) of the first collection nested past `limit` levels, or None.
    Iterative, so it is safe on any value the decoder could build."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, dict):
            children = [
                (f"{path}.{key}" if path else str(key), child) for key, child in item.items()
            ]
        elif isinstance(item, list):
            children = [(f"{path}[{index}]", child) for index, child in enumerate(item)]
        else:
            continue
        if depth > limit:
            return path or "body"
        stack.extend((child, child_path, depth + 1) for child_path, child in children)
    return None


def check_depth(value: Any) -> Any:
    """`value`, or JSONTooDeep naming where it nests past MAX_JSON_DEPTH."""
    where = too_deep_at(value)
    if where is not None:
        raise JSONTooDeep(where)
    return value


def loads_bounded(text: str | bytes, **options) -> Any:
    """`json.loads`, with input nested past MAX_JSON_DEPTH refused as JSONTooDeep (a
    ValueError, as any other malformed JSON is)."""
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise JSONTooDeep() from None
    return check_depth(value)
