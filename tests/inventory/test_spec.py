"""Reading and expanding specs: each mistake is reported at its location (no database needed)."""

from __future__ import annotations

import tracemalloc

import pytest

from inventory.topology.importer import build_plan
from inventory.topology.spec import spec_from_yaml
from portal.errors import InvalidInput

TEMPLATE = "node_templates.sys-821ge-tnhr"


def errors_of(spec, scale: int = 1) -> list[str]:
    with pytest.raises(InvalidInput) as caught:
        build_plan(spec, scale=scale)
    return caught.value.detail


def nic(spec, position: int) -> dict:
    return spec["node_templates"]["sys-821ge-tnhr"]["nics"][position]


def test_the_shipped_spec_is_valid(sakuraone_spec):
    plan = build_plan(sakuraone_spec)
    assert plan.counts()["nodes"] == 100


BREAKAGES = [
    # (what to do to the spec, the one error expected: location, then words of the message)
    (lambda s: s.update(version=2), "version: this importer reads version 1"),
    (lambda s: s.update(colour="blue"), "colour: unknown key"),
    (lambda s: s.pop("pods"), "pods: is required"),
    (lambda s: s.update(pods={"p1": {}}), "pods: must be a list, not a mapping"),
    (lambda s: s["pods"][0].update(nodes="gpu[001-050]"), "pods[0].nodes: must be a list"),
    (lambda s: s["pods"][1].update(name="p1"), "pods[1].name: pod p1 is already pods[0]"),
    (
        lambda s: s["pods"][1]["nodes"][0].update(range="gpu[050-060]"),
        "pods[1].nodes[0].range: 1 host name(s) already in pods[0].nodes[0], e.g. gpu050",
    ),
    (
        lambda s: s["pods"][0]["nodes"][0].update(range="gpu[001-0x50]"),
        "pods[0].nodes[0].range: 'gpu[001-0x50]': range '001-0x50' is not a number or lo-hi",
    ),
    (
        lambda s: s["pods"][0]["nodes"][0].update(template="dgx-h100"),
        "pods[0].nodes[0].template: unknown node template 'dgx-h100'",
    ),
    (
        lambda s: s["pods"][0]["nodes"][0].update(status="broken"),
        "pods[0].nodes[0].status: 'broken' is not one of: planned, active",
    ),
    (
        lambda s: s["pods"][0]["racks"].update(name="rack{row}"),
        "pods[0].racks.name: unknown placeholder {row}",
    ),
    (lambda s: nic(s, 0).update(rail=8), f"{TEMPLATE}.nics[0].rail: 8 is out of range 0-7"),
    (
        lambda s: nic(s, 1).update(rail=0),
        f"{TEMPLATE}.nics[1].rail: rail 0 is already {TEMPLATE}.nics[0]",
    ),
    (lambda s: nic(s, 0).pop("rail"), f"{TEMPLATE}.nics[0].rail: is required for a rail NIC"),
    (lambda s: nic(s, 8).update(rail=3), f"{TEMPLATE}.nics[8].rail: only rail NICs have a rail"),
    (lambda s: nic(s, 1).update(device="mlx5_0"), f"{TEMPLATE}.nics[1].device: mlx5_0 is already"),
    (
        lambda s: nic(s, 2).update(role="infiniband"),
        f"{TEMPLATE}.nics[2].role: 'infiniband' is not one of",
    ),
    (
        lambda s: nic(s, 0)["affinity"].update(gpu=8),
        f"{TEMPLATE}.nics[0].affinity.gpu: 8 is out of range 0-7",
    ),
    (
        lambda s: nic(s, 0)["affinity"].update(kind="SYS"),
        f"{TEMPLATE}.nics[0].affinity.kind: 'SYS' is not one of: PIX, NODE",
    ),
    (
        lambda s: s["node_templates"]["sys-821ge-tnhr"]["gpus"]["pci_bus_ids"].append(
            "0000:ff:00.0"
        ),
        f"{TEMPLATE}.gpus.pci_bus_ids: 9 GPUs; a node holds at most 8",
    ),
    (
        lambda s: s["node_templates"]["sys-821ge-tnhr"]["gpus"]["pci_bus_ids"].__setitem__(
            2, "18:00"
        ),
        f"{TEMPLATE}.gpus.pci_bus_ids[2]: '18:00' is not a PCI bus id",
    ),
    (
        lambda s: s["node_templates"]["sys-821ge-tnhr"].update(memory_gb="1.5TB"),
        f"{TEMPLATE}.memory_gb: must be an integer, not a string",
    ),
    (
        lambda s: s["switch_templates"]["ais800-64o"]["breakout"].update(fanout=3),
        "switch_templates.ais800-64o.breakout.fanout: 8 lanes do not split into 3",
    ),
    (
        lambda s: s["identifiers"].update(mac_oui="94-6d-ae"),
        "identifiers.mac_oui: must be three bytes",
    ),
    (
        lambda s: s["identifiers"].update(node_serial="S{serial}"),
        "identifiers.node_serial: unknown placeholder {serial}",
    ),
    (
        lambda s: s["identifiers"].update(node_serial="S{ordinal:q}"),
        "identifiers.node_serial: bad format string",
    ),
    (
        lambda s: s["switch_groups"][0].update(hostname="leaf-{pod.upper}"),
        "switch_groups[0].hostname: unknown placeholder {pod.upper}",
    ),
    (
        lambda s: s["switch_groups"][1].update(hostname="spine-{pod}"),
        "switch_groups[1].hostname: unknown placeholder {pod}",
    ),
    (
        lambda s: s["switch_groups"][0].update(per_pod=False, hostname="leaf-{n}"),
        "switch_groups[0].per_pod: leafs belong",
    ),
    (lambda s: s["switch_groups"][0].update(count=9), "switch_groups[0].count: a rail leaf group"),
    (
        lambda s: s["switch_groups"][2].update(management_address="10.254.0.300"),
        "switch_groups[2].management_address: is not an IP address",
    ),
    (
        lambda s: s["switch_groups"][1].update(credentials_ref="pass word!"),
        "switch_groups[1].credentials_ref: 'pass word!' does not match",
    ),
    (
        lambda s: s["wiring"]["switch_links"][0]["upper"].update(group="spines"),
        "wiring.switch_links[0].upper.group: unknown switch group 'spines'",
    ),
    (
        lambda s: s["wiring"]["node_links"][0]["cable"].update(type="QSFP"),
        "wiring.node_links[0].cable.type: 'QSFP' is not one of",
    ),
    (
        lambda s: s["wiring"]["node_links"][0]["cable"].update(length_m=-5),
        "wiring.node_links[0].cable.length_m: -5 is not a positive length",
    ),
    (
        lambda s: s["wiring"]["node_links"][0]["ports"].update(first=30, last=24),
        "wiring.node_links[0].ports.last: 24 is before first (30)",
    ),
    (
        lambda s: s["wiring"]["node_links"][0].update(nics={}),
        "wiring.node_links[0].nics.role: select NICs",
    ),
    # Expansion: the structure is sound but the plan does not fit.
    (
        lambda s: s["wiring"]["node_links"][0]["ports"].update(last=20),
        "wiring.node_links[0].ports: leaf-p1-r0 needs 50 ports, 8 more than the range holds "
        "(and 15 other switches)",
    ),
    (
        lambda s: s["wiring"]["node_links"][0].update(switch="leaf-{pod}-rail{rail}"),
        "wiring.node_links[0].switch: no switch leaf-p1-rail0 (wanted by gpu001 mlx5_0)",
    ),
    (
        lambda s: s["wiring"]["switch_links"][0]["lower"]["ports"].update(first=20),
        "wiring.switch_links[0]: cage 20 of leaf-p1-r0 (and maybe others) is already used by "
        "wiring.node_links[0]",
    ),
    (
        lambda s: s["wiring"]["switch_links"][0].update(links_per_pair=5),
        "wiring.switch_links[0]: leaf-p1-r0 needs 40 uplinks, more than its port range holds",
    ),
    (
        lambda s: nic(s, 0).update(speed_gbps=200),
        "wiring.node_links[0]: 200G mlx5_0 NICs would land on 400G ports",
    ),
    (
        lambda s: s["wiring"]["node_links"][1].update(nics={"role": "rail"}, switch="storage-1"),
        "wiring.node_links[1].nics: gpu001 mlx5_0 (and maybe others) is already cabled by "
        "wiring.node_links[0]",
    ),
    (
        lambda s: s["switch_groups"][2].update(management_address="10.254.1.3"),
        "switch_groups[2].management_address: 10.254.1.3 of storage-1 is already leaf-p1-r2's",
    ),
    (
        lambda s: s["pods"][1].update(racks={"name": "rack{n:02d}", "nodes_per_rack": 4}),
        "pods[1].racks.name: rack rack01 would be in pods p1 and p2",
    ),
]


@pytest.mark.parametrize(("break_spec", "expected"), BREAKAGES)
def test_each_mistake_is_reported_at_its_location(sakuraone_spec, break_spec, expected):
    if expected.startswith("pods[1].racks.name"):
        sakuraone_spec["pods"][0]["racks"]["name"] = "rack{n:02d}"
    break_spec(sakuraone_spec)
    errors = errors_of(sakuraone_spec)
    assert len(errors) == 1, errors
    assert errors[0].startswith(expected), errors[0]


def test_many_mistakes_are_reported_together(sakuraone_spec):
    nic(sakuraone_spec, 0)["rail"] = 8
    nic(sakuraone_spec, 1)["role"] = "infiniband"
    sakuraone_spec["pods"][0]["nodes"][0]["range"] = "gpu["
    sakuraone_spec["pods"][1]["nodes"][0]["template"] = "nope"
    sakuraone_spec["switch_groups"][0]["template"] = "nope"
    sakuraone_spec["wiring"]["node_links"][0]["cable"]["type"] = "nope"
    sakuraone_spec["surprise"] = True
    locations = [error.split(": ")[0] for error in errors_of(sakuraone_spec)]
    assert sorted(locations) == sorted(
        [
            "surprise",
            f"{TEMPLATE}.nics[0].rail",
            f"{TEMPLATE}.nics[1].role",
            "pods[0].nodes[0].range",
            "pods[1].nodes[0].template",
            "switch_groups[0].template",
            "wiring.node_links[0].cable.type",
        ]
    )


@pytest.mark.parametrize("scale", [0, -1, 51, "2", True])
def test_scale_must_be_a_sensible_integer(sakuraone_spec, scale):
    assert errors_of(sakuraone_spec, scale=scale) == ["scale: must be an integer from 1 to 50"]


def test_scaling_needs_numbered_names(sakuraone_spec):
    sakuraone_spec["pods"][0]["name"] = "east"
    sakuraone_spec["pods"][1]["nodes"][0]["range"] = "node-[a,b]"
    # not a number range: use two literal names instead
    sakuraone_spec["pods"][1]["nodes"][0]["range"] = "alpha,beta"
    errors = errors_of(sakuraone_spec, scale=2)
    assert "pods[0].name: must end in a number to --scale" in errors
    assert "pods[1].nodes[0].range: host names must end in a number to --scale" in errors


def test_spec_that_is_not_a_mapping():
    assert errors_of([1, 2]) == ["spec: must be a mapping, not a list"]


def test_yaml_errors_name_the_line():
    with pytest.raises(InvalidInput) as caught:
        spec_from_yaml("version: 1\npods:\n  - name: [p1\n")
    assert caught.value.detail[0].startswith("yaml line 4: ")


def test_a_minimal_spec(sakuraone_spec):
    spec = {
        "version": 1,
        "name": "lab",
        "node_templates": {
            "box": {"model": "Box", "nics": [{"device": "eth0", "role": "management"}]}
        },
        "pods": [{"name": "lab", "nodes": [{"range": "n[1-3]", "template": "box"}]}],
    }
    plan = build_plan(spec)
    assert [node.hostname for node in plan.nodes] == ["n1", "n2", "n3"]
    assert plan.gpus == [] and plan.switches == [] and plan.cables == []
    assert plan.nodes[0].rack is None and plan.nodes[0].serial == ""


def alias_bomb(levels: int = 9, width: int = 10) -> str:
    """A few hundred bytes of nested aliases that expand to width**levels values."""
    lines = ["a0: &a0 [" + ",".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ",".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_it_expands():
    bomb = alias_bomb()
    assert len(bomb) < 500
    tracemalloc.start()
    try:
        with pytest.raises(InvalidInput) as caught:
            spec_from_yaml(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "expands to more than 200,000 values" in caught.value.detail[0]
    assert peak < 5 * 1024 * 1024


def test_aliases_that_stay_small_still_read():
    text = "base: &base {model: Box, gpus: 8}\nnodes:\n  - *base\n  - {<<: *base, gpus: 4}\n"
    assert spec_from_yaml(text)["nodes"] == [
        {"model": "Box", "gpus": 8},
        {"model": "Box", "gpus": 4},
    ]


def test_a_cycle_and_deep_nesting_are_refused():
    with pytest.raises(InvalidInput) as cycle:
        spec_from_yaml("a: &a [1, *a]\n")
    assert "contains it" in cycle.value.detail[0]
    with pytest.raises(InvalidInput) as deep:
        spec_from_yaml("[" * 100 + "]" * 100)
    assert "deeper than 64" in deep.value.detail[0]
