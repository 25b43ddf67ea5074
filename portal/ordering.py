"""Sortable columns for every list page: `?ordering=field` or `?ordering=-field`.

A list declares the columns it may be sorted by, each mapped to the ORM expressions that sort
it, so a request can never order by a field the page does not show (or by a private one). An
unknown value is ignored and the list keeps its default order; `{% sort_header %}`
(portal_tags) draws the column header as a link that toggles the direction.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet


@dataclass(frozen=True)
class Ordering:
    # public column name -> ORM order_by expressions (field paths or expressions), ascending;
    # the primary key breaks ties so pages never repeat or skip a row.
    columns: dict[str, tuple]
    default: str

    def current(self, value: str | None) -> str:
        """The requested ordering if it names a column, else the default."""
        value = (value or "").strip()
        return value if value.lstrip("-") in self.columns else self.default

    def apply(self, queryset: QuerySet, value: str | None) -> QuerySet:
        chosen = self.current(value)
        descending = chosen.startswith("-")
        expressions = [
            _reverse(expression) if descending else expression
            for expression in self.columns[chosen.lstrip("-")]
        ]
        return queryset.order_by(*expressions, "-pk" if descending else "pk")


def _reverse(expression):
    if isinstance(expression, str):
        return expression[1:] if expression.startswith("-") else f"-{expression}"
    return expression.desc()  # an expression (e.g. Length("job_id")) sorts ascending by default


class SortableListMixin:
    """For a list view: `sort_columns` (an Ordering) sorts `sort_queryset(queryset)` by
    `?ordering=`, and the templates get `ordering` (the value in force) for the headers."""

    sort_columns: Ordering

    def ordering_value(self) -> str:
        return self.sort_columns.current(self.request.GET.get("ordering"))

    def sort_queryset(self, queryset: QuerySet) -> QuerySet:
        return self.sort_columns.apply(queryset, self.request.GET.get("ordering"))

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["ordering"] = self.ordering_value()
        return context
