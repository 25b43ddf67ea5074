"""Reads whose joins PostgreSQL should take in the order Django wrote them.

A lookup that starts from one row and select_related()s both ends of a cable joins 12 or 13
tables. PostgreSQL's planner searches the join orders of up to join_collapse_limit (8) tables at
a time, and for these queries spent 7-10 ms planning what then ran in under 3 ms: the cable
trace of one rail NIC was two thirds planning (16 of 24 ms of database time, measured with
EXPLAIN (ANALYZE, SUMMARY) at scale 1). Django writes such a query from the filtered table
outward, which is already the order to run it in; `joins_as_written` tells the planner so,
for the reads wrapped in it only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from django.db import connection, transaction

P = ParamSpec("P")
T = TypeVar("T")


@contextmanager
def joins_as_written():
    """Within the block, PostgreSQL keeps explicit joins in the order written (SET LOCAL
    join_collapse_limit = 1, in a transaction of the block's own, or restored after it inside
    the caller's). Other databases plan as they always do."""
    with _planner_setting("join_collapse_limit", "1"):
        yield


@contextmanager
def reads_from_memory():
    """Within the block, PostgreSQL prices a page read through an index as about what a page
    read in sequence costs (random_page_cost = 1.1, in the block's own transaction as above).
    Its default (4.0) assumes a spinning disk; the portal's tables live in memory or on SSD,
    and under the default the lost bisection of a fleet's spine (8,000 cables by key) hashed
    all 333,000 switch ports twice: 120 ms, against 53 ms through their primary key."""
    with _planner_setting("random_page_cost", "1.1"):
        yield


@contextmanager
def _planner_setting(name: str, value: str):
    if connection.vendor != "postgresql":
        yield
        return
    nested = connection.in_atomic_block
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL {name} = {value}")
        try:
            yield
        finally:
            if nested:  # SET LOCAL would outlive the block, to the end of the caller's transaction
                with connection.cursor() as cursor:
                    cursor.execute(f"SET LOCAL {name} TO DEFAULT")


def planned_as_written(function: Callable[P, T]) -> Callable[P, T]:
    """Run `function` within joins_as_written()."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        with joins_as_written():
            return function(*args, **kwargs)

    return wrapper
