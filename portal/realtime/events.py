"""publish(): the one way the server pushes to browsers.

Events leave only when the surrounding transaction commits, so a client never sees a change that
was rolled back and never reads the database before the change is visible there.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from portal.realtime.access import is_valid_group_name

logger = logging.getLogger(__name__)

# Each web process receives it once (portal/realtime/fanout.py) and hands it to its consumers.
CONSUMER_MESSAGE_TYPE = "portal.event"


def publish(
    group: str,
    event: str,
    payload: dict,
    *,
    tenant_ids: Iterable[int] | None = None,
    tenant_private: bool = True,
) -> None:
    """Send `event` with `payload` to `group` once the current transaction commits.

    `tenant_ids` names the tenants the event concerns: a tenant admin receives it only when
    their tenant is listed. With `tenant_private` (the default) it is also tenant data that
    viewers may not see (a job); without, it is cluster data scoped for tenant admins (a node's
    Slurm state), which every cluster-wide role receives. Outside a transaction the event is
    sent at once.
    """
    if not is_valid_group_name(group):
        raise ValueError(f"invalid websocket group name {group!r}")
    message = {
        "type": CONSUMER_MESSAGE_TYPE,
        "group": group,
        "event": event,
        # Round-trip through Django's encoder so datetimes and decimals survive msgpack.
        "payload": DjangoJSONEncoder().encode(payload),
        "tenant_ids": sorted(set(tenant_ids)) if tenant_ids is not None else None,
        "tenant_private": tenant_private,
    }
    transaction.on_commit(lambda: send_now(group, message), robust=True)


def send_now(group: str, message: dict) -> None:
    channel_layer = get_channel_layer()
    if channel_layer is None:
        return
    try:
        async_to_sync(channel_layer.group_send)(group, message)
    except Exception:
        # The change is committed; a lost push is repaired by the client's refresh on reconnect.
        logger.exception("could not publish %s to %s", message.get("event"), group)
