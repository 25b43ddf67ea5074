"""Who may subscribe to which websocket group.

Each app registers a check for the group prefixes it publishes ("node" for "node.17"), using the
same selectors its API uses, so the websocket never shows what the API would hide. A group with
no registered check is refused: new groups are closed until someone decides who may see them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

GroupAccessCheck = Callable[[object, str], bool]

GROUP_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]*(\.[A-Za-z0-9_-]+)?$")
MAX_GROUP_NAME_LENGTH = 90  # Channels refuses names of 100 characters or more

_checks: dict[str, GroupAccessCheck] = {}


def register_group_access(prefix: str, check: GroupAccessCheck) -> None:
    """Register `check(user, group_name) -> bool` for groups named `prefix` or `prefix.<id>`."""
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", prefix):
        raise ValueError(f"bad group prefix {prefix!r}")
    _checks[prefix] = check


def is_valid_group_name(group: str) -> bool:
    return (
        isinstance(group, str)
        and len(group) <= MAX_GROUP_NAME_LENGTH
        and bool(GROUP_NAME_PATTERN.match(group))
    )


def can_subscribe(user, group: str) -> bool:
    if not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return False
    if not is_valid_group_name(group):
        return False
    check = _checks.get(group.split(".", 1)[0])
    return bool(check and check(user, group))
