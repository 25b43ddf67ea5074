"""The incident loop as an on-call operator walks it in headless Chromium, against
a real server and a real Celery worker (the Slurm simulator and the emulated SONiC fabric behind
them): maintenance of leaf-p1-r3 - the jobs and tenants it hits, drain their nodes, shut a port,
the ticket appears with the impact, the port comes back, the ticket proposes the resume, resume,
the ticket is verified; and a GPU serial typed into the jump box lands on its node.

Each step leaves test-artifacts/story-NN-<step>.png. The worker runs every Action (one prefork
child, so one emulated fabric takes the shut and the start) and the node-state syncs the drain
and resume queue; the web process only serves.
"""

from __future__ import annotations

import os
import re

import pytest

from tests.conftest import ARTIFACTS, CeleryWorkerProcess, PortalServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]
PASSWORD = "correct-horse-battery"  # the make_user fixture's password
LEAF = "leaf-p1-r3"
# Both processes talk to the emulated fabric, and the simulated cluster stays quiet: the only
# jobs are the story's (a new arrival would change the counts the story reads).
STORY_ENV = {"FABRIC_DRIVER": "fabric.drivers.emulated.EmulatedDriver",
             "SLURM_DRIVER": "jobs.drivers.simulator.SimulatorDriver",
             "SLURM_SIMULATOR_MEAN_ARRIVAL_SECONDS": str(10**9)}


@pytest.fixture(scope="module")
def story_server(django_db_setup):
    from django.conf import settings

    if not os.environ.get("REDIS_URL"):
        pytest.fail("the story needs REDIS_URL (a real worker runs its Actions): run `make test`")
    from portal.celery import app

    app.control.purge()
    saved = {name: os.environ.get(name) for name in STORY_ENV}
    os.environ.update(STORY_ENV)
    name = settings.DATABASES["default"]["NAME"]
    worker = CeleryWorkerProcess(name, extra_env=STORY_ENV)
    server = PortalServerProcess(name)
    try:
        worker.start()
        server.start()
        yield server
    finally:
        server.stop()
        worker.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def story_world(tenant_a, tenant_b, make_user, settings):
    """The fleet (4 nodes a pod, every switch) polled once, two tenants' jobs behind leaf-p1-r3
    in a quiet simulated cluster, and the jobs synced into the portal, as the beat would."""
    from fabric.drivers.emulated import build_emulated_fabric, reset_emulated_fabric
    from fabric.polling import poll_fabric
    from inventory.models import GPU
    from jobs.drivers.simulator import SimulatorDriver
    from jobs.sync import sync_live_jobs, sync_node_states
    from portal.models import Role
    from tests.fabric.monitoring_support import import_fleet

    import_fleet(4)
    # The portal has seen the ports up (a port shut is a change only against a seen state); this
    # process's emulated fabric boots as the worker's will, every port up.
    settings.FABRIC_DRIVER = STORY_ENV["FABRIC_DRIVER"]
    build_emulated_fabric()
    try:
        poll_fabric()
    finally:
        reset_emulated_fabric()
    slurm = SimulatorDriver(history_hours=0, mean_failure_seconds=0, mean_arrival_seconds=10**9)
    slurm.ping()
    slurm.submit_job(nodes=["gpu001", "gpu002"], seconds=86400, name="llm-pretrain",
                     account="tenant-a", user="alice")
    slurm.submit_job(nodes=["gpu003"], seconds=86400, name="vision-ft", account="tenant-b",
                     user="bob")
    sync_live_jobs(driver=slurm)
    sync_node_states(driver=slurm)
    serial = GPU.objects.filter(node__hostname="gpu002", index=5).values_list(
        "serial", flat=True).get()
    return {"operator": make_user(Role.OPERATOR), "serial": serial}


def shot(page, number: int, step: str, *, full_page: bool = True) -> None:
    """A long page (a leaf's 64 port rows) is shot as the viewport the operator sees."""
    if full_page:
        page.evaluate("() => window.scrollTo(0, 0)")  # else the sticky header lands mid-shot
    page.screenshot(path=str(ARTIFACTS / f"story-{number:02d}-{step}.png"), full_page=full_page)


def assert_second_look_layout(page) -> None:
    """What the second look at the pages fixed, on every page of the story: the whole nav shows
    at 1366 px (it cut "Tenants" off), and an impact card's tenants line sits below its jobs
    table (the table's negative margin pulled it over the last row)."""
    nav_fits = page.evaluate("""() => { const nav = document.querySelector('.mainnav');
        return nav.scrollWidth <= nav.clientWidth + 1; }""")
    assert nav_fits, "the main navigation is cut off"
    overlaps = page.evaluate("""() => [...document.querySelectorAll('.impact-card')].some(card => {
        const table = card.querySelector('table'), after = table && table.nextElementSibling;
        return after && after.getBoundingClientRect().top < table.getBoundingClientRect().bottom;
      })""")
    assert not overlaps, "an impact card's text overlaps its table"


def wait_for_action(page, url: str, status: str = "succeeded") -> None:
    """The Action page until the worker has carried it out (reloaded: the story is not about
    the live updates, which tests/console/test_browser.py covers)."""
    for _ in range(60):
        state = page.inner_text("[data-field=status]").strip() if page.query_selector(
            "[data-field=status]") else page.inner_text("main")
        if status in state:
            # The status may have arrived live; the attempts card is drawn by the server.
            page.goto(url)
            return
        page.wait_for_timeout(250)
        page.goto(url)
    pytest.fail(f"{url} never became {status}: {page.inner_text('main')[:500]}")


def rail3_port_of(hostname: str) -> str:
    from inventory.models import Cable

    cable = Cable.objects.filter(a_port__switch__hostname=LEAF,
                                 b_nic__node__hostname=hostname).first()
    if cable is not None:
        return cable.a_port.name
    return Cable.objects.get(b_port__switch__hostname=LEAF,
                             a_nic__node__hostname=hostname).b_port.name


def test_leaf_maintenance_story_from_impact_to_verified_ticket(story_server, story_world,
                                                              browser_page):
    from faults.models import FaultTicket
    from inventory.models import Node

    page, url = browser_page, story_server.url
    page.goto(f"{url}/login/")
    page.fill("#id_username", story_world["operator"].username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/")

    # 1. The leaf's page: who it hits if it goes out of service.
    page.goto(f"{url}/fabric/switches/{LEAF}/")
    impact = page.inner_text(".impact-card")
    assert "2 running jobs" in impact and "alice" in impact and "bob" in impact
    assert "Tenant A" in impact and "Tenant B" in impact
    assert "tenant-a tenant-a" not in impact  # the account links its tenant, not twice
    # Who it hits comes before the 64 port rows, not below them.
    above = page.evaluate("""() => document.querySelector('.impact-card').getBoundingClientRect()
        .top < document.querySelector('#port-table').getBoundingClientRect().top""")
    assert above
    assert_second_look_layout(page)
    page.locator(".impact-card").scroll_into_view_if_needed()
    shot(page, 1, "leaf-impact", full_page=False)

    # 2. The leaf maintenance confirmation shows the same people.
    page.click("text=Leaf maintenance")
    page.wait_for_selector(".impact-card")
    assert "alice" in page.inner_text(".impact-card")
    assert_second_look_layout(page)
    shot(page, 2, "maintenance-confirm")

    # 3. Drain the nodes it hits, from there.
    page.click(".impact-card >> text=Drain these nodes")
    assert page.input_value("#bulk-drain-hostlist") == "gpu[001-004]"
    page.fill("#bulk-drain-reason", f"{LEAF} maintenance")
    page.check("input[name=confirm]")
    shot(page, 3, "drain-confirm")
    page.click("button:has-text('Drain nodes')")
    page.wait_for_url(f"{url}/actions/*/")
    wait_for_action(page, page.url)
    # The attempt's times read like the rest: 24-hour with the zone, no microseconds.
    assert re.search(r"\d\d:\d\d:\d\d UTC", page.inner_text("#action-attempts-card tbody"))
    shot(page, 4, "drain-done")

    # 4. Shut gpu002's rail-3 port from the leaf's port row.
    port = rail3_port_of("gpu002")
    page.goto(f"{url}/fabric/switches/{LEAF}/")
    page.click(f"#port-{port} >> text=Shut…")
    assert page.is_checked(f"#port-{port}")
    assert "alice" in page.inner_text(".impact-card")
    page.fill("#reason", "optic swap on gpu002 rail 3")
    assert_second_look_layout(page)
    # The picker scrolls with the checked port on top: Confirm is no longer 64 rows down.
    assert page.get_attribute(".port-picker tbody tr:first-child input", "value") == port
    assert page.evaluate("() => document.querySelector('#confirm-form').offsetHeight") < 700
    shot(page, 5, "port-shut-confirm")
    page.click("#confirm-form button.btn-primary")
    page.wait_for_url(f"{url}/actions/*/")
    wait_for_action(page, page.url)
    shot(page, 6, "port-shut-done")

    # 5. The ticket it opened, linked from the Action's page, with the impact at detection.
    ticket = FaultTicket.objects.get(port__name=port, port__switch__hostname=LEAF)
    page.click(f"[data-field=fault-tickets] >> text={ticket.reference}")
    page.wait_for_url(f"{url}/faults/{ticket.pk}/")
    body = page.inner_text("main")
    assert "alice" in body and "Tenant A" in body
    captured = page.inner_text("[data-field=captured-at]")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", captured.strip()), captured
    # While the port is shut, starting it is the primary step, not resuming the node behind it.
    assert page.get_attribute("#ticket-recovery .btn-primary", "data-step") == "start_port"
    assert_second_look_layout(page)
    shot(page, 7, "ticket-open")

    # 6. The port comes back: Start… on the same row.
    page.goto(f"{url}/fabric/switches/{LEAF}/")
    page.click(f"#port-{port} >> text=Start…")
    page.fill("#reason", "optic swapped")
    page.click("#confirm-form button.btn-primary")
    page.wait_for_url(f"{url}/actions/*/")
    wait_for_action(page, page.url)

    # 7. The ticket proposes the resume, offered in one click. The ticket hears of the link
    # coming up from the signal, which under load landed a moment after the Action page said
    # succeeded (seen once at load 7): reload until it says so.
    for _ in range(40):
        page.goto(f"{url}/faults/{ticket.pk}/")
        body = page.inner_text("main")
        if "Signal cleared" in body:
            break
        page.wait_for_timeout(250)
    assert "Signal cleared" in body and "Resume the node in Slurm (gpu002)" in body
    shot(page, 8, "ticket-proposes-resume")
    assert page.get_attribute("#ticket-recovery .btn-primary", "data-step") == "resume"
    page.click("#ticket-recovery button[data-step=resume]")
    page.wait_for_load_state()
    flashes = page.inner_text("main")
    assert "queued: slurm.resume gpu002" in flashes and "recovery done" not in flashes
    shot(page, 9, "resume-queued")
    resume = ticket.actions.get(kind="slurm.resume")
    page.goto(f"{url}/actions/{resume.pk}/")
    wait_for_action(page, page.url)
    for _ in range(60):
        if Node.objects.get(hostname="gpu002").slurm_state not in {"drained", "draining"}:
            break
        page.wait_for_timeout(250)
    else:
        pytest.fail("gpu002 still drained after the resume")

    # 8. Verify: triaged, resolved, verified from the ticket page.
    page.goto(f"{url}/faults/{ticket.pk}/")
    for status in ("triaged", "resolved", "verified"):
        page.select_option("#to_status", status)
        if status == "resolved":
            page.select_option("#recovery_method", "configuration_fixed")
        page.click("form.fault-form button:has-text('Move')")
        page.wait_for_load_state()
    ticket.refresh_from_db()
    assert ticket.status == "verified"
    # Verified, "Impact now" is gone; the impact at detection still names the tenant.
    assert "Tenant A" in page.inner_text("#ticket-impact")
    shot(page, 10, "ticket-verified")

    # 9. A GPU serial in the jump box lands on its node.
    page.keyboard.press("/")
    page.keyboard.type(story_world["serial"])
    page.keyboard.press("Enter")
    page.wait_for_url(f"{url}/inventory/nodes/gpu002/#gpu-5")
    # The GPU's row is in sight, not under the sticky top bar and table head.
    row_top = page.evaluate("() => document.getElementById('gpu-5').getBoundingClientRect().top")
    bar_bottom = page.evaluate(
        "() => document.querySelector('.topbar').getBoundingClientRect().bottom")
    assert row_top >= bar_bottom, (row_top, bar_bottom)
    shot(page, 11, "serial-lands-on-node", full_page=False)
