"""The inventory pages: lists with filters, node and switch detail, topology, validation, roles,
and the panel registry other apps extend the node and switch pages with."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from django.test import Client
from django.utils import timezone

from inventory import ui_panels
from inventory.models import Allocation, Cable, CableStatus, Node
from portal.models import Role

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def browser_as(make_user):
    def login(role, tenant=None):
        user = make_user(role, tenant=tenant)
        browser = Client()
        browser.force_login(user)
        browser.user = user
        return browser

    return login


@pytest.fixture
def operator(browser_as):
    return browser_as(Role.OPERATOR)


def html_of(response) -> str:
    return response.content.decode()


def node_rows(html: str) -> list[str]:
    return re.findall(r'<tr data-hostname="([^"]+)"', html)


PAGES = [
    "/inventory/",
    "/inventory/?hostlist=gpu[001-004]&pod=p1",
    "/inventory/nodes/gpu001/",
    "/inventory/nodes/gpu001/nics/mlx5_0/trace/",
    "/inventory/switches/",
    "/inventory/switches/leaf-p1-r0/",
    "/inventory/switches/spine-1/",
    "/inventory/cables/",
    "/inventory/search/",
    "/inventory/search/?q=mlx5_11",
    "/inventory/topology/",
    "/inventory/validation/",
]


@pytest.mark.parametrize("role", [Role.OPERATOR, Role.VIEWER])
@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_for_operators_and_viewers(sakuraone, browser_as, role, path):
    response = browser_as(role).get(path)
    assert response.status_code == 200, path
    html = html_of(response)
    assert "css/inventory.css" in html
    # The inventory's own pages write nothing; only other apps' panels (drain, resume) may, and
    # only for roles that may act.
    body = html.replace('action="/logout/"', "").split("</header>")[1]
    if role == Role.VIEWER:
        assert 'method="post"' not in body
    else:
        assert set(re.findall(r'<form method="post" action="([^"]+)"', body)) <= {
            "/jobs/nodes/drain/", "/jobs/nodes/resume/", "/faults/report/",
            "/faults/report/node/gpu001/"}


def test_inventory_is_a_link_in_the_main_navigation(sakuraone, operator):
    html = html_of(operator.get("/inventory/"))
    assert '<a href="/inventory/" aria-current="page" class="active">Inventory</a>' in html


# -- node list and its filters -------------------------------------------------------------


def test_hostlist_filter_returns_exactly_the_named_nodes(sakuraone, operator):
    html = html_of(operator.get("/inventory/", {"hostlist": "gpu[001-016,020]"}))
    assert node_rows(html) == [f"gpu{n:03d}" for n in [*range(1, 17), 20]]
    assert "<strong>17</strong> nodes" in html


def test_filters_combine_and_pagination_pages_through(sakuraone, operator):
    pod_two = node_rows(html_of(operator.get("/inventory/", {"pod": "p2", "status": "active"})))
    assert pod_two == [f"gpu{n:03d}" for n in range(51, 101)]
    rack = node_rows(html_of(operator.get("/inventory/", {"rack": "p1-rack02"})))
    assert rack == ["gpu005", "gpu006", "gpu007", "gpu008"]
    page_two = html_of(operator.get("/inventory/", {"page": 2}))
    assert node_rows(page_two)[0] == "gpu051" and len(node_rows(page_two)) == 50
    assert "Page 2 of 2" in page_two
    assert node_rows(html_of(operator.get("/inventory/", {"pod": "p1", "hostlist": "gpu05[0-2]"})))[
        -1:
    ] == ["gpu050"]


def test_list_pages_run_the_same_queries_for_3_rows_as_for_a_full_page(
    sakuraone, operator, django_assert_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for path, few, many in [
        ("/inventory/", {"hostlist": "gpu00[1-3]"}, {}),
        ("/inventory/switches/", {"role": "spine", "pod": ""}, {}),
        ("/inventory/cables/", {"node": "gpu001"}, {}),
    ]:
        operator.get(path, few)  # the session and user are cached after the first request
        with CaptureQueriesContext(connection) as small:
            operator.get(path, few)
        with django_assert_num_queries(len(small)):
            operator.get(path, many)


def test_slurm_state_filter_offers_the_states_slurm_reported(sakuraone, operator):
    Node.objects.filter(hostname__in=["gpu003", "gpu077"]).update(slurm_state="DRAINED")
    html = html_of(operator.get("/inventory/", {"slurm_state": "DRAINED"}))
    assert node_rows(html) == ["gpu003", "gpu077"]
    assert 'class="slurm slurm-drained"' in html and ">D</span>drained" in html


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"hostlist": "gpu[001-"}, "Hosts", "never closed"),
        ({"hostlist": "gpu[009-001]"}, "Hosts", "runs backwards"),
        ({"pod": "p9"}, "Pod", "Select a valid choice"),
        ({"status": "broken"}, "Status", "Select a valid choice"),
    ],
)
def test_bad_filter_input_is_a_clear_message_not_a_500(sakuraone, operator, query, field, message):
    page = operator.get("/inventory/", query)
    assert page.status_code == 400
    html = html_of(page)
    assert 'role="alert"' in html and f'<span class="field-name">{field}</span>' in html
    assert message in html
    assert node_rows(html) == []
    # htmx only swaps successful responses: the fragment comes back 200 with the same message.
    fragment = operator.get("/inventory/", query, **HTMX)
    assert fragment.status_code == 200 and message in html_of(fragment)


def test_htmx_gets_only_the_results_fragment(sakuraone, operator):
    fragment = html_of(operator.get("/inventory/", {"hostlist": "gpu00[1-3]"}, **HTMX))
    assert "<html" not in fragment and 'id="node-table"' in fragment
    assert node_rows(fragment) == ["gpu001", "gpu002", "gpu003"]
    assert '<code class="hostlist">gpu[001-003]</code>' in fragment


def test_switch_and_cable_lists_filter(sakuraone, operator):
    spines = html_of(operator.get("/inventory/switches/", {"role": "spine"}))
    assert len(re.findall(r'<tr data-hostname="spine-\d"', spines)) == 8
    assert "leaf-p1" not in spines
    pod_leafs = html_of(operator.get("/inventory/switches/", {"role": "leaf", "pod": "p2"}))
    assert re.findall(r'<tr data-hostname="([^"]+)"', pod_leafs) == [
        f"leaf-p2-r{rail}" for rail in range(8)
    ]
    cables = html_of(operator.get("/inventory/cables/", {"switch": "leaf-p1-r0"}))
    # 50 node links and 32 uplinks land on a leaf; the first page shows all 82.
    assert "<strong>82</strong> cables" in cables
    Cable.objects.filter(pk=Cable.objects.order_by("pk").first().pk).update(
        status=CableStatus.FAULTY
    )
    assert "<strong>1</strong> cables" in html_of(
        operator.get("/inventory/cables/", {"status": "faulty"})
    )
    unknown = operator.get("/inventory/cables/", {"switch": "leaf-p9-r0"})
    assert unknown.status_code == 400 and "No switch &#x27;leaf-p9-r0&#x27;." in html_of(unknown)


# -- node detail ---------------------------------------------------------------------------


def test_node_page_shows_its_eight_rail_nics_with_their_leaf_ports(
    sakuraone, operator, django_assert_max_num_queries
):
    # 17: one of them asks whether a running maintenance window covers the node (its badge);
    # +2: the faults panel counts the node's and its GPU serials' tickets (repeat offenders).
    with django_assert_max_num_queries(19):
        html = html_of(operator.get("/inventory/nodes/gpu002/"))
    rail_map = html.split('id="rail-map-table"')[1].split("</table>")[0]
    rows = re.findall(r'<tr data-rail="(\d)">(.*?)</tr>', rail_map, re.S)
    assert [int(rail) for rail, _ in rows] == list(range(8))
    devices = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_11"]
    for (rail, row), device in zip(rows, devices, strict=True):
        assert f"<code>{device}</code>" in row
        # gpu002 is node 1 of pod p1: the second half of cage 0, Ethernet4, on leaf r of p1.
        assert f'href="/inventory/switches/leaf-p1-r{rail}/#port-Ethernet4"' in row
        assert "✓</span> ok" in row
    assert html.count('class="rp-rail rail-') == 8 and "rp-wrong_leaf" not in html
    # Table 1 facts and the GPUs.
    assert "2 \u00d7 Intel Xeon Platinum 8580+" in html and "1,536 GB (1.5 TB)" in html
    assert "4 \u00d7 7.68 TB NVMe" in html
    assert len(re.findall(r'<tr id="gpu-\d">', html)) == 8
    nic_table = html.split('id="nic-table"')[1].split("</table>")[0]
    assert len(re.findall(r'<tr id="nic-', nic_table)) == 12
    assert "mlx5_bond_0" in nic_table and "storage-2" in nic_table


def test_rail_map_flags_a_rail_on_the_wrong_leaf(sakuraone, operator):
    cable = Cable.objects.get(a_nic__node__hostname="gpu001", a_nic__device="mlx5_1")
    other = Cable.objects.get(a_nic__node__hostname="gpu001", a_nic__device="mlx5_2")
    # Swap the two rail cables' leaf ends: rails 1 and 2 now land on each other's leaf.
    cable_port, other_port = cable.b_port_id, other.b_port_id
    # (A decommissioned cable frees its ends, so the swap never puts a port in two cables.)
    Cable.objects.filter(pk=other.pk).update(status=CableStatus.DECOMMISSIONED)
    Cable.objects.filter(pk=cable.pk).update(b_port_id=other_port)
    Cable.objects.filter(pk=other.pk).update(b_port_id=cable_port, status=CableStatus.CONNECTED)
    html = html_of(operator.get("/inventory/nodes/gpu001/"))
    assert html.count("✕</span> wrong leaf") == 2
    assert html.count('class="rp-rail rail-1 rp-wrong_leaf"') == 1


def test_trace_of_a_rail_nic_reaches_the_leaf_and_every_spine(sakuraone, operator):
    page = html_of(operator.get("/inventory/nodes/gpu001/"))
    assert page.count('<details class="trace"') == 10  # 8 rails + 2 storage links
    assert 'hx-get="/inventory/nodes/gpu001/nics/mlx5_11/trace/"' in page
    fragment = html_of(operator.get("/inventory/nodes/gpu001/nics/mlx5_11/trace/", **HTMX))
    assert "<html" not in fragment
    assert 'href="/inventory/switches/leaf-p1-r7/"' in fragment
    assert "32 to 8 spines" in fragment
    spines = re.findall(r'<th scope="row"><a href="/inventory/switches/(spine-\d)/">', fragment)
    assert spines == [f"spine-{n}" for n in range(1, 9)]
    assert operator.get("/inventory/nodes/gpu001/nics/mlx5_99/trace/").status_code == 404


# -- switch detail ---------------------------------------------------------------------------


def test_switch_page_lists_ports_with_the_nodes_behind_them(
    sakuraone, operator, django_assert_max_num_queries
):
    # 11 for the page (one counts the ports for their pages), 14 for the impact card
    # (console.impact, 3 of them once per inventory revision, 4 the lost bisection's planner
    # setting inside the test's transaction), 1 for a running window's badge and 1 for the
    # switch's running maintenance (linked instead of offering another): constant, whatever
    # the fleet.
    with django_assert_max_num_queries(27):
        html = html_of(operator.get("/inventory/switches/leaf-p2-r3/"))
    assert '<dd id="nodes-behind-count">50</dd>' in html
    assert "gpu[051-100]" in html
    row = re.search(r'<tr id="port-Ethernet0".*?</tr>', html, re.S).group(0)
    assert 'href="/inventory/nodes/gpu051/#nic-mlx5_4"' in row and "<code>mlx5_4</code>" in row
    assert "rail 3" in row and "half of" in row
    cage = re.search(r'<tr id="port-Port1".*?</tr>', html, re.S).group(0)
    assert "cage 2x400G" in cage
    uplink = re.search(r'<tr id="port-Ethernet256".*?</tr>', html, re.S).group(0)
    assert 'href="/inventory/switches/spine-1/#port-' in uplink


def test_a_switch_page_shows_its_ports_page_by_page_and_counts_them_all(
    sakuraone, operator, monkeypatch
):
    from portal import pagination

    monkeypatch.setattr(pagination, "SWITCH_PORT_ROWS_PER_PAGE", 20)
    url = "/inventory/switches/leaf-p2-r3/"
    html = html_of(operator.get(url))
    table = html.split('id="port-table"', 1)[1].split("</tbody>", 1)[0]
    assert table.count('<tr id="port-') == 20
    # The counts are the switch's, not the page's: 114 rows, 50 hosts and 32 spine cables.
    assert re.search(r"<dt>Ports</dt><dd>114 ", html)
    assert re.search(r"<dt>Cabled</dt><dd>82</dd>", html)
    assert re.search(r"<dt>To other switches</dt><dd>32</dd>", html)
    assert '<dd id="nodes-behind-count">50</dd>' in html
    pages = [html_of(operator.get(f"{url}?page={number}")) for number in range(1, 7)]
    names = [re.findall(r'<tr id="port-([^"]+)"', page.split('id="port-table"', 1)[1])
             for page in pages]
    everyone = [name for page in names for name in page]
    assert len(everyone) == len(set(everyone)) == 114  # each port once, none lost between pages
    assert everyone.index("Port1") < everyone.index("Ethernet0")  # a cage before its halves


def test_switch_status_and_link_state_are_words_not_only_colour(sakuraone, operator):
    from inventory.models import SwitchPort

    SwitchPort.objects.filter(switch__hostname="leaf-p1-r0", name="Ethernet0").update(
        admin_status="up", oper_status="down", last_seen_at=timezone.now()
    )
    row = re.search(
        r'<tr id="port-Ethernet0".*?</tr>',
        html_of(operator.get("/inventory/switches/leaf-p1-r0/")),
        re.S,
    ).group(0)
    assert "▲</span> up" in row and "▼</span> down" in row
    rail_map = html_of(operator.get("/inventory/nodes/gpu001/"))
    assert "▼ down" in rail_map  # the rail map shows the leaf port's last seen state


# -- topology and validation -----------------------------------------------------------------


def test_topology_svg_shows_sixteen_leafs_eight_spines_and_their_links(
    sakuraone, operator, django_assert_max_num_queries
):
    with django_assert_max_num_queries(12):
        html = html_of(operator.get("/inventory/topology/"))
    svg = html.split('<svg class="fabric"')[1].split("</svg>")[0]
    assert 'viewBox="0 0 ' in html.split('<svg class="fabric"')[1][:80]
    assert len(re.findall(r'class="fabric-switch leaf"', svg)) == 16
    assert len(re.findall(r'class="fabric-switch spine"', svg)) == 8
    assert len(re.findall(r'<line class="fl ', svg)) == 16 * 8
    assert "4 links</title>" in svg and "fl-missing" not in svg
    assert "r0 · 50 nodes · 32↑" in svg
    assert "gpu[001-050]" in svg and "gpu[051-100]" in svg
    matrix = html.split('id="link-matrix"')[1].split("</table>")[0]
    assert matrix.count('<td class="num">4</td>') == 16 * 8


def test_topology_marks_a_missing_leaf_spine_link(sakuraone, operator):
    operator.get("/inventory/topology/")  # cached before the change: must not be shown after
    for cable in Cable.objects.filter(
        a_port__switch__hostname="leaf-p1-r0", b_port__switch__hostname="spine-3"
    ):
        cable.status = CableStatus.DECOMMISSIONED
        cable.save()  # as the API and the UI write it
    html = html_of(operator.get("/inventory/topology/"))
    assert html.count("fl-missing") == 1
    assert "leaf-p1-r0 \u2013 spine-3: 0 links" in html
    assert '<td class="num cell-unusual"><span aria-hidden="true">⚠ </span>0</td>' in html


def test_fabric_picture_stacks_more_pods_above_and_below_the_spines():
    from inventory.selectors import FabricSummary, FabricSwitch
    from inventory.views.topology import fabric_picture

    pods = {
        f"p{p}": [
            FabricSwitch(p * 10 + r, f"leaf-p{p}-r{r}", f"p{p}", r, "active") for r in range(8)
        ]
        for p in range(1, 5)
    }
    spines = [FabricSwitch(100 + s, f"spine-{s}", None, None, "active") for s in range(1, 9)]
    links = {
        (leaf.id, spine.id): 4 for leafs in pods.values() for leaf in leafs for spine in spines
    }
    links[(10, 101)] = 3  # one pair short of the usual four
    picture = fabric_picture(FabricSummary(pods, spines, links, {}, {}))

    spine_top = picture["spines"][0].box.y
    above = [pod for pod in picture["pods"] if pod.box.y < spine_top]
    below = [pod for pod in picture["pods"] if pod.box.y > spine_top]
    assert [pod.name for pod in above] == ["p1", "p2"] and [pod.name for pod in below] == [
        "p3",
        "p4",
    ]
    boxes = sorted((pod.box.y, pod.box.y + pod.box.height) for pod in picture["pods"])
    assert all(bottom < next_top for (_, bottom), (next_top, _) in pairwise(boxes))
    assert max(bottom for _, bottom in boxes) <= picture["height"]
    assert len(picture["links"]) == 4 * 8 * 8
    assert [(link.leaf, link.spine, link.count) for link in picture["links"] if link.unusual] == [
        ("leaf-p1-r0", "spine-1", 3)
    ]


def test_validation_page_lists_a_broken_cable_by_rule_with_links(sakuraone, operator):
    clean = html_of(operator.get("/inventory/validation/"))
    assert "No violations" in clean and 'class="violation"' not in clean
    cable = Cable.objects.get(a_nic__node__hostname="gpu007", a_nic__device="mlx5_5")
    cable.status = CableStatus.DECOMMISSIONED
    cable.save()  # as the UI and the API write it: the cached report is computed anew
    html = html_of(operator.get("/inventory/validation/"))
    assert "1 violation" in html
    section = html.split('id="rule-dangling"')[1].split("</section>")[0]
    assert "gpu007 mlx5_5 (rail 4) is not cabled" in section
    assert 'href="/inventory/nodes/gpu007/"' in section
    assert 'href="/inventory/nodes/gpu007/#nic-mlx5_5"' in section
    assert 'dangling <span class="count">1</span>' in html
    only_bisection = html_of(operator.get("/inventory/validation/", {"rule": "bisection"}))
    assert "gpu007" not in only_bisection and "No violations of bisection" in only_bisection
    assert 'dangling <span class="count">1</span>' in only_bisection  # counts stay whole
    bad = operator.get("/inventory/validation/", {"rule": "nonsense"})
    assert bad.status_code == 400 and "Select a valid choice" in html_of(bad)


# -- GPU / NIC search --------------------------------------------------------------------------


def test_search_finds_a_gpu_by_uuid_and_a_nic_by_mac(sakuraone, operator):
    from inventory.models import GPU, NIC

    gpu = GPU.objects.get(node__hostname="gpu042", index=5)
    html = html_of(operator.get("/inventory/search/", {"q": gpu.uuid[4:20].upper()}))
    assert 'href="/inventory/nodes/gpu042/#gpu-5">gpu042 GPU5</a>' in html
    assert "0 nodes, 1 GPU, 0 NICs match" in html
    nic = NIC.objects.get(node__hostname="gpu077", device="mlx5_6")
    html = html_of(operator.get("/inventory/search/", {"q": nic.mac.upper().replace(":", "-")}))
    assert 'href="/inventory/nodes/gpu077/#nic-mlx5_6">gpu077 mlx5_6</a>' in html
    assert "rail 5" in html
    by_bus = html_of(operator.get("/inventory/search/", {"q": "0000:db:00.0"}, **HTMX))
    assert "<html" not in by_bus and by_bus.count("GPU7</a>") == 50  # the limit per kind
    assert "showing the first 50 of each kind" in by_bus
    short = operator.get("/inventory/search/", {"q": "g"})
    assert short.status_code == 400 and "at least two characters" in html_of(short)


def test_search_stays_inside_a_tenant_admins_nodes(sakuraone, browser_as, tenant_a):
    from inventory.models import GPU

    allocation = Allocation.objects.create(tenant=tenant_a, start=timezone.now())
    allocation.nodes.set(Node.objects.filter(hostname="gpu010"))
    tenant_admin = browser_as(Role.TENANT_ADMIN, tenant=tenant_a)
    other = GPU.objects.get(node__hostname="gpu011", index=0)
    assert "Nothing matches" in html_of(tenant_admin.get("/inventory/search/", {"q": other.uuid}))
    own = GPU.objects.get(node__hostname="gpu010", index=0)
    assert "gpu010 GPU0" in html_of(tenant_admin.get("/inventory/search/", {"q": own.uuid}))


# -- roles -------------------------------------------------------------------------------------


def test_tenant_admin_sees_only_their_allocations_nodes(sakuraone, browser_as, tenant_a, tenant_b):
    now = timezone.now()
    own = Allocation.objects.create(tenant=tenant_a, start=now)
    own.nodes.set(Node.objects.filter(hostname__in=["gpu010", "gpu011"]))
    theirs = Allocation.objects.create(tenant=tenant_b, start=now)
    theirs.nodes.set(Node.objects.filter(hostname="gpu012"))
    tenant_admin = browser_as(Role.TENANT_ADMIN, tenant=tenant_a)

    assert node_rows(html_of(tenant_admin.get("/inventory/"))) == ["gpu010", "gpu011"]
    own_page = tenant_admin.get("/inventory/nodes/gpu010/")
    assert own_page.status_code == 200
    # The fabric is not part of a tenant's slice: leaf names show, without links or traces.
    assert 'href="/inventory/switches/' not in html_of(own_page)
    assert "leaf-p1-r0" in html_of(own_page)
    assert tenant_admin.get("/inventory/nodes/gpu012/").status_code == 404
    assert tenant_admin.get("/inventory/nodes/gpu012/nics/mlx5_0/trace/").status_code == 403
    assert tenant_admin.get("/inventory/nodes/gpu099/").status_code == 404
    for path in ("/inventory/switches/", "/inventory/topology/", "/inventory/validation/"):
        assert tenant_admin.get(path).status_code == 403, path
    cables = html_of(tenant_admin.get("/inventory/cables/"))
    assert "<strong>20</strong> cables" in cables  # 10 cabled NICs on each of two nodes
    assert "gpu012" not in cables


def test_pages_need_a_login(sakuraone):
    response = Client().get("/inventory/nodes/gpu001/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


# -- panels other apps register ----------------------------------------------------------------


@pytest.fixture
def panel_templates(tmp_path, settings, monkeypatch):
    (tmp_path / "panels").mkdir()
    (tmp_path / "panels" / "node.html").write_text(
        '<section class="card" id="test-node-panel">Faults of {{ node.hostname }}</section>'
    )
    (tmp_path / "panels" / "switch.html").write_text(
        '<section class="card" id="test-switch-panel">Counters of {{ switch.hostname }}</section>'
    )
    settings.TEMPLATES = [
        {**settings.TEMPLATES[0], "DIRS": [*settings.TEMPLATES[0]["DIRS"], tmp_path]}
    ]
    monkeypatch.setattr(ui_panels, "_node_panels", [])
    monkeypatch.setattr(ui_panels, "_switch_panels", [])


def test_registered_panels_render_on_node_and_switch_pages(sakuraone, operator, panel_templates):
    assert 'id="test-node-panel"' not in html_of(operator.get("/inventory/nodes/gpu001/"))
    ui_panels.register_node_panel("panels/node.html")
    ui_panels.register_node_panel("panels/node.html")  # twice is once
    ui_panels.register_switch_panel("panels/switch.html")
    node_page = html_of(operator.get("/inventory/nodes/gpu001/"))
    assert node_page.count('id="test-node-panel"') == 1
    assert "Faults of gpu001" in node_page
    assert "Counters of spine-2" in html_of(operator.get("/inventory/switches/spine-2/"))


def test_switch_page_puts_its_actions_before_the_114_port_rows(sakuraone, operator):
    """Issue 26: the inventory switch page was 4,500 px tall with its actions below the ports."""
    html = html_of(operator.get("/inventory/switches/leaf-p1-r3/"))
    assert html.index('id="switch-actions-title"') < html.index('id="ports-heading"')
