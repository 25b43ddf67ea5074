"""Cursor pagination for the inventory's long lists (NICs, ports, GPUs, cables).

A cursor page costs the same at the end of a 24,000-NIC list as at its start (no OFFSET, no
COUNT), and rows inserted while a client walks the list do not shift its pages.
"""

from rest_framework.pagination import CursorPagination

from inventory.api.fast_lists import NIC_ROW_PLACE
from portal.pagination import StrictPageSizeMixin


class InventoryCursorPagination(StrictPageSizeMixin, CursorPagination):
    page_size = 100
    ordering = "id"  # unique and unchanging, as a cursor needs


class NicRowsCursorPagination(InventoryCursorPagination):
    """Pages of the NIC list's row tuples (api.fast_lists): a cursor's position is read from
    the ordering column's place in the row."""

    def _get_position_from_instance(self, instance, ordering):
        return str(instance[NIC_ROW_PLACE[ordering[0].lstrip("-")]])
