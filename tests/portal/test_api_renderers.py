"""Lists handed to the renderer already encoded as JSON text (portal/api/renderers.py)."""

from __future__ import annotations

import json

import pytest

from portal.api.renderers import EncodedJSONArray, JSONRenderer

ROWS = '[{"id":1,"name":"a \\"quoted\\" name"},{"id":2,"name":"日本"}]'


def test_an_encoded_array_reads_as_the_list_it_encodes():
    array = EncodedJSONArray(ROWS)
    assert len(array) == 2
    assert array[1]["name"] == "日本"
    assert [row["id"] for row in array] == [1, 2]
    assert array == json.loads(ROWS)
    assert array == EncodedJSONArray(ROWS)
    assert array != {"id": 1}
    with pytest.raises(TypeError):
        hash(array)


@pytest.mark.parametrize(
    "data",
    [
        {"next": 'http://h/?cursor="x"', "previous": None, "results": EncodedJSONArray(ROWS)},
        EncodedJSONArray(ROWS),
        {"results": EncodedJSONArray("[]"), "count": 0},
    ],
)
def test_the_renderer_writes_the_text_where_the_list_goes(data):
    rendered = JSONRenderer().render(data)
    plain = data._decoded if isinstance(data, EncodedJSONArray) else {
        key: (value._decoded if isinstance(value, EncodedJSONArray) else value)
        for key, value in data.items()
    }
    assert json.loads(rendered) == plain
    assert rendered == JSONRenderer().render(plain)  # byte for byte, as DRF would write it


def test_a_string_that_looks_like_the_stand_in_is_left_alone():
    """The stand-in is a fresh random string per render: a value that happens to read like one
    is written as itself."""
    data = {"note": "encoded-json-0", "results": EncodedJSONArray("[1]")}
    assert json.loads(JSONRenderer().render(data)) == {"note": "encoded-json-0", "results": [1]}

