"""One word for a switch port's condition, shared by the heat map, the switch page and the
legend, so that a port shut on purpose never looks like one nobody cabled; and the rules every
reader of a polled port state follows where that state is unknown.

A polled admin or oper state is True, False or None: None where the switch does not say (a
port CONFIG_DB has and APPL_DB does not, for which intfutil prints N/A). Unknown is neither up
nor down: not shut, not a link down, not counted, and no link change to or from it.
"""

from __future__ import annotations

# condition -> what the pages say
PORT_CONDITIONS = {
    "up": "up",
    "admin-down": "shut down (admin down)",
    "oper-down": "down: no link although enabled",
    "unknown": "state unknown (N/A: the switch has no running state for it)",
    "unused": "unused: no cable",
    "unpolled": "not polled yet",
}

# The heat map's and the "fabric" event's state letters (static/js/fabric.js knows them too).
STATE_LETTERS = {
    "U": "up",
    "D": "down",
    "X": "shut down",
    "N": "state unknown (N/A)",
    "?": "not polled yet",
}


def port_state_letter(admin_up: bool | None, oper_up: bool | None) -> str:
    """U up, D down (admin up, no link), X administratively shut, N unknown (N/A)."""
    if admin_up is False:
        return "X"
    if admin_up is None or oper_up is None:
        return "N"
    return "U" if oper_up else "D"


def port_condition(*, polled: bool, admin_up: bool | None, oper_up: bool | None,
                   cabled: bool) -> str:
    """A port without a cable is "unused" unless it carries a link anyway (LLDP will say what);
    a cabled port is "admin-down" when shut, "oper-down" when enabled without a link. A state
    the switch does not report is "unknown", cable or not: it may carry a link."""
    if not polled:
        return "unpolled"
    if oper_up and admin_up:
        return "up"
    if admin_up is not False and (admin_up is None or oper_up is None):
        return "unknown"
    if not cabled:
        return "unused"
    return "admin-down" if not admin_up else "oper-down"


def heat_cell_condition(state: str, faces: str) -> str:
    """The condition of a heat map cell: its state letter (STATE_LETTERS) and what it faces
    ("nic", "switch", or "" when no cable)."""
    unknown = state == "N"
    return port_condition(polled=state != "?",
                          admin_up=None if unknown else state != "X",
                          oper_up=None if unknown else state == "U",
                          cabled=bool(faces))


def link_status(up: bool | None) -> str:
    """The inventory's word for a polled state (SwitchPort.admin_status, oper_status): "up",
    "down", or "" where it is not known."""
    if up is None:
        return ""
    return "up" if up else "down"


def is_link_change(*, stored_admin: str, stored_oper: str, admin_up: bool | None,
                   oper_up: bool | None) -> bool:
    """Whether a port's link went down (was up) or came back (was not) between the inventory's
    stored status and a new reading. A state unknown on either side is no change: a port that
    drops out of APPL_DB has not gone down, and one that reappears has not come back."""
    if not (stored_admin and stored_oper) or admin_up is None or oper_up is None:
        return False
    was_up = (stored_admin, stored_oper) == ("up", "up")
    return was_up != (admin_up and oper_up)
