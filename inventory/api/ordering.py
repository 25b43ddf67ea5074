"""`?ordering=` by a name sorts naturally: gpu2, gpu10, gpu100 (not gpu10, gpu100, gpu2)."""

from __future__ import annotations

from rest_framework.filters import OrderingFilter


class NaturalOrderingFilter(OrderingFilter):
    """DRF's OrderingFilter, with each name field in the view's `natural_ordering` replaced by its
    stored natural sort key (inventory/models/natural_sort.py), then the name itself and the id
    to make the order total, as a page-numbered list needs. The documented field stays the name:
    the key is how it sorts, not something a client asks for."""

    def get_ordering(self, request, queryset, view):
        ordering = super().get_ordering(request, queryset, view)
        natural = getattr(view, "natural_ordering", {})
        if not ordering or not natural:
            return ordering
        result = []
        for term in ordering:
            descending = term.startswith("-")
            name = term.lstrip("-")
            if name in natural:
                sign = "-" if descending else ""
                result += [f"{sign}{natural[name]}", term]
            else:
                result.append(term)
        if "id" not in {term.lstrip("-") for term in result}:
            result.append("id")
        return result
