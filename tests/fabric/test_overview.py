"""The fabric overview: per switch and per pod/spine aggregates with problems
first, filters by pod, role and state that name a bad value, a constant number of queries, and
a poll that publishes only the rows it changed ("fabric.overview"), on commit."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from fabric.overview import (
    FabricOverview,
    GroupRow,
    SwitchRow,
    clean_overview_filters,
    fabric_overview,
    overview_delta,
)
from portal.errors import InvalidInput
from portal.models import Role
from tests.fabric.monitoring_support import poll_every_minute

pytestmark = pytest.mark.django_db
EMULATED = "fabric.drivers.emulated.EmulatedDriver"


@pytest.fixture(scope="module")
def troubled_fabric(django_db_setup, django_db_blocker):
    """The trimmed fleet polled twice (rates need two samples), then once more after a cut
    cable, a hot port and a dead spine; committed once per module. A test that changes the
    emulator puts it back."""
    import time

    from django.test import override_settings

    from fabric.drivers.emulated import build_emulated_fabric, reset_emulated_fabric
    from tests.fabric.monitoring_support import (
        FakeClock,
        delete_fabric_monitoring,
        delete_inventory,
        import_fleet,
    )

    with django_db_blocker.unblock(), override_settings(FABRIC_DRIVER=EMULATED):
        import_fleet(4)
        fabric = build_emulated_fabric(clock=FakeClock(float(int(time.time()) // 60 * 60)))
        fabric.fake_clock = fabric.clock
        poll_every_minute(fabric, 2)
        fabric.switches["leaf-p1-r2"].set_link_up("Ethernet0", False)
        fabric.switches["leaf-p2-r1"].set_utilization("Ethernet8", 0.97)
        fabric.set_unreachable("spine-2")
        poll_every_minute(fabric, 1)
        yield fabric
        reset_emulated_fabric()
        delete_fabric_monitoring()
        delete_inventory()


@pytest.fixture
def troubled(troubled_fabric, settings):
    settings.FABRIC_DRIVER = EMULATED
    return troubled_fabric


def test_problems_come_first_with_their_worst_port(troubled, make_user,
                                                   django_assert_max_num_queries):
    operator = make_user(Role.OPERATOR)
    with django_assert_max_num_queries(4):
        overview = fabric_overview(user=operator)
    first = [(row.hostname, row.state, row.cells()["worst"]) for row in overview.switches[:3]]
    assert first[:2] == [("spine-2", "unreachable", "—"), ("leaf-p1-r2", "down", "Ethernet0 down")]
    assert first[2][:2] == ("leaf-p2-r1", "hot") and first[2][2].startswith("Ethernet8 9")
    assert all(row.state == "ok" for row in overview.switches[3:])
    assert overview.state_counts == {"unreachable": 1, "down": 1, "hot": 1, "unpolled": 0,
                                     "ok": 23}
    groups = {group.name: group.cells() for group in overview.groups}
    assert [group.name for group in overview.groups][:3] == ["spines", "p1", "p2"]
    assert groups["spines"]["problems"] == "1" and groups["spines"]["switches"] == "8"
    assert groups["p1"]["down"] == "1" and groups["p1"]["worst"] == "leaf-p1-r2 Ethernet0 down"
    assert int(groups["p2"]["load"].split("/ ")[1].rstrip("%")) >= 90
    assert groups["storage/management"]["state"] == "ok"
    assert overview.pods == ["p1", "p2"]


def test_filters_narrow_the_rows_and_name_a_bad_value(troubled, make_user):
    operator = make_user(Role.OPERATOR)

    def hostnames(**filters):
        return [row.hostname for row in fabric_overview(user=operator, filters=filters).switches]

    assert hostnames(state="problems") == ["spine-2", "leaf-p1-r2", "leaf-p2-r1"]
    assert len(hostnames(pod="p2")) == 8 and hostnames(pod="p2")[0] == "leaf-p2-r1"
    assert hostnames(role="spine", state="unreachable") == ["spine-2"]
    capped = fabric_overview(user=operator, row_limit=5)
    assert [row.hostname for row in capped.switches][:3] == hostnames(state="problems")
    assert len(capped.switches) == 5 and capped.switches_not_listed == 21
    assert fabric_overview(user=make_user(Role.TENANT_ADMIN)).switches == []
    with pytest.raises(InvalidInput) as error:
        clean_overview_filters({"state": "melting", "role": "router"})
    assert set(error.value.detail) == {"state", "role"}

    browser = Client()
    browser.force_login(operator)
    page = browser.get(reverse("fabric:switch-list") + "?state=melting")
    assert page.status_code == 400 and "state: unknown state &#x27;melting&#x27;" in page.text
    page = browser.get(reverse("fabric:switch-list") + "?state=problems")
    assert page.status_code == 200 and page.text.count("<tr data-switch=") == 3
    assert 'data-live-groups="fabric.overview"' in page.text


def test_overview_delta_carries_only_changed_cells():
    row = {"state": "ok", "state_label": "ok", "error": "", "load": "3% / 9%", "group": "p1"}
    down = {**row, "state": "down", "state_label": "ports down"}
    before = {"switches": {"a": row, "b": row, "d": row}, "groups": {"p1": row},
              "counts": {"ok": 3}}
    after = {"switches": {"a": row, "b": {**row, "load": "4% / 9%"}, "c": row, "d": down},
             "groups": {"p1": row}, "counts": {"ok": 3, "down": 1}}
    assert overview_delta(before, after) == {
        "switches": {"b": {"load": "4% / 9%"}, "c": row, "d": down},  # new and state: whole
        "groups": {},
        "removed": [],
        "counts": {"ok": 3, "down": 1},
    }
    assert overview_delta(after, before)["removed"] == ["c"]


def _busy_fabric(move: float) -> dict:
    """event_cells() of 200 leafs in 8 pods, every rate and load scaled by `move`."""
    rows = [
        SwitchRow(hostname=f"leaf-{index}", role="leaf", group=f"p{index % 8}", rail=index % 8,
                  state="ok", mean_load=0.40 * move, max_load=0.60 * move,
                  in_bytes_per_second=12.0e9 * move, out_bytes_per_second=11.0e9 * move,
                  pfc_per_second=150.0 * move, ecn_per_second=1200.0 * move, ports_up=64)
        for index in range(200)
    ]
    groups = {}
    for row in rows:
        groups.setdefault(row.group, GroupRow(row.group)).switches.append(row)
    return FabricOverview(groups=list(groups.values()), switches=rows, total_switches=200,
                          state_counts={"ok": 200}, pods=sorted(groups)).event_cells()


def test_a_small_move_everywhere_sends_no_rows_a_large_one_sends_every_row():
    """Traffic moving 1% on every switch changes the printed third digit of every row ("12.0
    GB/s" -> "12.1 GB/s") but no value leaves its bucket: nothing goes out. A 30% move does."""
    before = _busy_fabric(1.0)
    small = overview_delta(before, _busy_fabric(1.01))
    assert (len(small["switches"]), len(small["groups"])) == (0, 0)
    assert "counts" not in small
    large = overview_delta(before, _busy_fabric(1.3))
    assert (len(large["switches"]), len(large["groups"])) == (200, 8)
    assert large["switches"]["leaf-0"] == {
        "load": "52% / 78%", "traffic": "15.6 GB/s / 14.3 GB/s", "pfc": "195/s", "ecn": "1.6k/s",
    }
    assert all("~marks" not in cells for cells in large["switches"].values())


def test_a_slow_ramp_reaches_the_page_once_it_leaves_its_bucket():
    """1% a poll is never sent poll by poll, yet the shown value never drifts more than a
    bucket: the poll whose value enters the next bucket sends the cell."""
    shown = _busy_fabric(1.0)["switches"]["leaf-0"]["traffic"]
    previous, sent = _busy_fabric(1.0), []
    for step in range(1, 30):
        current = _busy_fabric(1.01**step)
        delta = overview_delta(previous, current)["switches"]
        if "traffic" in delta.get("leaf-0", {}):
            shown = delta["leaf-0"]["traffic"]
            sent.append(step)
        previous = current
        true_in = 12.0e9 * 1.01**step
        assert abs(float(shown.split()[0]) * 1e9 - true_in) / true_in < 0.1
    assert 0 < len(sent) < 10


def test_a_poll_publishes_its_delta_on_commit(troubled, monkeypatch,
                                              django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr("portal.realtime.events.send_now",
                        lambda group, message: sent.append((group, message)))
    troubled.switches["leaf-p1-r2"].set_link_up("Ethernet0", True)
    try:
        with django_capture_on_commit_callbacks() as callbacks:
            poll_every_minute(troubled, 1)
            assert sent == []  # nothing leaves before the transaction commits
    finally:
        troubled.switches["leaf-p1-r2"].set_link_up("Ethernet0", False)
    for callback in callbacks:
        callback()
    events = {message["event"]: (group, json.loads(message["payload"])) for group, message in sent}
    group, delta = events["fabric.overview"]
    assert group == "fabric.overview"
    assert delta["switches"]["leaf-p1-r2"]["state"] == "ok"  # its cable is mended
    assert delta["groups"]["p1"]["down"] == "0"
    assert delta["counts"]["down"] == 0
    # A switch still unreachable shows the same row as before: it is not sent again.
    assert "spine-2" not in delta["switches"]


def test_a_quiet_poll_sends_few_rows(troubled, monkeypatch, django_capture_on_commit_callbacks):
    """A real poll of the emulated fabric where only the traffic's jitter moves (a few percent
    a port, everywhere): the printed third digit changes on most switches, the delta carries
    only the rows whose value left its bucket."""
    sent = []
    monkeypatch.setattr(
        "portal.realtime.events.send_now", lambda group, message: sent.append((group, message))
    )
    with django_capture_on_commit_callbacks(execute=True):
        poll_every_minute(troubled, 1)
    delta = next(
        json.loads(message["payload"])
        for group, message in sent
        if message["event"] == "fabric.overview"
    )
    from inventory.models import Switch

    assert Switch.objects.count() == 26  # today's main sends 25 of them
    assert len(delta["switches"]) <= 26 // 4, delta["switches"]
