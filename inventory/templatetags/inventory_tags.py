"""Helpers for the inventory pages: states as word + letter (never colour alone), hostlists."""

from __future__ import annotations

from django import template

from inventory.hostlist import compress_hostlist
from inventory.port_ranges import port_ranges as compress_port_names
from portal.node_states import GRID_STATES, grid_state

register = template.Library()

@register.filter
def slurm_state_kind(state: str) -> str:
    """idle / allocated / mixed / draining / drained / down / unknown, as the dashboard's grid."""
    return grid_state(state)


@register.filter
def slurm_state_letter(state: str) -> str:
    return GRID_STATES[grid_state(state)]


@register.filter
def hostlist(nodes) -> str:
    """The compact Slurm hostlist of a page of nodes (or of hostnames)."""
    names = [getattr(node, "hostname", node) for node in nodes]
    return compress_hostlist(names) if names else ""


@register.filter
def port_ranges(names) -> str:
    """Port names as ranges (`Ethernet40-96 (every 4th)`), for lists longer than a glance."""
    return ", ".join(compress_port_names(names or []))


@register.filter
def get_item(mapping, key):
    return mapping.get(key) if mapping else None


@register.filter
def disk_size(gigabytes) -> str:
    """Drive capacity as vendors print it (decimal): 7680 -> 7.68 TB, 372 -> 372 GB."""
    if not gigabytes:
        return "—"
    if gigabytes >= 1000:
        return f"{gigabytes / 1000:g} TB"
    return f"{gigabytes} GB"


@register.filter
def memory_size(gigabytes) -> str:
    """Memory in GB with its binary terabytes when large: 1536 -> 1,536 GB (1.5 TB)."""
    if not gigabytes:
        return "—"
    if gigabytes >= 1024:
        return f"{gigabytes:,} GB ({gigabytes / 1024:g} TB)"
    return f"{gigabytes:,} GB"
