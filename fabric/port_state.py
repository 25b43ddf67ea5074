"""One word for a switch port's condition, shared by the heat map, the switch page and the
legend, so that a port shut on purpose never looks like one nobody cabled."""

from __future__ import annotations

# condition -> what the pages say
PORT_CONDITIONS = {
    "up": "up",
    "admin-down": "shut down (admin down)",
    "oper-down": "down: no link although enabled",
    "unused": "unused: no cable",
    "unpolled": "not polled yet",
}


def port_condition(*, polled: bool, admin_up: bool, oper_up: bool, cabled: bool) -> str:
    """A port without a cable is "unused" unless it carries a link anyway (LLDP will say what);
    a cabled port is "admin-down" when shut, "oper-down" when enabled without a link."""
    if not polled:
        return "unpolled"
    if oper_up and admin_up:
        return "up"
    if not cabled:
        return "unused"
    return "admin-down" if not admin_up else "oper-down"


def heat_cell_condition(state: str, faces: str) -> str:
    """The condition of a heat map cell: its state letter (U, D, X, ?) and what it faces
    ("nic", "switch", or "" when no cable)."""
    return port_condition(polled=state != "?", admin_up=state != "X", oper_up=state == "U",
                          cabled=bool(faces))
