"""The websocket groups the portal app itself publishes to, and who may join them."""

from portal.realtime.access import register_group_access
from portal.roles import may


def cluster_wide_reader(user, group: str) -> bool:
    return may(user, "read_cluster")


def any_role(user, group: str) -> bool:
    # Tenant admins join too; tenant-private events are filtered per connection by tenant_ids.
    return may(user, "use_portal")


def register_portal_groups() -> None:
    register_group_access("actions", cluster_wide_reader)
    register_group_access("action", cluster_wide_reader)
    register_group_access("cluster", any_role)
