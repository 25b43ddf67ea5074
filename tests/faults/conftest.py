"""A small fleet for the faults tests: two nodes in two pods with 8 GPUs and two NICs each, a leaf
and a storage switch. Much faster than importing the whole SAKURAONE spec."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from inventory.models import GPU, NIC, Node, Pod, Switch, SwitchPort
from tests.inventory.bmc_fixtures import mockup_settings, redfish_mockup  # noqa: F401 - fixtures


def build_fleet() -> SimpleNamespace:
    pods = [Pod.objects.create(name=f"pod{n}") for n in (1, 2)]
    nodes = []
    for number, pod in zip((1, 2), pods, strict=True):
        node = Node.objects.create(hostname=f"gpu00{number}", pod=pod, slurm_state="idle")
        for index in range(8):
            GPU.objects.create(
                node=node,
                index=index,
                uuid=f"GPU-{number:04d}{index:04d}-0000-0000-0000-000000000000",
                serial=f"16543220{number:02d}{index:02d}",
            )
        NIC.objects.create(node=node, device="mlx5_0", role=NIC.Role.RAIL, rail=0)
        NIC.objects.create(node=node, device="mlx5_1", role=NIC.Role.RAIL, rail=1)
        nodes.append(node)
    leaf = Switch.objects.create(hostname="leaf-p1-r0", role=Switch.Role.LEAF, pod=pods[0], rail=0)
    storage = Switch.objects.create(hostname="storage-sw1", role=Switch.Role.STORAGE)
    SwitchPort.objects.create(switch=leaf, name="Ethernet0", index=1)
    return SimpleNamespace(pods=pods, nodes=nodes, leaf=leaf, storage=storage)


@pytest.fixture
def fleet(db) -> SimpleNamespace:
    return build_fleet()


def post_json(client, url: str, body, **extra):
    """POST a body as given (a dict is encoded; a string goes as is, malformed or not)."""
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, data=data, content_type="application/json", **extra)


def xid_event(node: str = "gpu001", gpu=3, xid: int = 79, **fields) -> dict:
    return {"kind": "xid", "node": node, "gpu": gpu, "xid": xid, **fields}
