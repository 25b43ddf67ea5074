"""The fabric in /readyz and the dashboard's Services card: the age of each switch's last
answered counter poll, read from the poller's records (never SSH from a readiness probe)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from fabric import health
from fabric.models import SwitchPollState
from inventory.models import Switch
from portal.models import Role

pytestmark = pytest.mark.django_db

STALE_SECONDS = 180.0


@pytest.fixture(autouse=True)
def stale_after(settings):
    settings.FABRIC_READINESS_STALE_SECONDS = STALE_SECONDS


@pytest.fixture
def past_grace(monkeypatch):
    """This process started long ago: never-polled switches are late, not waiting."""
    monkeypatch.setattr(health, "PROCESS_STARTED_AT", time.monotonic() - 2 * STALE_SECONDS)


@pytest.fixture
def no_ssh(monkeypatch):
    """Readiness must not reach a switch itself: any driver use fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("readiness opened a switch driver")

    monkeypatch.setattr("fabric.drivers.base.get_fabric_driver", refuse)


def make_switches(*hostnames: str) -> list[Switch]:
    return [Switch.objects.create(hostname=name, role=Switch.Role.SPINE) for name in hostnames]


def polled(switch: Switch, seconds_ago: float, *, failures: int = 0) -> None:
    """A poll `seconds_ago`; with failures, the switch last answered then and failed since."""
    moment = timezone.now() - timedelta(seconds=seconds_ago)
    SwitchPollState.objects.update_or_create(
        switch=switch,
        defaults={
            "last_polled_at": timezone.now() if failures else moment,
            "last_seen_at": moment,
            "consecutive_failures": failures,
            "last_error": "timed out" if failures else "",
        },
    )


def readyz() -> tuple[int, dict]:
    response = Client().get("/readyz")
    return response.status_code, response.json()


def services_card(client) -> str:
    html = client.get("/").content.decode()
    start = html.index('id="services-health"')
    return html[start : html.index("</section>", start)]


def test_every_switch_answered_recently_is_ok(past_grace, no_ssh):
    for switch in make_switches("leaf01", "leaf02", "spine01"):
        polled(switch, 30)

    status, body = readyz()

    assert status == 200, body
    assert body["checks"]["fabric"] == "ok"


def test_some_stale_switches_are_named_without_failing_readiness(
    past_grace, no_ssh, client, make_user
):
    leaf01, leaf02, spine01 = make_switches("leaf01", "leaf02", "spine01")
    polled(leaf01, 30)
    polled(leaf02, 600)  # answered ten minutes ago, nothing since
    polled(spine01, 400, failures=5)

    status, body = readyz()

    assert status == 200, body
    assert body["checks"]["fabric"] == (
        "stale: 2 of 3 switches answered no poll in the last 180 s: leaf02, spine01"
    )
    client.force_login(make_user(Role.OPERATOR))
    card = services_card(client)
    assert "fabric" in card and "status-retry" in card and "leaf02, spine01" in card


def test_no_switch_answering_is_503_naming_the_fabric(past_grace, no_ssh, client, make_user):
    switches = make_switches(*(f"leaf{index:02}" for index in range(1, 8)))
    for switch in switches[:3]:
        polled(switch, 900, failures=15)
    # the other four were never polled, long after this process started: the poller is dead

    status, body = readyz()

    assert status == 503, body
    assert body["down"] == ["fabric"]
    assert body["checks"]["fabric"] == (
        "fabric unreachable: no switch answered a poll in the last 180 s: "
        "leaf01, leaf02, leaf03, leaf04, leaf05 and 2 more"
    )
    client.force_login(make_user(Role.OPERATOR))
    card = services_card(client)
    assert "status-failed" in card and "fabric unreachable" in card


def test_never_polled_switches_just_after_start_are_waiting_not_down(no_ssh, monkeypatch):
    monkeypatch.setattr(health, "PROCESS_STARTED_AT", time.monotonic() - 5)
    leaf01, _ = make_switches("leaf01", "leaf02")
    polled(leaf01, 10)

    status, body = readyz()

    assert status == 200, body
    assert body["checks"]["fabric"] == "waiting for the first poll of 1 of 2 switches"

    monkeypatch.setattr(health, "PROCESS_STARTED_AT", time.monotonic() - 2 * STALE_SECONDS)
    status, body = readyz()
    assert status == 200
    assert (
        body["checks"]["fabric"].startswith("stale: 1 of 2 switches")
        and "leaf02" in body["checks"]["fabric"]
    )


def test_an_empty_inventory_is_not_configured():
    status, body = readyz()
    assert status == 200
    assert body["checks"]["fabric"] == "not configured (no switches in the inventory)"


def test_the_stale_threshold_defaults_to_three_poll_intervals(monkeypatch):
    import subprocess
    import sys

    probe = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='portal.settings'; "
        "from django.conf import settings; print(settings.FABRIC_READINESS_STALE_SECONDS)"
    )
    env = {**__import__("os").environ, "FABRIC_POLL_INTERVAL": "20"}
    env.pop("FABRIC_READINESS_STALE_SECONDS", None)
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert float(out) == 60.0


def test_readiness_reads_a_large_fabric_in_one_query(
    past_grace, no_ssh, django_assert_max_num_queries
):
    Switch.objects.bulk_create(
        [Switch(hostname=f"leaf{index:04}", role=Switch.Role.SPINE) for index in range(1000)]
    )
    with django_assert_max_num_queries(1):
        started = time.monotonic()
        problem = health.check_fabric_polls()
        seconds = time.monotonic() - started
    assert problem.startswith("fabric unreachable") and "and 995 more" in problem
    assert seconds < 0.5
