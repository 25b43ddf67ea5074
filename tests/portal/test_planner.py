"""joins_as_written: PostgreSQL plans the wrapped reads with their joins in the written order,
and nothing outside the block is planned differently."""

import pytest
from django.db import connection, transaction

from portal.planner import joins_as_written

pytestmark = pytest.mark.django_db(transaction=True)


def join_collapse_limit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW join_collapse_limit")
        return cursor.fetchone()[0]


def test_inside_the_block_joins_keep_their_order_and_after_it_the_default_is_back():
    default = join_collapse_limit()
    with joins_as_written():
        assert join_collapse_limit() == "1"
    assert join_collapse_limit() == default


def test_inside_a_callers_transaction_the_setting_ends_with_the_block():
    # SET LOCAL lasts to the end of the transaction: inside a caller's, the block restores it,
    # or every later query of that request would be planned as written too.
    default = join_collapse_limit()
    with transaction.atomic():
        with joins_as_written():
            assert join_collapse_limit() == "1"
        assert join_collapse_limit() == default


def test_a_failing_read_leaves_nothing_behind():
    default = join_collapse_limit()
    with transaction.atomic():
        with pytest.raises(ZeroDivisionError), joins_as_written():
            1 / 0  # noqa: B018
        assert join_collapse_limit() == default
