"""What the pages say after a port Action is true (issue 26 item 3): the fabric switch page's
port counts and the node's rail map follow the Action's read-back and the next poll, count a
port shut on purpose apart from a link that is down, and never contradict each other."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from fabric.action_handlers import PORT_ADMIN_ACTION, set_port_admin
from inventory.models import Switch
from portal.models import Action, Role
from tests.fabric.monitoring_support import import_fleet, poll_every_minute

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: the emulated fabric
pytestmark = pytest.mark.django_db

LEAF = "leaf-p1-r0"
NODE_PORT = "Ethernet0"  # gpu001's rail 0


@pytest.fixture
def operator(make_user):
    browser = Client()
    browser.force_login(make_user(Role.OPERATOR))
    return browser


@pytest.fixture
def fleet(db):
    return import_fleet(4)


@pytest.fixture
def polled_leaf(fleet, emulated):  # the fleet first: the emulator boots from the inventory
    poll_every_minute(emulated, 1, switches=[LEAF])
    return emulated


def port_counts(operator) -> tuple[int, int, int]:
    html = operator.get(reverse("fabric:switch-detail", kwargs={"hostname": LEAF})).content
    found = re.search(
        r"<dt>Ports up / down / shut</dt><dd>(\d+) / (\d+) / (\d+)</dd>", html.decode()
    )
    assert found, "the switch page counts ports up, down and shut"
    return tuple(int(number) for number in found.groups())


def rail_zero(operator) -> tuple[str, str]:
    """gpu001's rail 0 as the picture and the table say it."""
    html = operator.get("/inventory/nodes/gpu001/").content.decode()
    picture = re.search(r'<g class="rp-rail rail-0 .*?</g>', html, re.S).group(0)
    table = re.search(r'<tr data-rail="0">(.*?)</tr>', html, re.S).group(1)
    return picture, table


def shut(port: str) -> Action:
    switch = Switch.objects.get(hostname=LEAF)
    action = Action.objects.create(
        kind=PORT_ADMIN_ACTION,
        reason="reseat the optic",
        parameters={"switch_id": switch.pk, "switch": LEAF, "ports": [port], "up": False},
    )
    set_port_admin(action)
    return action


def test_a_shut_port_is_counted_as_shut_at_once_and_after_the_next_poll(polled_leaf, operator):
    up, down, shut_before = port_counts(operator)
    assert up > 0 and shut_before >= 0

    shut(NODE_PORT)
    # Before any poll: the Action's read-back already moved the port from up to shut.
    assert port_counts(operator) == (up - 1, down, shut_before + 1)
    poll_every_minute(polled_leaf, 1, switches=[LEAF])
    assert port_counts(operator) == (up - 1, down, shut_before + 1)


def test_the_rail_map_says_shut_not_ok_and_down_at_once(polled_leaf, operator):
    picture, table = rail_zero(operator)
    assert "rail 0 ok" in picture and "▲ up" in picture

    shut(NODE_PORT)
    for _ in range(2):  # after the Action, then after the next poll
        picture, table = rail_zero(operator)
        assert "rail 0 ok" not in picture, picture
        assert "shut" in picture and "▼ down" not in picture
        assert "shut" in table and "▼" not in table
        assert "cabled" in picture  # the cable is still right: only the link is off
        poll_every_minute(polled_leaf, 1, switches=[LEAF])


def test_the_switch_page_says_while_a_maintenance_runs(polled_leaf, operator):
    from fabric.models import Maintenance

    url = reverse("fabric:switch-detail", kwargs={"hostname": LEAF})
    assert 'id="maintenance-badge"' not in operator.get(url).content.decode()
    action = shut(NODE_PORT)
    maintenance = Maintenance.objects.create(
        switch=Switch.objects.get(hostname=LEAF),
        reason="replace PSU",
        start_action=action,
        status=Maintenance.Status.ACTIVE,
        ports=[NODE_PORT],
        shut_ports=[NODE_PORT],
    )
    badge = re.search(
        r'<[^>]*id="maintenance-badge".*?</a>', operator.get(url).content.decode(), re.S
    )
    assert badge and "in maintenance" in badge.group(0) and "replace PSU" in badge.group(0)
    assert f"/actions/{action.pk}/" in badge.group(0)
    maintenance.status = Maintenance.Status.ENDED
    maintenance.save()
    assert 'id="maintenance-badge"' not in operator.get(url).content.decode()
