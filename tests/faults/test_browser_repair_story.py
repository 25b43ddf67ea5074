"""Issue 25 item 6: the repair story in real headless Chromium, against the real slurmctld 22.05
of the tests, a real worker and the real server.

A GPU whose ECC errors keep coming back: two earlier tickets on its serial are in the history
(seeded, closed), and a new ECC event with a double-bit error is posted to the intake as the
telemetry would. The policy drains the node, flags the repeat offender and proposes a vendor
case. Then, only by clicking and typing in the pages: a vendor case opened from the ticket, a
spare GPU reserved from the shelf, the part waited for and received, installed with its new
serial and UUID (the node page shows them, the old serial's page tells where it went), the node
validated by a job in a maintenance reservation and so back in service, the case closed, the
ticket resolved as "part replaced", and the statistics page showing the case's lead time.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from faults.models import Category, FaultTicket, RecoveryMethod, RepairCase
from faults.repair_workflow import RepairStatus
from faults.workflow import Status
from inventory.models import GPU, ComponentSwap, Node, ReservationStatus, SpareReservation
from inventory.spares import spare_stock_set
from jobs.validation_run import VALIDATE_ACTION, validation_reservation_name
from portal.models import Action, Role
from portal.services.accounts import api_token_create
from tests.conftest import ARTIFACTS, PortalServerProcess
from tests.jobs.slurm_fixtures import sinfo_state_and_reason
from tests.support import sign_in_page, wait_for

pytest_plugins = ["tests.jobs.slurm_fixtures"]  # real_slurm
pytestmark = [pytest.mark.slurm, pytest.mark.worker, pytest.mark.browser,
              pytest.mark.django_db(transaction=True)]

NODE = "gpu081"  # one of this story's own nodes in the shared test cluster
GPU_INDEX = 5
OLD_SERIAL, OLD_UUID = "1654322081005", "GPU-00810005-0000-0000-0000-000000000000"
NEW_SERIAL, NEW_UUID = "1654325990417", "GPU-5e1f0c2a-77b4-4d0e-9a31-0c9d2e6f4b18"
SITE = "Tokyo DC1"
VENDOR, VENDOR_CASE = "Supermicro", "SM-2026-004711"
GPU_CHECK = Path(__file__).resolve().parents[2] / "scripts" / "validation" / "gpu-check"
WIDTHS = (1280, 1920)


@pytest.fixture
def cluster(real_slurm):
    real_slurm.cancel_jobs(real_slurm.run("squeue", "-h", "-w", NODE, "-o", "%i").stdout.split())
    real_slurm.restore_nodes([NODE])
    yield real_slurm
    for ticket in FaultTicket.objects.all():  # a validation cut short leaves its reservation
        real_slurm.run("scontrol", "delete",
                       f"ReservationName={validation_reservation_name(ticket.reference)}",
                       check=False)
    real_slurm.restore_nodes([NODE])


@pytest.fixture
def server(celery_worker_process, cluster, tmp_path, settings):
    """The worker and the server drive the real Slurm through its CLI; the test process syncs
    node states as the beat would, through the same Slurm."""
    from jobs.drivers.base import reset_slurm_driver

    environment = {
        "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver",
        "SLURM_CONF": cluster.conf,
        "SLURM_COMMAND_TIMEOUT": "30",
        "FAULTS_VALIDATION_COMMAND": str(GPU_CHECK),
        "FAULTS_VALIDATION_MINUTES": "5",
        "FAULTS_VALIDATION_OUTPUT_DIR": str(tmp_path),
    }
    settings.SLURM_DRIVER = environment["SLURM_DRIVER"]
    settings.SLURM_CONF = cluster.conf
    reset_slurm_driver()
    celery_worker_process.extra_env = dict(environment)
    celery_worker_process.start()
    process = PortalServerProcess(settings.DATABASES["default"]["NAME"])
    process.extra_env = dict(environment)
    process.start()
    yield process
    process.stop()
    reset_slurm_driver()


def seed_world() -> Node:
    """The node with its GPUs, the GPU's two earlier ECC tickets (closed weeks ago: the repeat
    threshold is two) and a shelf of spare GPUs."""
    node = Node.objects.create(hostname=NODE, slurm_state="idle")
    for index in range(8):
        GPU.objects.create(
            node=node, index=index, model="NVIDIA H100 80GB HBM3",
            serial=OLD_SERIAL if index == GPU_INDEX else f"16543220810{index:02d}",
            uuid=OLD_UUID if index == GPU_INDEX else f"GPU-0081{index:04d}-0000-0000-0000-0000",
        )
    gpu = node.gpus.get(index=GPU_INDEX)
    for days_ago in (41, 19):
        detected = timezone.now() - timedelta(days=days_ago)
        resolved = detected + timedelta(hours=3)
        FaultTicket.objects.create(
            summary=f"ECC errors on GPU{GPU_INDEX}", category=Category.GPU, subtype="ecc",
            severity="major", status=Status.CLOSED, node=node, gpu=gpu, gpu_serial=OLD_SERIAL,
            sources=["platform"], fingerprint=f"gpu:{OLD_SERIAL}|ecc:{days_ago}",
            detected_at=detected, acknowledged_at=detected + timedelta(minutes=10),
            triaged_at=detected + timedelta(minutes=20), resolved_at=resolved,
            verified_at=resolved + timedelta(hours=1), closed_at=resolved + timedelta(hours=2),
            recovery_method=RecoveryMethod.GPU_RESET,
        )
    spare_stock_set(kind="gpu", site=SITE, on_hand=2, minimum=1)
    return node


def shoot(page, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(ARTIFACTS / f"repair-story-{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": WIDTHS[0], "height": 900})


def synced_state() -> str:
    from jobs.sync import sync_node_states

    sync_node_states()
    return Node.objects.get(hostname=NODE).slurm_state


def submitted(page, ticket: FaultTicket, form) -> None:
    form.locator("button[type=submit]").click()
    page.wait_for_url(f"**/faults/{ticket.pk}/", timeout=15_000)
    assert not page.locator(".flash-error").count(), page.locator(".flash-error").all_inner_texts()


def move_case(page, ticket, case: RepairCase, to_status: str, note: str) -> None:
    form = page.locator(f"#repair-case-{case.pk} form.repair-move")
    form.locator("select[name=to_status]").select_option(to_status)
    form.locator("input[name=note]").fill(note)
    submitted(page, ticket, form)
    wait_for(lambda: RepairCase.objects.get(pk=case.pk).status == to_status, 10,
             f"{case.reference} {to_status}")


def test_in_chromium_a_repeat_ecc_gpu_is_swapped_under_a_vendor_case_validated_and_counted(
    server, browser_page, make_user, cluster
):
    import requests

    seed_world()
    # The telemetry posts the ECC counts to the intake; the policy opens a ticket and drains.
    _, key = api_token_create(user=make_user(Role.OPERATOR), name="dcgm exporter")
    posted = requests.post(
        f"{server.url}/api/faults/events/", timeout=10, headers={"Authorization": f"Token {key}"},
        json={"kind": "ecc", "node": NODE, "gpu": GPU_INDEX,
              "ecc": {"single_bit": 1840, "double_bit": 2},
              "message": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL=2 on GPU5"},
    )
    assert posted.status_code == 201, posted.text
    ticket = FaultTicket.objects.get(pk=posted.json()["ticket"]["id"])
    wait_for(lambda: sinfo_state_and_reason(cluster, NODE)[0] in ("drain", "drng"), 60,
             f"{NODE} drained by the policy")
    wait_for(lambda: synced_state() == "drained", 30, "the drain seen by the portal")

    page = browser_page
    page.set_viewport_size({"width": WIDTHS[0], "height": 900})
    sign_in_page(page, server.url, make_user(Role.ONCALL))
    page.goto(f"{server.url}/faults/")
    page.locator(f"a[href='/faults/{ticket.pk}/']").first.click()
    page.wait_for_url(f"**/faults/{ticket.pk}/", timeout=15_000)

    # Flagged: two earlier tickets on this GPU's serial, and the policy proposes the vendor.
    assert "2 other tickets: repeat offender" in page.locator("#history-title").inner_text()
    assert "repeat offender, Open an RMA with the vendor" in (
        page.locator("#ticket-timeline").inner_text())
    assert "repeat offender, Open an RMA with the vendor" in (
        page.locator("#repair-proposed").inner_text())
    shoot(page, "1-repeat-offender")

    # A vendor case from the ticket: the GPU in slot 5.
    form = page.locator("#ticket-repairs form.repair-open")
    form.locator("#repair-vendor").fill(VENDOR)
    form.locator("#repair-case-number").fill(VENDOR_CASE)
    # The form starts at the ticket's GPU; the engineer checks it rather than types it.
    assert form.locator("#repair-component").input_value() == "gpu"
    assert form.locator("#repair-gpu-index").input_value() == str(GPU_INDEX)
    submitted(page, ticket, form)
    case = RepairCase.objects.get(ticket=ticket)
    panel = page.locator(f"#repair-case-{case.pk}")
    assert f"{case.reference} · {VENDOR} case {VENDOR_CASE} · GPU · Open" in (
        panel.locator("h3").text_content())
    assert f"{NODE} GPU{GPU_INDEX}" in panel.locator("table.repair-parts").inner_text()

    # A spare from the shelf, so the node need not wait for the vendor's part.
    reserve = panel.locator("form.repair-reserve")
    assert reserve.locator("select[name=site] option:checked").inner_text() == f"{SITE} (2 free)"
    submitted(page, ticket, reserve)
    panel = page.locator(f"#repair-case-{case.pk}")
    panel.locator("[data-spare=reserved]").wait_for(timeout=10_000)
    assert SpareReservation.objects.get(reference=case.reference).status == (
        ReservationStatus.RESERVED)
    shoot(page, "2-case-open-spare-reserved")

    move_case(page, ticket, case, RepairStatus.WAITING_FOR_PART, "vendor ships the replacement")
    move_case(page, ticket, case, RepairStatus.PART_RECEIVED, "spare GPU taken off the shelf")

    # Installed: the new serial and UUID typed into the case's install form.
    install = page.locator(f"#repair-case-{case.pk} form.repair-install")
    install.locator("input[name=serial_in]").fill(NEW_SERIAL)
    install.locator("input[name=uuid_in]").fill(NEW_UUID)
    install.locator("input[name=firmware_version_in]").fill("96.00.99.00.01")
    submitted(page, ticket, install)
    wait_for(lambda: RepairCase.objects.get(pk=case.pk).status == RepairStatus.INSTALLED, 10,
             f"{case.reference} installed")
    parts = page.locator(f"#repair-case-{case.pk} table.repair-parts").inner_text()
    assert OLD_SERIAL in parts and NEW_SERIAL in parts
    assert page.locator(f"#repair-case-{case.pk} [data-spare=consumed]").count() == 1
    shoot(page, "3-part-installed")

    # The node page: the slot has the new serial and UUID; the old serial's page says it left.
    page.goto(f"{server.url}/inventory/nodes/{NODE}/")
    gpu_row = page.locator(f"#gpu-{GPU_INDEX}").inner_text()
    assert NEW_SERIAL in gpu_row and NEW_UUID in gpu_row and OLD_SERIAL not in gpu_row
    swaps = page.locator("#swap-table").inner_text()
    assert OLD_SERIAL in swaps and NEW_SERIAL in swaps and case.reference in swaps
    shoot(page, "4-node-page")
    page.locator(f"#swap-table a[href='/inventory/parts/{OLD_SERIAL}/']").click()
    page.wait_for_url(f"**/inventory/parts/{OLD_SERIAL}/", timeout=15_000)
    history = page.locator("#part-life").inner_text()
    assert "removed" in history and f"{NODE} GPU{GPU_INDEX}" in history and NEW_SERIAL in history
    assert "Not installed in any slot now." in page.locator(".page-head").inner_text()
    shoot(page, "5-old-serial-history")

    # Validate, then resume: a job in a maintenance reservation on the node puts it in service.
    page.goto(f"{server.url}/faults/{ticket.pk}/")
    page.locator("#ticket-recovery button[data-step=validate]").click()
    page.wait_for_url(f"**/faults/{ticket.pk}/", timeout=15_000)
    validation = Action.objects.filter(kind=VALIDATE_ACTION).get()
    wait_for(lambda: Action.objects.get(pk=validation.pk).is_terminal, 120, "the validation")
    validation.refresh_from_db()
    assert validation.status == "succeeded", validation.last_error
    assert validation.result["passed"] is True
    wait_for(lambda: sinfo_state_and_reason(cluster, NODE) == ("idle", "none"), 60,
             f"{NODE} idle in sinfo: {sinfo_state_and_reason(cluster, NODE)}")
    wait_for(lambda: synced_state() == "idle", 30, "the portal to see the node in service")
    page.reload()
    page.locator("[data-validation=passed]").wait_for(timeout=10_000)

    # The case closes; the ticket resolves with the method the case shows, and is verified.
    move_case(page, ticket, case, RepairStatus.CLOSED, "replacement validated, node in service")
    for status in ("triaged", "resolved", "verified"):
        page.select_option("#to_status", status)
        if status == "resolved":
            assert page.locator("#recovery_method").input_value() == RecoveryMethod.PART_REPLACED
        page.fill("#transition-note", f"{status}: {case.reference}")
        submitted(page, ticket, page.locator("#ticket-workflow form.fault-form"))
        wait_for(lambda status=status: FaultTicket.objects.get(pk=ticket.pk).status == status,
                 10, f"the ticket {status}")
    shoot(page, "6-case-closed-ticket-verified")

    # The statistics: the case's wait for the part, per part type and vendor.
    page.goto(f"{server.url}/faults/statistics/")
    row = page.locator("#repair-statistics tr", has_text=VENDOR)
    cells = [row.locator("td").nth(i).inner_text() for i in range(6)]
    assert cells[:3] == ["GPU", VENDOR, "1"], cells
    case.refresh_from_db()
    waited_hours = case.waited_for_part.total_seconds() / 3600
    assert float(cells[3]) == pytest.approx(waited_hours, abs=0.001), cells
    assert cells[5] != "—"
    shoot(page, "7-statistics")
    swap = ComponentSwap.objects.get()
    assert (swap.serial_out, swap.serial_in, swap.uuid_in) == (OLD_SERIAL, NEW_SERIAL, NEW_UUID)
