"""Who may subscribe to which websocket group.

Each app registers a check for the group prefixes it publishes ("node" for "node.17"), using the
same selectors its API uses, so the websocket never shows what the API would hide. A group with
no registered check is refused: new groups are closed until someone decides who may see them.

`socket_access()` is the one rule a socket is held to, at subscribe time and at every re-check
after (its user's token, account, role or tenant's allocations changed, or REALTIME_REAUTH_SECONDS
passed): the groups it may keep, or the close code that says it may follow nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

GroupAccessCheck = Callable[[object, str], bool]

GROUP_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]*(\.[A-Za-z0-9_-]+)?$")
MAX_GROUP_NAME_LENGTH = 90  # Channels refuses names of 100 characters or more

# Close codes of a socket that may follow nothing any more (4000-4999 is the application's
# range; the last three digits mirror HTTP's). static/js/live.js does not reconnect after them.
# The credential that opened the socket no longer works: token revoked or expired, session
# ended, user deactivated or deleted. The client must sign in again.
CREDENTIALS_ENDED_CLOSE_CODE = 4401
# The user is still signed in but their role lets them follow nothing (no role, or two).
NOTHING_PERMITTED_CLOSE_CODE = 4403

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


@dataclass(frozen=True)
class SocketAccess:
    """What a socket standing for a user may follow of the groups asked about."""

    allowed: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()
    # Set when the socket may follow nothing at all and must close with it.
    close_code: int | None = None


def socket_access(user, groups: Iterable[str]) -> SocketAccess:
    """The groups of `groups` that `user` may follow now (`user` None: the socket's credential
    no longer works). Queries the database: call it from a thread."""
    groups = tuple(dict.fromkeys(groups))
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return SocketAccess(denied=groups, close_code=CREDENTIALS_ENDED_CLOSE_CODE)
    if user.role is None:
        return SocketAccess(denied=groups, close_code=NOTHING_PERMITTED_CLOSE_CODE)
    allowed, denied = [], []
    for group in groups:
        (allowed if can_subscribe(user, group) else denied).append(group)
    return SocketAccess(allowed=tuple(allowed), denied=tuple(denied))
