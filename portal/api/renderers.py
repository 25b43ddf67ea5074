"""JSON rendering that can carry a list already encoded as JSON text.

A 1,000-row list page is some 650 kB of JSON: building its rows as dicts and then encoding them
cost more than the rest of the request together (inventory/api/fast_lists.py). Such a list is
handed over as an `EncodedJSONArray`; the renderer writes its text where the list goes. Anything
else that reads the data (the browsable API's forms, a test's `response.data`) sees an ordinary
sequence of dicts, decoded on first use.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from functools import cached_property

from rest_framework import renderers


class EncodedJSONArray(Sequence):
    """A JSON array given as its text, e.g. '[{"id":1},{"id":2}]'."""

    def __init__(self, text: str):
        self.text = text

    @cached_property
    def _decoded(self) -> list:
        return json.loads(self.text)

    def __getitem__(self, index):
        return self._decoded[index]

    def __len__(self) -> int:
        return len(self._decoded)

    def __eq__(self, other) -> bool:
        if isinstance(other, EncodedJSONArray):
            return self._decoded == other._decoded
        return isinstance(other, list) and self._decoded == other

    __hash__ = None  # a sequence of dicts, as unhashable as a list

    def __repr__(self) -> str:
        return f"EncodedJSONArray({len(self.text)} characters)"


class JSONRenderer(renderers.JSONRenderer):
    """DRF's JSON renderer, writing an `EncodedJSONArray` found at the top level of the data or
    one level down (a page's `results`) as its text, unparsed."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        encoded = _encoded_arrays(data)
        if not encoded:
            return super().render(data, accepted_media_type, renderer_context)
        # Each array stands in as a unique string while the rest is encoded as usual, then its
        # text replaces that string: the envelope keeps DRF's own encoding and settings.
        placeholders = {f"encoded-json-{uuid.uuid4().hex}": array for array in encoded}
        by_identity = {id(array): name for name, array in placeholders.items()}

        def swap(value):
            return by_identity.get(id(value), value)

        if isinstance(data, EncodedJSONArray):
            stand_in = swap(data)
        else:
            stand_in = {key: swap(value) for key, value in data.items()}
        text = super().render(stand_in, accepted_media_type, renderer_context)
        for name, array in placeholders.items():
            text = text.replace(f'"{name}"'.encode(), array.text.encode(), 1)
        return text


def _encoded_arrays(data) -> list[EncodedJSONArray]:
    if isinstance(data, EncodedJSONArray):
        return [data]
    if isinstance(data, dict):
        return [value for value in data.values() if isinstance(value, EncodedJSONArray)]
    return []
