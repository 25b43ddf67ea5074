"""The top bar at every common desktop width: no link hidden, clipped or under the jump box.

At 1440-1520 px an admin's "Audit" scrolled out of the nav under the jump box beside the demo
banners (issue 26): the nav shrank and scrolled instead of taking a row of its own.
"""

from __future__ import annotations

import pytest

from portal.deployment import EMULATED_FABRIC_DRIVER, SIMULATOR_SLURM_DRIVER
from portal.models import Role
from tests.conftest import ARTIFACTS
from tests.support import sign_in_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every link of the nav and of the right-hand side: inside the window, not scrolled out of its
# box, not overlapping the jump box.
HIDDEN_HEADER_ITEMS = """() => {
  const box = element => element.getBoundingClientRect();
  const overlaps = (a, b) => !(a.right <= b.left || a.left >= b.right || a.bottom <= b.top
                               || a.top >= b.bottom);
  const jumpbox = box(document.querySelector('.jumpbox'));
  const nav = box(document.querySelector('.mainnav'));
  const problems = [];
  for (const item of document.querySelectorAll('.mainnav li > *, .topbar-right > *')) {
    const where = box(item);
    const name = item.textContent.trim().split(/\\s+/)[0] || item.className;
    if (where.left < 0 || where.right > window.innerWidth) problems.push(`${name}: off screen`);
    if (item.closest('.mainnav')) {
      if (where.left < nav.left - 1 || where.right > nav.right + 1) {
        problems.push(`${name}: scrolled out of the nav`);
      }
      if (overlaps(where, jumpbox)) problems.push(`${name}: under the jump box`);
    }
    if (item.scrollWidth > item.clientWidth + 1) problems.push(`${name}: clipped`);
  }
  return problems;
}"""


@pytest.mark.parametrize("role", [Role.ADMIN, Role.TENANT_ADMIN])
def test_every_header_link_is_visible_from_1280_to_1920_px(
    live_server, browser_page, make_user, role, tenant_a, settings
):
    # As in the demo: its banners take the top bar's room.
    settings.SLURM_DRIVER = SIMULATOR_SLURM_DRIVER
    settings.FABRIC_DRIVER = EMULATED_FABRIC_DRIVER
    page = browser_page
    tenant = tenant_a if role == Role.TENANT_ADMIN else None
    sign_in_page(page, live_server.url, make_user(role, tenant=tenant))
    page.goto(f"{live_server.url}/")
    assert page.locator(".demo-banner-part").count() == 2
    links = page.locator(".mainnav a").all_inner_texts()
    assert "Audit" in links or role == Role.TENANT_ADMIN
    problems = {}
    for width in range(1280, 1921, 40):
        page.set_viewport_size({"width": width, "height": 900})
        found = page.evaluate(HIDDEN_HEADER_ITEMS)
        if found:
            problems[width] = found
        if width in (1280, 1440, 1920):
            page.screenshot(path=str(ARTIFACTS / f"header-{role}-{width}.png"))
    assert problems == {}


def test_the_jump_box_suggests_as_you_type_and_opens_the_chosen_one(
    live_server, browser_page, make_user
):
    from inventory.models import LifecycleStatus, Node, Pod

    pod = Pod.objects.create(name="p1")
    for number in (11, 12, 110):
        Node.objects.create(hostname=f"gpu{number:03d}", serial=f"S{number}", pod=pod,
                            status=LifecycleStatus.ACTIVE)
    page = browser_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    sign_in_page(page, live_server.url, make_user(Role.OPERATOR))
    page.goto(f"{live_server.url}/")
    page.keyboard.press("/")
    page.keyboard.type("gpu11")
    page.wait_for_selector("#jumpbox-suggestions [role=option]", timeout=10_000)
    labels = page.locator("#jumpbox-suggestions .suggestion-label").all_inner_texts()
    assert labels == ["gpu110", "gpu011"]  # the fragment, then the name without its padding
    assert page.get_attribute("#jumpbox", "aria-expanded") == "true"
    page.screenshot(path=str(ARTIFACTS / "jumpbox-suggestions.png"))
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/inventory/nodes/gpu011/")
    page.keyboard.press("/")
    page.keyboard.type("nothing-like-this")
    page.wait_for_selector("#jumpbox-suggestions .suggestion-none", timeout=10_000)
    page.keyboard.press("Escape")
    assert page.locator("#jumpbox-suggestions").is_hidden()
    assert errors == []
