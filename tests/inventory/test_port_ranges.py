"""Port lists read as ranges where they run evenly (issue 26: lists printed in full)."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from inventory.port_ranges import port_ranges


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        ([f"Ethernet{n}" for n in range(40, 97, 4)], ["Ethernet40-96 (every 4th)"]),
        (["Ethernet2", "Ethernet0", "Ethernet1"], ["Ethernet0-2"]),
        (["Ethernet8", "Ethernet16"], ["Ethernet8", "Ethernet16"]),  # two are not a run
        (["Ethernet0", "Ethernet4", "Ethernet16", "Ethernet17", "Ethernet18", "Ethernet3"],
         ["Ethernet0", "Ethernet3", "Ethernet4", "Ethernet16-18"]),
        (["Ethernet0", "Ethernet2", "Ethernet4", "Ethernet1000"],
         ["Ethernet0-4 (every 2nd)", "Ethernet1000"]),
        (["Port1", "Port2", "Port3", "Ethernet0"], ["Ethernet0", "Port1-3"]),
        (["eth01", "eth02", "eth03"], ["eth01", "eth02", "eth03"]),  # padded: names kept
        (["Ethernet8", "Ethernet8", "mgmt"], ["Ethernet8", "mgmt"]),
        ([], []),
    ],
)
def test_evenly_stepped_runs_become_ranges_and_nothing_is_implied(names, expected):
    assert port_ranges(names) == expected


def test_the_template_filter_joins_the_ranges():
    rendered = Template("{% load inventory_tags %}{{ ports|port_ranges }}").render(
        Context({"ports": [f"Ethernet{n}" for n in range(0, 29, 4)] + ["Ethernet100"]}))
    assert rendered == "Ethernet0-28 (every 4th), Ethernet100"
