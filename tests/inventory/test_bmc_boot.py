"""A one-time boot override (PXE, BIOS setup) as a durable Action from the API and the node page,
for roles that may power nodes; the Action reports what the BMC read back, including
sushy-emulator's "Continuous" where "Once" was asked."""

from __future__ import annotations

import pytest

from inventory.bmc.boot import BOOT_OVERRIDE_ACTION
from inventory.bmc.drivers.base import get_bmc_driver, reset_bmc_driver
from inventory.bmc.targets import bmc_target
from inventory.models import Node
from portal.models import Action, ActionStatus, Role
from portal.services.actions import run_action
from tests.inventory.bmc_fixtures import emulated_node
from tests.inventory.conftest import delete_inventory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def without_the_sakuraone_import(db):
    """These tests make their own nodes under SAKURAONE's host names (the emulated BMCs are named
    so): the package's committed import is emptied inside each test's transaction."""
    delete_inventory()


@pytest.fixture
def simulated_bmcs(settings, tmp_path):
    settings.BMC_DRIVER = "inventory.bmc.drivers.simulated.SimulatedDriver"
    settings.BMC_SIMULATOR_STATE_FILE = str(tmp_path / "bmc.json")
    reset_bmc_driver()
    yield settings
    reset_bmc_driver()


@pytest.fixture
def node(db):
    return Node.objects.create(hostname="gpu050", bmc_address="10.10.0.50")


def boot_url(node) -> str:
    return f"/api/inventory/nodes/{node.pk}/boot-override/"


def test_pxe_once_is_an_action_that_reports_what_the_bmc_read_back(
    operator_api, node, simulated_bmcs
):
    response = operator_api.post(
        boot_url(node), {"target": "Pxe", "reason": "reinstall"}, format="json"
    )
    assert response.status_code == 202, response.content
    action = Action.objects.get(pk=response.json()["id"])
    assert (action.kind, action.parameters["target"]) == (BOOT_OVERRIDE_ACTION, "Pxe")
    run_action(action_id=action.pk)
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    assert action.result["read_back"] == {"target": "Pxe", "enabled": "Once"}
    assert action.result["as_requested"] is True
    override = get_bmc_driver().boot_override(bmc_target(node))
    assert (override.target, override.enabled) == ("Pxe", "Once")


def test_sushy_emulators_continuous_is_reported_not_hidden(
    operator_api, client, make_user, redfish_settings, sushy_emulator
):
    client.force_login(make_user(Role.VIEWER))
    node = emulated_node(sushy_emulator, "gpu010")  # a system no other test uses
    response = operator_api.post(
        boot_url(node), {"target": "Pxe", "reason": "reinstall"}, format="json"
    )
    assert response.status_code == 202, response.content
    run_action(action_id=response.json()["id"])
    action = Action.objects.get(pk=response.json()["id"])
    assert action.status == ActionStatus.SUCCEEDED, action.last_error
    assert action.result["read_back"] == {"target": "Pxe", "enabled": "Continuous"}
    assert action.result["as_requested"] is False
    assert "'Continuous', not 'Once'" in action.result["note"]
    # The node page's BMC section keeps showing it, so nobody forgets to clear it.
    fragment = client.get(f"/inventory/nodes/{node.hostname}/bmc/").content.decode()
    assert "Pxe (Continuous) <strong class=\"warn\">at every boot until cleared" in fragment
    # What the BMC does not offer fails in its own terms, naming what it does offer.
    refused = operator_api.post(
        boot_url(node), {"target": "BiosSetup", "reason": "check BIOS"}, format="json"
    )
    run_action(action_id=refused.json()["id"])
    action = Action.objects.get(pk=refused.json()["id"])
    assert action.status == ActionStatus.FAILED
    assert "does not offer boot from BiosSetup (it offers Pxe" in action.last_error


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"target": "Floppy", "reason": "x"}, "target"),
        ({"target": "Pxe"}, "reason"),
        ({"target": "Pxe", "reason": "   "}, "reason"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(operator_api, node, body, field):
    response = operator_api.post(boot_url(node), body, format="json")
    assert response.status_code == 400 and field in response.json()
    assert not Action.objects.exists()


def test_a_node_without_a_bmc_is_a_409(operator_api, db):
    bare = Node.objects.create(hostname="gpu051")
    response = operator_api.post(boot_url(bare), {"target": "Pxe", "reason": "x"}, format="json")
    assert response.status_code == 409 and "no BMC address" in response.json()["node"][0]


@pytest.mark.parametrize("role", [Role.VIEWER, Role.TENANT_ADMIN, Role.ONCALL])
def test_who_may_not_power_cannot_override_the_boot(api_as, client, make_user, node, role):
    body = {"target": "Pxe", "reason": "x"}
    assert api_as(role).post(boot_url(node), body, format="json").status_code == 403
    client.force_login(make_user(role))
    page = client.get(f"/inventory/nodes/{node.hostname}/")
    assert 'id="boot-override-form"' not in page.content.decode()
    response = client.post(f"/inventory/nodes/{node.hostname}/boot-override/", body)
    assert response.status_code in (403, 404)
    assert not Action.objects.exists()


def test_the_node_page_form_queues_the_action(client, make_user, node, simulated_bmcs):
    client.force_login(make_user(Role.OPERATOR))
    page = client.get(f"/inventory/nodes/{node.hostname}/").content.decode()
    assert 'id="boot-override-form"' in page and 'value="BiosSetup"' in page
    response = client.post(f"/inventory/nodes/{node.hostname}/boot-override/",
                           {"target": "BiosSetup", "reason": "firmware check"})
    action = Action.objects.get(kind=BOOT_OVERRIDE_ACTION)
    assert response.status_code == 302 and response["Location"] == f"/actions/{action.pk}/"
    assert action.parameters["target"] == "BiosSetup"
    refused = client.post(f"/inventory/nodes/{node.hostname}/boot-override/",
                          {"target": "Floppy", "reason": "x"})
    assert refused.status_code == 302 and refused["Location"].endswith("#bmc")
    assert Action.objects.count() == 1
