"""`?ordering=` by a name sorts naturally: gpu2, gpu10, gpu100 (not gpu10, gpu100, gpu2); by a
column that may be NULL, through a key that never is."""

from __future__ import annotations

from rest_framework.filters import OrderingFilter


class NaturalOrderingFilter(OrderingFilter):
    """DRF's OrderingFilter, with each field in the view's `natural_ordering` replaced by its sort
    key (a name's stored natural key, inventory/models/natural_sort.py; a nullable column's
    annotated key, never NULL, as a cursor's position needs), then the field itself; and the id
    last, on every ordering, to make the order total. Pages need it: rows tied in no set order
    came back in another one for the next page, and a walk by cursor over NICs by device, or GPUs
    by index, skipped some and repeated others. The documented field stays the name: the key is
    how it sorts, not something a client asks for."""

    def get_ordering(self, request, queryset, view):
        ordering = super().get_ordering(request, queryset, view)
        natural = getattr(view, "natural_ordering", {})
        if not ordering:
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
