"""The pages in headless Chromium against the real server, where only a browser proves it: the jump
box's "/" shortcut, the switch page's one-step port shut, and a stale "queued" event that must not
undo a "succeeded" row on the dashboard. Screenshots go to test-artifacts/."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.conftest import ARTIFACTS, PortalServerProcess

# Like tests/inventory/test_ui_browser.py: the server is another process and sees only committed
# rows, so the module fixture commits a small world and removes it afterwards.
pytestmark = [pytest.mark.browser, pytest.mark.django_db]
PASSWORD = "correct-horse-battery"
USERNAME = "crosslinks-browser"


@pytest.fixture(scope="module")
def crosslinks_server(django_db_setup, django_db_blocker):
    from inventory.models import GPU, NIC, Cable, Node, Pod, Switch, SwitchPort
    from portal.models import Action, AuditEntry, Role, User
    from portal.services.accounts import user_create

    with django_db_blocker.unblock():
        audit_mark = AuditEntry.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        action_mark = Action.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        user_create(username=USERNAME, role=Role.OPERATOR, password=PASSWORD)
        pod = Pod.objects.create(name="xl-pod")
        node = Node.objects.create(hostname="xl001", pod=pod, status="active")
        GPU.objects.create(node=node, index=0, uuid="GPU-xl-0000-0001", serial="XLSERIAL01")
        leaf = Switch.objects.create(hostname="xl-leaf", role="leaf", pod=pod, rail=0,
                                     management_address="10.254.99.1",
                                     credentials_ref="sonic/leaf", status="active")
        port = SwitchPort.objects.create(switch=leaf, name="Ethernet0", index=0, speed_gbps=400)
        SwitchPort.objects.create(switch=leaf, name="Ethernet8", index=8, speed_gbps=400)
        nic = NIC.objects.create(node=node, device="mlx5_0", role="rail", rail=0)
        Cable.objects.create(a_nic=nic, b_port=port, type=Cable.Type.BREAKOUT_2DR4_800G,
                             status="connected")
        server = PortalServerProcess(connection.settings_dict["NAME"])
    server.start()
    yield server
    server.stop()
    with django_db_blocker.unblock():
        Action.objects.filter(pk__gt=action_mark).delete()
        AuditEntry.objects.filter(pk__gt=audit_mark).delete()
        Cable.objects.filter(a_nic=nic).delete()
        Switch.objects.filter(pk=leaf.pk).delete()
        Node.objects.filter(pk=node.pk).delete()
        Pod.objects.filter(pk=pod.pk).delete()
        User.objects.filter(username=USERNAME).delete()


def test_jump_box_switch_actions_and_live_rows_in_a_browser(crosslinks_server, browser_page):
    page, url = browser_page, crosslinks_server.url
    page.goto(f"{url}/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/")

    # "/" from anywhere focuses the jump box; a GPU serial lands on its node.
    page.keyboard.press("/")
    assert page.evaluate("() => document.activeElement.id") == "jumpbox"
    page.keyboard.type("XLSERIAL01")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{url}/inventory/nodes/xl001/#gpu-0")
    page.screenshot(path=str(ARTIFACTS / "crosslinks-jump-to-gpu.png"))
    # Typed into a field, "/" is just a character.
    page.goto(f"{url}/search/?q=xl&list=1")
    page.fill("#search-q", "")
    page.focus("#search-q")
    page.keyboard.type("a/b")
    assert page.input_value("#search-q") == "a/b"

    # The fabric page's port row: Shut… opens the confirmation with the port checked; one
    # Confirm queues it (before: 400 "Name at least one port").
    page.goto(f"{url}/fabric/switches/xl-leaf/")
    page.click("#port-Ethernet0 >> text=Shut…")
    assert page.is_checked("#port-Ethernet0")
    page.fill("#reason", "optic swap")
    page.screenshot(path=str(ARTIFACTS / "crosslinks-port-shut-confirm.png"), full_page=True)
    page.click("#confirm-form button.btn-primary")
    page.wait_for_url(f"{url}/actions/*/")
    assert "xl-leaf Ethernet0" in page.inner_text("main")
    action_id = int(page.url.rstrip("/").rsplit("/", 1)[1])

    # The dashboard: "succeeded" arrives, then the web process's late "queued" for the same
    # Action; the row keeps "succeeded", as the toast said.
    page.goto(f"{url}/")
    page.wait_for_selector(f"#action-row-{action_id}")

    def deliver(status, attempts):
        page.evaluate(
            """([id, status, attempts]) => document.dispatchEvent(new CustomEvent(
                 "live:action.updated", {detail: {group: "actions", event: "action.updated",
                 payload: {id, status, attempts, kind: "fabric.port_admin"}}}))""",
            [action_id, status, attempts])

    deliver("succeeded", 1)
    deliver("queued", 0)
    row_status = page.inner_text(f"#action-row-{action_id} [data-field=status]").strip()
    assert row_status == "succeeded"
    page.screenshot(path=str(ARTIFACTS / "crosslinks-dashboard-recent-actions.png"))
