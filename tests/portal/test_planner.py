"""portal.planner: PostgreSQL plans the wrapped reads with one setting changed (joins in the
written order; index reads priced as from memory), and nothing outside the block is planned
differently."""

import pytest
from django.db import connection, transaction

from portal.planner import joins_as_written, reads_from_memory

pytestmark = pytest.mark.django_db(transaction=True)

SETTINGS = pytest.mark.parametrize(
    ("block", "name", "inside"),
    [
        (joins_as_written, "join_collapse_limit", "1"),
        (reads_from_memory, "random_page_cost", "1.1"),
    ],
)


def shown(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW {name}")
        return cursor.fetchone()[0]


@SETTINGS
def test_inside_the_block_the_setting_holds_and_after_it_the_default_is_back(block, name, inside):
    default = shown(name)
    with block():
        assert shown(name) == inside
    assert shown(name) == default


@SETTINGS
def test_inside_a_callers_transaction_the_setting_ends_with_the_block(block, name, inside):
    # SET LOCAL lasts to the end of the transaction: inside a caller's, the block restores it,
    # or every later query of that request would be planned with it too.
    default = shown(name)
    with transaction.atomic():
        with block():
            assert shown(name) == inside
        assert shown(name) == default


@SETTINGS
def test_a_failing_read_leaves_nothing_behind(block, name, inside):
    default = shown(name)
    with transaction.atomic():
        with pytest.raises(ZeroDivisionError), block():
            1 / 0  # noqa: B018
        assert shown(name) == default
