"""The Redfish driver and the power policy against REAL sushy-emulator (scripts/bmc-up):
what it really does (a power change lands 1-11 s later, PowerCycle is not offered, Nmi answers
501, boot "Once" reads back "Continuous", no event log or firmware inventory) and how the driver
copes with each."""

from __future__ import annotations

import pytest

from inventory.bmc.drivers.base import (
    BmcNotSupported,
    BmcRefused,
    BmcTarget,
    get_bmc_driver,
)
from inventory.bmc.power import PowerActionFailed, carry_out
from inventory.bmc.targets import bmc_target
from tests.inventory.bmc_fixtures import emulated_node
from tests.inventory.conftest import delete_inventory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def without_the_sakuraone_import(db):
    """These tests make their own nodes under SAKURAONE's host names (the emulated BMCs are named
    so): the package's committed import is emptied inside each test's transaction, and is whole
    again for the next test."""
    delete_inventory()


def _set_power(node, state: str) -> None:
    carry_out(node, "on" if state == "On" else "force_off")
    assert get_bmc_driver().power_state(bmc_target(node)) == state


def test_reads_what_the_emulator_offers(redfish_settings, sushy_emulator):
    node = emulated_node(sushy_emulator, "gpu001")
    driver, target = get_bmc_driver(), bmc_target(node)
    assert driver.power_state(target) in {"On", "Off"}
    allowed = driver.allowed_reset_types(target)
    assert {"On", "ForceOff", "GracefulShutdown", "ForceRestart"} <= allowed
    assert "PowerCycle" not in allowed
    health = driver.health(target)
    assert health.health == "OK" and health.state == "Enabled"
    assert any(sensor.kind == "Temperature" for sensor in driver.sensors(target))
    # sushy-emulator has no LogServices and no FirmwareInventory: said, not faked.
    with pytest.raises(BmcNotSupported, match="LogServices"):
        driver.event_log(target)
    with pytest.raises(BmcNotSupported, match="404"):
        driver.firmware(target)
    with pytest.raises(BmcNotSupported, match="PowerCycle"):
        driver.reset(target, "PowerCycle")


def test_nmi_is_refused_in_the_bmcs_own_words(redfish_settings, sushy_emulator):
    node = emulated_node(sushy_emulator, "gpu002")
    with pytest.raises(BmcRefused, match=r"501.*Nmi is not supported") as refused:
        get_bmc_driver().reset(bmc_target(node), "Nmi")
    assert refused.value.status_code == 501


def test_boot_once_is_reported_as_the_bmc_reads_it_back(redfish_settings, sushy_emulator):
    node = emulated_node(sushy_emulator, "gpu003")
    driver, target = get_bmc_driver(), bmc_target(node)
    driver.set_boot_override(target, "Pxe", once=True)
    override = driver.boot_override(target)
    assert override.target == "Pxe"
    # The emulator keeps "Continuous" where "Once" was asked; the driver does not pretend.
    assert override.enabled == "Continuous"
    with pytest.raises(BmcNotSupported, match="boot source"):
        driver.set_boot_override(target, "Floppy-ish")


def test_power_off_lands_and_off_again_succeeds_without_asking(redfish_settings, sushy_emulator):
    node = emulated_node(sushy_emulator, "gpu004")
    _set_power(node, "On")
    result = carry_out(node, "force_off")
    assert result["power_state"] == "Off"
    assert result["reset_types"] == ["ForceOff"]
    again = carry_out(node, "force_off")
    assert again["already"] is True and again["reset_types"] == []
    graceful = carry_out(node, "graceful_off")
    assert graceful["already"] is True


def test_power_cycle_without_powercycle_restarts_an_on_node_and_turns_on_an_off_one(
    redfish_settings, sushy_emulator
):
    node = emulated_node(sushy_emulator, "gpu005")
    _set_power(node, "On")
    cycled = carry_out(node, "power_cycle")
    assert cycled["reset_types"] == ["ForceRestart"] and cycled["power_state"] == "On"
    _set_power(node, "Off")
    from_off = carry_out(node, "power_cycle")
    assert from_off["reset_types"] == ["On"] and from_off["power_state"] == "On"


def test_an_action_fails_when_the_bmc_does_not_reach_the_state_in_time(
    redfish_settings, sushy_emulator
):
    node = emulated_node(sushy_emulator, "gpu006")
    _set_power(node, "On")
    # The emulator lands a change at least 1 s later: a 0.3 s deadline must fail, saying so.
    redfish_settings.BMC_POWER_DEADLINE_SECONDS = 0.3
    expected = r"still reports On .* after ForceOff; expected Off"
    with pytest.raises(PowerActionFailed, match=expected):
        carry_out(node, "force_off")


def test_bmc_reset_fails_with_what_the_bmc_lacks(redfish_settings, sushy_emulator):
    node = emulated_node(sushy_emulator, "gpu007")
    with pytest.raises(PowerActionFailed, match=r"does not offer Manager\.Reset"):
        carry_out(node, "bmc_reset")


def test_a_wrong_password_is_refused_and_never_quoted(redfish_settings, sushy_emulator, tmp_path):
    store = tmp_path / "bmc.json"
    store.write_text('{"lab": {"username": "portal", "password": "s3cret-never-shown"}}')
    redfish_settings.BMC_CREDENTIALS_FILE = str(store)
    target = BmcTarget("gpu008", sushy_emulator["url"], sushy_emulator["systems"]["gpu008"], "lab")
    with pytest.raises(BmcRefused) as refused:
        get_bmc_driver().power_state(target)
    assert "'lab'" in str(refused.value) and "s3cret" not in str(refused.value)


def test_no_secret_reaches_a_response_the_action_the_audit_or_the_log(
    redfish_settings, sushy_emulator, operator_api, tmp_path, caplog
):
    from portal.models import Action, ActionStatus, AuditEntry
    from portal.services.actions import run_action

    node = emulated_node(sushy_emulator, "gpu009")
    store = tmp_path / "bmc.yaml"
    store.write_text("emulator: {username: portal, password: hunter2-not-the-bmcs}\n")
    redfish_settings.BMC_CREDENTIALS_FILE = str(store)
    caplog.set_level("DEBUG")
    response = operator_api.post(
        f"/api/inventory/nodes/{node.pk}/power/", {"operation": "on", "reason": "x"},
        format="json",
    )
    run_action(action_id=response.json()["id"])
    action = Action.objects.get(pk=response.json()["id"])
    assert action.status == ActionStatus.FAILED
    assert "refused the login 'emulator' (401)" in action.last_error
    seen = [
        response.content.decode(),
        str(list(Action.objects.values())),
        str(list(AuditEntry.objects.values())),
        operator_api.get(f"/api/inventory/nodes/{node.pk}/").content.decode(),
        operator_api.get(f"/api/inventory/nodes/{node.pk}/power/").content.decode(),
        caplog.text,
    ]
    assert not any("hunter2" in text for text in seen)
