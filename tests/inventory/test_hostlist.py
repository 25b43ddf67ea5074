import random

import pytest

from inventory.hostlist import MAX_HOSTS, compress_hostlist, expand_hostlist
from portal.errors import InvalidInput


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("gpu001", ["gpu001"]),
        ("gpu[001-003]", ["gpu001", "gpu002", "gpu003"]),
        ("gpu[001-003,007]", ["gpu001", "gpu002", "gpu003", "gpu007"]),
        ("gpu[1-3]", ["gpu1", "gpu2", "gpu3"]),
        # Width is the width lo is written in; numbers may outgrow it.
        ("gpu[8-10]", ["gpu8", "gpu9", "gpu10"]),
        ("gpu[098-100]", ["gpu098", "gpu099", "gpu100"]),
        ("gpu[998-1000]", ["gpu998", "gpu999", "gpu1000"]),
        ("n[0-1]", ["n0", "n1"]),
        # Commas inside brackets separate ranges, outside they separate items.
        (
            "gpu[001-002,005],leaf-p1-r[0-1]",
            ["gpu001", "gpu002", "gpu005", "leaf-p1-r0", "leaf-p1-r1"],
        ),
        ("a,b,c", ["a", "b", "c"]),
        # Several bracket groups: cartesian product, left to right.
        ("r[1-2]n[01-02]", ["r1n01", "r1n02", "r2n01", "r2n02"]),
        ("leaf-p[1-2]-r[0-1]", ["leaf-p1-r0", "leaf-p1-r1", "leaf-p2-r0", "leaf-p2-r1"]),
        ("rack[1-2]-gpu[1,3]x", ["rack1-gpu1x", "rack1-gpu3x", "rack2-gpu1x", "rack2-gpu3x"]),
        # Order as written, repeats dropped.
        ("gpu[003,001],gpu001", ["gpu003", "gpu001"]),
        ("  gpu[1-2]  ", ["gpu1", "gpu2"]),
        ("node.example[1-2]", ["node.example1", "node.example2"]),
        ("x_[1-1]", ["x_1"]),
    ],
)
def test_expand(expression, expected):
    assert expand_hostlist(expression) == expected


@pytest.mark.parametrize(
    ("expression", "named_part", "reason"),
    [
        ("gpu[001-016", "gpu[001-016", "never closed"),
        ("gpu]001", "gpu]001", "']' without '['"),
        ("gpu[[1-2]]", "gpu[[1-2]]", "nested"),
        ("gpu[]", "gpu[]", "empty brackets"),
        ("gpu[5-1]", "5-1", "backwards"),
        ("gpu[a-b]", "a-b", "not a number"),
        ("gpu[1-]", "1-", "not a number"),
        ("gpu[-1]", "-1", "not a number"),
        ("gpu[1,,2]", "''", "not a number"),
        ("gpu[1-2-3]", "1-2-3", "not a number"),
        ("a,,b", "a,,b", "item 2 is empty"),
        ("a,", "a,", "item 2 is empty"),
        (",a", ",a", "item 1 is empty"),
        ("gpu[1-2] gpu3", "gpu[1-2] gpu3", "spaces"),
        ("gpu$1", "gpu$1", "host names use"),
        ("gpu[0-9999999]", "0-9999999", f"more than {MAX_HOSTS}"),
        ("a[1-1000]b[1-1000]", "a[1-1000]b[1-1000]", f"more than {MAX_HOSTS}"),
    ],
)
def test_malformed_expressions_name_the_part(expression, named_part, reason):
    with pytest.raises(InvalidInput) as caught:
        expand_hostlist(expression)
    (message,) = caught.value.detail["hostlist"]
    assert named_part in message
    assert reason in message


@pytest.mark.parametrize("expression", ["", "   ", None])
def test_empty_hostlist_is_an_error(expression):
    with pytest.raises(InvalidInput):
        expand_hostlist(expression)


def test_error_field_can_be_named():
    with pytest.raises(InvalidInput) as caught:
        expand_hostlist("gpu[", field="nodes")
    assert list(caught.value.detail) == ["nodes"]


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["gpu002", "gpu001", "gpu003", "gpu007"], "gpu[001-003,007]"),
        (["gpu001"], "gpu001"),
        (["node8", "node9", "node10"], "node[8-10]"),
        (["gpu099", "gpu100", "gpu101"], "gpu[099-101]"),
        (["gpu01", "gpu1", "gpu2"], "gpu[1-2],gpu01"),
        ([f"leaf-p1-r{r}" for r in range(8)], "leaf-p1-r[0-7]"),
        (["login", "gpu001", "gpu002"], "gpu[001-002],login"),
        (["r1n01x", "r1n02x"], "r1n[01-02]x"),
        (["gpu001", "gpu001"], "gpu001"),
        ([], ""),
    ],
)
def test_compress(names, expected):
    assert compress_hostlist(names) == expected


def test_compress_then_expand_gives_back_the_same_names():
    generator = random.Random(7)
    names = {f"gpu{n:03d}" for n in generator.sample(range(1, 1200), 300)}
    names |= {f"leaf-p{p}-r{r}" for p in range(1, 5) for r in range(8) if generator.random() < 0.7}
    names |= {"login1", "login01", "mgmt"}
    compressed = compress_hostlist(names)
    assert sorted(expand_hostlist(compressed)) == sorted(names)
    assert len(compressed) < sum(map(len, names))
    dense = [f"gpu{n:03d}" for n in range(1, 101)]
    assert compress_hostlist(dense) == "gpu[001-100]"
