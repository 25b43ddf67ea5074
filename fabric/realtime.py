"""Websocket groups of the fabric monitor and who may join them.

"fabric" carries the per-switch summary after each poll. The fabric is cluster hardware, not
tenant data: cluster-wide roles only, as in the API (inventory.selectors.switch_list).
"""

from portal.models.accounts import CLUSTER_WIDE_ROLES
from portal.realtime import register_group_access


def fabric_reader(user, group: str) -> bool:
    return user.role in CLUSTER_WIDE_ROLES


def register_fabric_groups() -> None:
    register_group_access("fabric", fabric_reader)
