"""`make demo` gives its tenants allocations (seed_demo_allocations)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db
REPOSITORY = Path(__file__).resolve().parents[2]


def test_the_demo_seeds_allocations_once(sakuraone):
    """Issue 26: the demo seeded no allocations, so a tenant admin's dashboard said 0 of 0."""
    from inventory.models import Allocation

    call_command("seed_demo", password="s3cret-demo", logins_file="/dev/null")
    call_command("seed_demo_allocations")
    held = {allocation.tenant.slug: sorted(allocation.nodes.values_list("hostname", flat=True))
            for allocation in Allocation.objects.current()}
    assert held["tenant-a"] == [f"gpu{number:03d}" for number in range(1, 9)]
    assert len(held["sakura-research"]) == 40
    call_command("seed_demo_allocations")  # again: nothing more
    assert Allocation.objects.count() == 2
    makefile = (REPOSITORY / "Makefile").read_text()
    assert makefile.index("manage.py seed_demo\n") < makefile.index("seed_demo_allocations")
