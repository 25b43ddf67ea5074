"""Live events for the browser: publish on commit, subscribe through an authorised consumer."""

from portal.realtime.access import can_subscribe, register_group_access
from portal.realtime.events import publish, recheck_sockets

__all__ = ["can_subscribe", "publish", "recheck_sockets", "register_group_access"]
