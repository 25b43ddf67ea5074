"""Extra panels that other apps add to the node and switch pages.

An app calls `register_node_panel("faults/_node_panel.html")` (or `register_switch_panel`) in its
AppConfig.ready(); the page renders each registered template in order, in its `node_extra` /
`switch_extra` region, with the page's context (`node` or `switch`, `user`, `request`).
Badges (`register_node_badge`, `register_switch_badge`) are rendered the same way in the page's
header, beside the name, for what an operator must see first (a running maintenance window).
The inventory app thereby never imports the apps that extend it.
"""

from __future__ import annotations

_node_panels: list[str] = []
_switch_panels: list[str] = []
_node_badges: list[str] = []
_switch_badges: list[str] = []


def register_node_panel(template_name: str) -> None:
    """Add a template to every node page; registering the same name twice adds it once."""
    if template_name not in _node_panels:
        _node_panels.append(template_name)


def register_switch_panel(template_name: str) -> None:
    """Add a template to every switch page; registering the same name twice adds it once."""
    if template_name not in _switch_panels:
        _switch_panels.append(template_name)


def node_panels() -> list[str]:
    return list(_node_panels)


def switch_panels() -> list[str]:
    return list(_switch_panels)


def register_node_badge(template_name: str) -> None:
    """Add a template to every node page's header; registering the same name twice adds it
    once."""
    if template_name not in _node_badges:
        _node_badges.append(template_name)


def register_switch_badge(template_name: str) -> None:
    """Add a template to every switch page's header; registering the same name twice adds it
    once."""
    if template_name not in _switch_badges:
        _switch_badges.append(template_name)


def node_badges() -> list[str]:
    return list(_node_badges)


def switch_badges() -> list[str]:
    return list(_switch_badges)
