"""Fabric pages: render for operators and viewers, refuse tenant admins, show the overview with
its problems first in words (not colour alone), the switch detail with its actions block, LLDP
and rail health; the "fabric" websocket group follows the same roles."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from fabric.lldp import collect_and_reconcile
from portal.models import Role
from portal.realtime import can_subscribe

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: fleets and the emulated fabric
pytestmark = pytest.mark.django_db


@pytest.fixture
def browser_as(make_user):
    def login(role, tenant=None):
        user = make_user(role, tenant=tenant)
        browser = Client()
        assert browser.login(username=user.username, password="correct-horse-battery")
        return browser

    return login


@pytest.fixture
def polled(polled_fleet, settings):
    settings.FABRIC_DRIVER = "fabric.drivers.emulated.EmulatedDriver"
    return polled_fleet


PAGES = [
    ("fabric:switch-list", {}),
    ("fabric:fabric-live", {}),
    ("fabric:switch-detail", {"hostname": "leaf-p1-r0"}),
    ("fabric:switch-nodes", {"hostname": "leaf-p1-r0"}),
    ("fabric:switch-ports", {"hostname": "leaf-p1-r0"}),
    ("fabric:lldp", {}),
    ("fabric:rail-health", {}),
]


@pytest.mark.parametrize("role", [Role.OPERATOR, Role.VIEWER])
@pytest.mark.parametrize(("name", "kwargs"), PAGES)
def test_pages_render_for_cluster_roles(browser_as, polled, role, name, kwargs):
    assert browser_as(role).get(reverse(name, kwargs=kwargs)).status_code == 200


@pytest.mark.parametrize(("name", "kwargs"), PAGES)
def test_tenant_admin_is_refused(browser_as, polled, tenant_a, name, kwargs):
    page = browser_as(Role.TENANT_ADMIN, tenant_a).get(reverse(name, kwargs=kwargs))
    assert page.status_code == 403


def test_navigation_links_the_fabric(browser_as, polled):
    html = browser_as(Role.OPERATOR).get("/").content.decode()
    assert f'href="{reverse("fabric:switch-list")}"' in html


def test_overview_lists_every_switch_with_the_hot_port(browser_as, polled):
    html = browser_as(Role.OPERATOR).get(reverse("fabric:switch-list")).content.decode()
    assert html.count("<tr data-switch=") == 26
    assert 'data-live-groups="fabric.overview"' in html and "js/fabric.js" in html
    assert '<tr data-group="p1" data-state="hot">' in html and 'data-group="spines"' in html
    # The hot port is named in words next to its switch, which comes first (problems first).
    first = html.index("<tr data-switch=")
    assert html.startswith('<tr data-switch="leaf-p1-r0"', first)
    assert '<td data-cell="worst">Ethernet0 9' in html
    assert 'class="fabric-switch"' not in html  # 26 switches: rows only, no port cells


def test_a_pod_drills_down_to_its_ports(browser_as, polled):
    browser = browser_as(Role.OPERATOR)
    html = browser.get(reverse("fabric:switch-list") + "?pod=p1").content.decode()
    assert html.count('class="fabric-switch"') == 8 and 'data-live-groups="fabric"' in html
    # The hot port: colour band 5 and the digit 9, with its load for the title fabric.js
    # writes on hover; a shut port has no load to name. No cell carries a title itself.
    hot = re.search(r'data-port="Ethernet0" data-state="U" data-level="5" data-pct="(\d+)" '
                    r'data-faces="nic">9</li>', html)
    assert hot and int(hot.group(1)) >= 90
    assert 'data-port="Ethernet16" data-state="X" data-level="0" data-faces="">X</li>' in html
    assert 'class="port-cell" data-port="Ethernet0" data-state="U" data-level="5" data-pct' in html
    assert " title=\"Ethernet" not in html
    fragment = browser.get(reverse("fabric:switch-ports", kwargs={"hostname": "leaf-p1-r0"}))
    assert fragment.content.decode().count('class="port-cell"') == 89  # its interfaces
    assert browser.get("/fabric/switches/nope/ports/").status_code == 404


def test_a_switch_with_too_many_ports_is_drawn_without_cells_until_asked(
    browser_as, polled, monkeypatch
):
    # A scale-125 spine has 8,000 ports: the eight spines' cells made the spines' page 6.7 MB.
    # Here the limit is put below a leaf's 89 interfaces instead.
    from fabric import selectors

    monkeypatch.setattr(selectors, "PORT_CELLS_INLINE_MAX", 88)
    browser = browser_as(Role.OPERATOR)
    html = browser.get(reverse("fabric:switch-list") + "?pod=p1").content.decode()
    assert html.count('class="fabric-switch"') == 8  # every leaf of the pod still has its strip
    assert html.count(" data-deferred>") == 8 and 'class="port-cell" data-port' not in html
    ports_url = reverse("fabric:switch-ports", kwargs={"hostname": "leaf-p1-r0"})
    assert "89 ports, too many to draw" in html and f'hx-get="{ports_url}"' in html
    # Asked for, the cells come as one switch's fragment, which the live page keeps current.
    fragment = browser.get(ports_url).content.decode()
    assert fragment.count('class="port-cell"') == 89 and "data-deferred" not in fragment


def test_nodes_behind_a_leaf(browser_as, polled):
    html = browser_as(Role.OPERATOR).get(
        reverse("fabric:switch-nodes", kwargs={"hostname": "leaf-p1-r3"})
    ).content.decode()
    for node in ("gpu001", "gpu002", "gpu003", "gpu004"):
        assert node in html
    assert "mlx5_4" in html  # rail 3's NIC


def test_a_switch_with_more_ports_than_a_page_shows_them_page_by_page(
    browser_as, polled, monkeypatch
):
    # A fleet's spine has thousands of ports (8,000 at scale 125): all of them made a page of
    # megabytes. Here the page is made smaller than the leaf instead.
    from portal import pagination

    monkeypatch.setattr(pagination, "SWITCH_PORT_ROWS_PER_PAGE", 10)
    browser = browser_as(Role.VIEWER)
    url = reverse("fabric:switch-detail", kwargs={"hostname": "leaf-p1-r0"})
    first = browser.get(url).content.decode()
    rows = first.split('id="port-rows"', 1)[1].split("</tbody>", 1)[0]
    assert rows.count("<tr data-port=") == 10
    history = first.split('id="history-port"', 1)[1].split("</select>", 1)[0]
    assert history.count("<option") <= 10  # the chart offers the ports of the page shown
    assert "Ports 1\u201310 of" in first and 'href="?page=2#ports" rel="next"' in first
    last = browser.get(url + "?page=999").content.decode()  # a stale link: the last page
    assert 'rel="prev"' in last and 'rel="next"' not in last
    assert browser.get(url + "?page=x").status_code == 200


def test_switch_detail_shows_counters_charts_and_action_region(browser_as, polled):
    html = browser_as(Role.VIEWER).get(
        reverse("fabric:switch-detail", kwargs={"hostname": "leaf-p1-r0"})
    ).content.decode()
    assert 'id="port-rows"' in html and "GB/s" in html
    assert '<a href="/inventory/nodes/gpu001/">gpu001</a> mlx5_0' in html  # a link
    assert "vendor/uplot/uPlot.iife.min.js" in html and 'id="history-port"' in html
    assert 'id="actions-title"' in html
    assert "cdn" not in html.lower()
    missing = browser_as(Role.VIEWER).get(
        reverse("fabric:switch-detail", kwargs={"hostname": "nope"})
    )
    assert missing.status_code == 404


def test_lldp_page_lists_findings(browser_as, polled):
    crossed = (("leaf-p1-r2", "Ethernet4"), ("leaf-p1-r3", "Ethernet4"))
    polled.cross_cables(*crossed)
    try:
        collect_and_reconcile()
    finally:
        polled.cross_cables(*crossed)  # the fleet is shared by the module's tests
    html = browser_as(Role.OPERATOR).get(reverse("fabric:lldp")).content.decode()
    assert 'data-kind="swapped"' in html and "leaf-p1-r2:Ethernet4" in html
    assert 'id="lldp-count-swapped">1<' in html
    # Each port is a link that lands on the port's row.
    assert '<a href="/search/?q=leaf-p1-r2%3AEthernet4">leaf-p1-r2:Ethernet4</a>' in html


def test_rail_health_page(browser_as, polled):
    browser = browser_as(Role.OPERATOR)
    html = browser.get(reverse("fabric:rail-health") + "?nodes=gpu[001-004]").content.decode()
    assert html.count("<tr data-rail=") == 8 and 'id="rail-verdict"' in html
    bad = browser.get(reverse("fabric:rail-health") + "?nodes=gpu[900-901]").content.decode()
    assert 'role="alert"' in bad and "gpu[900-901]" in bad


def test_fabric_group_follows_the_roles(make_user, tenant_a):
    assert can_subscribe(make_user(Role.VIEWER), "fabric")
    assert can_subscribe(make_user(Role.OPERATOR), "fabric")
    assert not can_subscribe(make_user(Role.TENANT_ADMIN, tenant=tenant_a), "fabric")


def test_rate_filters_show_a_dash_for_ports_never_polled():
    from fabric.templatetags.fabric_tags import byte_rate, event_rate, percent

    for missing in (None, "", "n/a"):
        assert byte_rate(missing) == event_rate(missing) == percent(missing) == "—"
    assert byte_rate(22_600_000_000) == "22.6 GB/s"


def test_the_two_switch_pages_link_to_each_other(browser_as, polled):
    client = browser_as(Role.OPERATOR)
    cabling = client.get("/inventory/switches/leaf-p1-r0/").content.decode()
    live = client.get("/fabric/switches/leaf-p1-r0/").content.decode()
    assert 'href="/fabric/switches/leaf-p1-r0/"' in cabling
    assert 'href="/inventory/switches/leaf-p1-r0/"' in live


def test_port_cells_are_built_escaped():
    # Built outside the template engine (a spine's 8,000 cells), so the escaping is its own.
    from fabric.selectors import HeatCell
    from fabric.templatetags.fabric_tags import port_cells

    html = port_cells([HeatCell('Eth"0<b>', "U", 0.42, "nic"),
                       HeatCell("Ethernet8", "X", None, "")])
    assert html == (
        '<li class="port-cell" data-port="Eth&quot;0&lt;b&gt;" data-state="U" data-level="3"'
        ' data-pct="42" data-faces="nic">4</li>'
        '<li class="port-cell" data-port="Ethernet8" data-state="X" data-level="0"'
        ' data-faces="">X</li>'
    )
