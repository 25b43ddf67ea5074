"""Panels that a higher app adds to a lower app's page, so the lower app never imports it.

A page offers a slot, named "<app>.<page>", and includes what was registered there, in order,
with the page's own context:

    {% load portal_tags %}{% for panel in "jobs.job_detail"|panels %}{% include panel %}{% endfor %}

An app fills a slot in its AppConfig.ready(): `register_panel("jobs.job_detail",
"fabric/_job_rails_panel.html")`. Apps are ready in INSTALLED_APPS order, which is therefore the
order of a slot's panels. The inventory's node and switch pages keep their own registry
(inventory/ui_panels.py), which works the same way.
"""

from __future__ import annotations

_panels: dict[str, list[str]] = {}


def register_panel(slot: str, template_name: str) -> None:
    """Add a template to the page offering `slot`; registering the same one twice adds it once."""
    templates = _panels.setdefault(slot, [])
    if template_name not in templates:
        templates.append(template_name)


def panels(slot: str) -> list[str]:
    return list(_panels.get(slot, ()))


def registered_slots() -> dict[str, list[str]]:
    return {slot: list(templates) for slot, templates in _panels.items()}
