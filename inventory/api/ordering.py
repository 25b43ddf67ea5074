"""`?ordering=` by a name sorts naturally: gpu2, gpu10, gpu100 (not gpu10, gpu100, gpu2); by a
column that may be NULL, through a key that never is."""

from __future__ import annotations

from rest_framework.filters import OrderingFilter


class NaturalOrderingFilter(OrderingFilter):
    """DRF's OrderingFilter, with each name field in the view's `natural_ordering` sorted by its
    stored natural sort key (inventory/models/natural_sort.py) and then the name itself, each
    nullable field in `ordering_replaced_by` by its annotated key that is never NULL (a
    cursor's key cannot hold a NULL) instead of itself, and every ordering ended by the id to
    make it total. Pages need that: rows tied in no set order came back in another one for the
    next page, and a walk by cursor over NICs by device, or GPUs by index, skipped some and
    repeated others. The documented field stays the client's: the key is how it sorts, not
    something a client asks for."""

    def get_ordering(self, request, queryset, view):
        ordering = super().get_ordering(request, queryset, view)
        if not ordering:
            return ordering
        natural = getattr(view, "natural_ordering", {})
        replaced = getattr(view, "ordering_replaced_by", {})
        result = []
        for term in ordering:
            sign, name = ("-" if term.startswith("-") else ""), term.lstrip("-")
            if name in replaced:
                result.append(f"{sign}{replaced[name]}")
            elif name in natural:
                result += [f"{sign}{natural[name]}", term]
            else:
                result.append(term)
        if "id" not in {term.lstrip("-") for term in result}:
            result.append("id")
        return result
