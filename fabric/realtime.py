"""Websocket groups of the fabric monitor and who may join them.

"fabric" carries the per-switch summary after each poll. The fabric is cluster hardware, not
tenant data: cluster-wide roles only, as in the API (inventory.selectors.switch_list).
"""

from portal.realtime import register_group_access
from portal.roles import may


def fabric_reader(user, group: str) -> bool:
    return may(user, "read_fabric")


def register_fabric_groups() -> None:
    register_group_access("fabric", fabric_reader)
