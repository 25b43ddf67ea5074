"""Port state as `show interfaces status` reads it, for every driver that sees SONiC's tables.

sonic-utilities `scripts/intfutil` (`IntfStatus.generate_intf_status`,
`appl_db_port_status_get`, `port_oper_speed_get`): the front-panel ports are CONFIG_DB's PORT
keys (`get_frontpanel_port_list`); admin state, oper state, MTU, FEC, lanes and alias come from
APPL_DB `PORT_TABLE:<port>`; the speed comes from STATE_DB `PORT_TABLE|<port>` while APPL_DB
says the port is oper up (and STATE_DB has one), otherwise from APPL_DB. CONFIG_DB is only the
intent, kept beside the state so that differences can be shown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from fabric.drivers.base import PortStatus

Hash = Mapping[str, str]
_NATURAL = re.compile(r"(\d+)")
NOT_AVAILABLE = "N/A"


def natural_key(name: str) -> list:
    """Ethernet8 before Ethernet16."""
    return [int(part) if part.isdigit() else part for part in _NATURAL.split(name)]


def _number(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, NOT_AVAILABLE) else None
    except ValueError:
        return None


def operational_speed(appl: Hash, state: Hash) -> int | None:
    """intfutil's port_oper_speed_get_raw, in Mb/s."""
    state_speed = state.get("speed")
    if state_speed not in (None, NOT_AVAILABLE) and appl.get("oper_status") == "up":
        return _number(state_speed)
    return _number(appl.get("speed"))


def port_statuses(
    config: Mapping[str, Hash], appl: Mapping[str, Hash], state: Mapping[str, Hash]
) -> list[PortStatus]:
    """Every CONFIG_DB port in port order. Each mapping is keyed by port name (CONFIG_DB
    PORT, APPL_DB PORT_TABLE, STATE_DB PORT_TABLE). A port APPL_DB does not hold yet (portsyncd
    has not created it) has unknown admin and oper state and no running speed: intfutil
    (generate_intf_status) lists only APPL_DB's PORT_TABLE keys and prints N/A for an absent
    field (appl_db_port_status_get)."""
    statuses = []
    for name in sorted(config, key=natural_key):
        intent = config[name]
        running = appl.get(name, {})
        statuses.append(PortStatus(
            name=name,
            alias=running.get("alias", intent.get("alias", "")),
            speed_mbps=operational_speed(running, state.get(name, {})),
            admin_up=running.get("admin_status") == "up",
            oper_up=running.get("oper_status") == "up",
            mtu=_number(running.get("mtu")) or _number(intent.get("mtu")) or 9100,
            fec=running.get("fec", ""),
            lanes=running.get("lanes", intent.get("lanes", "")),
            configured_admin_up=(intent["admin_status"] == "up"
                                 if "admin_status" in intent else None),
            configured_speed_mbps=_number(intent.get("speed")),
            configured_fec=intent.get("fec"),
            admin_state_known="admin_status" in running,
            oper_state_known="oper_status" in running,
        ))
    return statuses
