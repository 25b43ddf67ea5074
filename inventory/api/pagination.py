"""Cursor pagination for the inventory's long lists (NICs, ports, GPUs, cables).

A cursor page costs the same at the end of a 24,000-NIC list as at its start (no OFFSET, no
COUNT), and rows inserted while a client walks the list do not shift its pages.
"""

from rest_framework.pagination import CursorPagination

from portal.pagination import StrictPageSizeMixin


class InventoryCursorPagination(StrictPageSizeMixin, CursorPagination):
    page_size = 100
    ordering = "id"  # unique and unchanging, as a cursor needs
