"""A part swap against concurrent API writes of the same rows (inventory/swaps.py holds the
node's and the slot's row locks until it commits; portal/api/concurrency.py locks the row a PATCH
writes). Here, not in tests/inventory/: these tests commit, and that package keeps a committed
SAKURAONE import under the same host names for its other tests."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from inventory.models import ComponentSwap
from inventory.swaps import component_replace, slot_for
from portal.models import Role
from tests.faults.conftest import build_fleet


@pytest.mark.django_db(transaction=True)
def test_a_swap_and_a_concurrent_patch_of_the_same_gpu_both_land(make_user, api_as):
    """The swap holds the node's and the GPU's row locks until it commits; a PATCH of the same
    GPU (portal/api/concurrency.py locks the row it writes) waits, then writes its field on top
    of the swap's: neither change is lost, and the history names the serial that really left."""
    fleet = build_fleet()
    node = fleet.nodes[0]
    gpu = node.gpus.get(index=4)
    old_serial = gpu.serial
    client = api_as(Role.OPERATOR)
    swapped, release, patched = threading.Event(), threading.Event(), {}
    errors = []

    def swap():
        try:
            with transaction.atomic():
                component_replace(slot=slot_for(kind="gpu", node=node, gpu_index=4),
                                  serial_in="CONCURRENT-1")
                swapped.set()
                release.wait(10)
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)
            swapped.set()
        finally:
            connection.close()

    def patch():
        try:
            patched["response"] = client.patch(
                f"/api/inventory/gpus/{gpu.pk}/", {"model": "H100 SXM5 80GB"}, format="json"
            )
        finally:
            patched["at"] = time.monotonic()
            connection.close()

    swapper = threading.Thread(target=swap)
    swapper.start()
    assert swapped.wait(10)
    patcher = threading.Thread(target=patch)
    patcher.start()
    time.sleep(0.5)
    assert "response" not in patched, "the PATCH went through while the swap held the row"
    released_at = time.monotonic()
    release.set()
    swapper.join(10)
    patcher.join(10)
    assert not errors, errors
    assert patched["response"].status_code == 200, patched["response"].content
    assert patched["at"] >= released_at
    gpu.refresh_from_db()
    assert (gpu.serial, gpu.model) == ("CONCURRENT-1", "H100 SXM5 80GB")
    assert patched["response"].json()["serial"] == "CONCURRENT-1"
    assert ComponentSwap.objects.get().serial_out == old_serial


@pytest.mark.django_db(transaction=True)
def test_a_patch_of_the_node_does_not_lose_a_swap_of_its_serial(make_user, api_as):
    fleet = build_fleet()
    node = fleet.nodes[0]
    client = api_as(Role.OPERATOR)
    swapped, release, results = threading.Event(), threading.Event(), {}

    def swap():
        try:
            with transaction.atomic():
                component_replace(slot=slot_for(kind="node", node=node), serial_in="CHASSIS-2")
                swapped.set()
                release.wait(10)
        finally:
            swapped.set()
            connection.close()

    def patch():
        try:
            results["response"] = client.patch(
                f"/api/inventory/nodes/{node.pk}/", {"memory_gb": 1536}, format="json"
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=swap)]
    threads[0].start()
    assert swapped.wait(10)
    threads.append(threading.Thread(target=patch))
    threads[1].start()
    time.sleep(0.3)
    release.set()
    for thread in threads:
        thread.join(10)
    assert results["response"].status_code == 200, results["response"].content
    node.refresh_from_db()
    assert (node.serial, node.memory_gb) == ("CHASSIS-2", 1536)

