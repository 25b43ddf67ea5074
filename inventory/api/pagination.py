"""Cursor pagination for the inventory's long lists (NICs, ports, GPUs, cables).

A cursor page costs the same at the end of a 24,000-NIC list as at its start (no OFFSET, no
COUNT), and rows inserted while a client walks the list do not shift its pages.

The cursor holds the last row's value of every ordering column (the list's ordering always
ends with the id: api/ordering.py), and the next page is the rows after that key. DRF's own
cursor keeps only the first column's value and counts the rows that share it into an OFFSET,
which it caps at 1,000: a walk by a column thousands of rows share (the NICs of one rail at
fleet scale, the cables of one status) returned the same page again and again.
"""

from __future__ import annotations

import json
from base64 import urlsafe_b64decode, urlsafe_b64encode
from datetime import datetime
from functools import reduce
from operator import or_

from django.core.exceptions import ValidationError
from django.db.models import Q
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination, _reverse_ordering
from rest_framework.utils.urls import replace_query_param

from inventory.api.fast_lists import NIC_ROW_PLACE
from portal.pagination import StrictPageSizeMixin


class InventoryCursorPagination(StrictPageSizeMixin, CursorPagination):
    page_size = 100
    ordering = "id"  # unique and unchanging, as a cursor needs

    def paginate_queryset(self, queryset, request, view=None):
        self.request = request
        self.page_size = self.get_page_size(request)
        self.base_url = request.build_absolute_uri()
        self.ordering = self.get_ordering(request, queryset, view)
        reverse, key = self._decode_cursor(request)
        ordering = _reverse_ordering(self.ordering) if reverse else self.ordering
        queryset = queryset.order_by(*ordering)
        if key is not None:
            try:
                queryset = queryset.filter(self._after(key, ordering))
            except (TypeError, ValueError, ValidationError):  # a value the column cannot hold
                raise NotFound(self.invalid_cursor_message) from None
        rows = list(queryset[: self.page_size + 1])
        self.page, more = rows[: self.page_size], len(rows) > self.page_size
        if reverse:
            self.page.reverse()
        # A page reached going back has a following page (the one the client came from); one
        # reached going forward has a page before it unless it is the first.
        self.has_next = reverse or more
        self.has_previous = more if reverse else key is not None
        self.display_page_controls = self.has_next or self.has_previous
        return self.page

    def get_next_link(self):
        if not self.has_next or not self.page:
            return None
        return self._link(reverse=False, row=self.page[-1])

    def get_previous_link(self):
        if not self.has_previous or not self.page:
            return None
        return self._link(reverse=True, row=self.page[0])

    def _link(self, *, reverse: bool, row) -> str:
        key = [_jsonable(self._value(row, term.lstrip("-"))) for term in self.ordering]
        text = json.dumps([reverse, key], separators=(",", ":"))
        cursor = urlsafe_b64encode(text.encode()).decode().rstrip("=")
        return replace_query_param(self.base_url, self.cursor_query_param, cursor)

    def _decode_cursor(self, request) -> tuple[bool, list | None]:
        """(going back, the key of the row the page starts after); a cursor this list did not
        write is a 404, as DRF answers it."""
        cursor = request.query_params.get(self.cursor_query_param)
        if not cursor:
            return False, None
        try:
            reverse, key = json.loads(urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        except (TypeError, ValueError):
            raise NotFound(self.invalid_cursor_message) from None
        well_formed = (
            isinstance(reverse, bool)
            and isinstance(key, list)
            and len(key) == len(self.ordering)
            and all(isinstance(value, int | str) and not isinstance(value, bool) for value in key)
        )
        if not well_formed:
            raise NotFound(self.invalid_cursor_message)
        return reverse, key

    @staticmethod
    def _after(key: list, ordering: list[str]) -> Q:
        """Rows after `key` in `ordering`: past it on the first column, or equal there and past
        it on the second, and so on (the id last makes it exact)."""
        alternatives, equal_so_far = [], Q()
        for term, value in zip(ordering, key, strict=True):
            column = term.lstrip("-")
            beyond = "lt" if term.startswith("-") else "gt"
            alternatives.append(equal_so_far & Q(**{f"{column}__{beyond}": value}))
            equal_so_far &= Q(**{column: value})
        return reduce(or_, alternatives)

    @staticmethod
    def _value(row, column: str):
        return getattr(row, column)


class NicRowsCursorPagination(InventoryCursorPagination):
    """Pages of the NIC list's row tuples (api.fast_lists): a key's values are read from the
    ordering columns' places in the row."""

    @staticmethod
    def _value(row, column: str):
        return row[NIC_ROW_PLACE[column]]


def _jsonable(value):
    return value.isoformat() if isinstance(value, datetime) else value
