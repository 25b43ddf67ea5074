"""Joins and prefetches derived from what a serializer shows, as NetBox's viewsets do.

A brief related object (`BriefRelatedField`, or a nested brief serializer) is one join: the path
goes into `select_related`, and the brief's own brief relations extend the path (a cable's
`a_nic` shows its node: `a_nic__node`). A many-valued brief is one prefetch query. Either way the
number of queries of a list does not grow with its length.
"""

from __future__ import annotations

from functools import cache

from rest_framework import serializers

from inventory.api.fields import BriefRelatedField


@cache
def related_paths(serializer_class: type[serializers.Serializer]) -> tuple[tuple, tuple]:
    """(select_related paths, prefetch_related paths) for the fields `serializer_class` reads."""
    selects: list[str] = []
    prefetches: list[str] = []
    _walk(serializer_class, "", selects, prefetches)
    return tuple(selects), tuple(prefetches)


def _walk(serializer_class, prefix: str, selects: list[str], prefetches: list[str]) -> None:
    for field in serializer_class().fields.values():
        if field.write_only or field.source == "*":
            continue
        path = f"{prefix}{field.source.replace('.', '__')}"
        if isinstance(field, serializers.ManyRelatedField) and isinstance(
            field.child_relation, BriefRelatedField
        ):
            prefetches.append(path)
        elif isinstance(field, BriefRelatedField):
            selects.append(path)
            _walk(field.brief, f"{path}__", selects, prefetches)
        elif isinstance(field, serializers.Serializer) and not isinstance(
            field, serializers.ListSerializer
        ):
            selects.append(path)
            _walk(type(field), f"{path}__", selects, prefetches)
