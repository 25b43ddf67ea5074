"""Rules an operation holds its input to that OpenAPI 3.0 cannot state: a name that must exist
in the inventory, exactly one of two fields, an end after a start, a pair unique together, a
step the object's state allows. `PortalAutoSchema` writes each operation's rules into its
description (under "Rules the schema cannot state"), so a client reads them beside the schema;
tests/portal/test_api_contract.py tolerates a schema-valid request refused only where the
operation states a rule here, and only with a 4xx that names a field.

What the schema can state (types, ranges, patterns, enums, required fields) belongs in the
schema instead, never here. Keyed by "METHOD path" as the schema spells the path.
"""

from __future__ import annotations

# Rules several operations share, worded once.
HOSTLIST_NODES = (
    "`hostlist` is a Slurm hostlist (gpu[001-016,020]) whose every node is in the inventory "
    "and visible to you."
)
NO_NUL_IN_KEYS = (
    "No key of a free-form object holds a NUL character (PostgreSQL cannot store one); "
    "OpenAPI 3.0 has no pattern for property names."
)
BULK_IDS = (
    "Each item's `id` names an existing object that you may change, at most once per request."
)
SPARES_HELD = "`on_hand` is not below the spares that repair cases hold on this shelf."
MAINTENANCE_WINDOW = (
    "`planned_end` is after `planned_start` and still ahead; `switches` are known leaf or "
    "storage switches and `nodes` a hostlist of known nodes, not both empty; no open window "
    "covers the same switch or node at an overlapping time; `reason` is not blank."
)
SWITCH_REACHABLE = "The switch has a management address (its configuration is reached there)."
PERIOD = (
    "`since` is not after `until`, and the period spans at most 1098 days (3 years); "
    "`tenant` is the slug of an existing tenant."
)
ALLOCATION = (
    "Exactly one of `nodes`, `hostlist`, `pod` or `rack` names the nodes; each names existing "
    "objects; `tenant` exists; `end`, when given, is after `start`."
)
ALLOCATION_FIXED = "`tenant` and `start` cannot change; end the allocation and make another."
CABLE_ENDS = (
    "Each end is exactly one NIC or one port (`a_nic` or `a_port`, `b_nic` or `b_port`), "
    "each an existing one."
)
CABLE_LENGTH = "`length_m`, when given, is more than 0."
CABLE_ENDS_FIXED = "A cable's ends cannot change; decommission it and create another."
GPU_SLOT = "`node` exists, and (`node`, `index`) is unique: one GPU per slot."
NIC_ROLE = (
    "`node` and `affinity_gpu` exist; a rail NIC has a `rail` index (0-7) and only a rail NIC "
    "has one; `mac` is six lower-case hex pairs joined by colons."
)
NODE_FIELDS = (
    "`disks` is a list of disk groups (objects); `bmc_address` is an IPv4 or IPv6 address; "
    "`pod` and `rack` exist and the rack is in the pod."
)
PORT_FIELDS = (
    "`switch` and `breakout_parent` exist; `lanes` is 1 to 16; (`switch`, `name`) is unique."
)
POD_NAME = "`name` is unique."
RACK_POD = "`pod` names an existing pod; (`pod`, `name`) is unique."
SWITCH_ROLE = (
    "A leaf belongs to a pod and serves a rail; only leafs serve a rail; `pod` and `rack` "
    "exist; `management_address` is an IPv4 or IPv6 address."
)

RULES_OUTSIDE_THE_SCHEMA: dict[str, tuple[str, ...]] = {
    "GET /api/actions/": ("`requested_by` is the id of an existing user.",),
    "GET /api/fabric/rail-health/": (
        "`nodes` is a Slurm hostlist whose every node is in the inventory and visible to you.",
    ),
    "GET /api/fabric/switches/{id}/blast-radius/": ("`ports` names ports of this switch.",),
    "GET /api/impact/": (
        "`target` is <kind>:<name> naming an object in the inventory: node:gpu011, "
        "hostlist:gpu[001-004], gpu:gpu011:3, nic:gpu011:mlx5_4, port:leaf-p1-r3:Ethernet8, "
        "switch:leaf-p1-r3 or cable:<id>.",
    ),
    "GET /api/inventory/cables/": (HOSTLIST_NODES,),
    "GET /api/inventory/gpus/": (HOSTLIST_NODES,),
    "GET /api/inventory/nics/": (HOSTLIST_NODES,),
    "GET /api/inventory/nodes/": (HOSTLIST_NODES,),
    "GET /api/inventory/switches/": (
        "`hostlist` is a hostlist (leaf-p1-r[0-7]) whose every switch is in the inventory.",
    ),
    "GET /api/jobs/analytics/": (PERIOD,),
    "GET /api/jobs/jobs/": ("`switch` and `port` are ids of an existing switch and port.",),
    "GET /api/search/": (
        "A `q` holding a comma or brackets is read as a Slurm hostlist and must be a "
        "well-formed one.",
    ),
    "GET /api/telemetry/observation3/": (PERIOD,),
    "PATCH /api/inventory/allocations/bulk/": (BULK_IDS, ALLOCATION, ALLOCATION_FIXED),
    "PATCH /api/inventory/allocations/{id}/": (ALLOCATION, ALLOCATION_FIXED),
    "PATCH /api/inventory/cables/bulk/": (BULK_IDS, CABLE_ENDS_FIXED, CABLE_LENGTH),
    "PATCH /api/inventory/cables/{id}/": (CABLE_ENDS_FIXED, CABLE_LENGTH),
    "PATCH /api/inventory/gpus/bulk/": (BULK_IDS, GPU_SLOT),
    "PATCH /api/inventory/gpus/{id}/": (GPU_SLOT,),
    "PATCH /api/inventory/nics/bulk/": (BULK_IDS, NIC_ROLE),
    "PATCH /api/inventory/nics/{id}/": (NIC_ROLE,),
    "PATCH /api/inventory/nodes/bulk/": (BULK_IDS, NODE_FIELDS),
    "PATCH /api/inventory/nodes/{id}/": (NODE_FIELDS,),
    "PATCH /api/inventory/spares/{id}/": (SPARES_HELD,),
    "POST /api/inventory/spares/": ("`site` is not blank once trimmed.", SPARES_HELD),
    "PATCH /api/inventory/pods/bulk/": (BULK_IDS, POD_NAME),
    "PATCH /api/inventory/pods/{id}/": (POD_NAME,),
    "PATCH /api/inventory/ports/bulk/": (BULK_IDS, PORT_FIELDS),
    "PATCH /api/inventory/ports/{id}/": (PORT_FIELDS,),
    "PATCH /api/inventory/racks/bulk/": (BULK_IDS, RACK_POD),
    "PATCH /api/inventory/racks/{id}/": (RACK_POD,),
    "PATCH /api/inventory/switches/bulk/": (BULK_IDS, SWITCH_ROLE),
    "PATCH /api/inventory/switches/{id}/": (SWITCH_ROLE,),
    "POST /api/fabric/pods/{id}/qos/": ("The pod has switches to configure.",),
    "POST /api/fabric/maintenance-windows/": (MAINTENANCE_WINDOW,),
    "POST /api/fabric/switches/{id}/ecn-counters/": (SWITCH_REACHABLE,),
    "POST /api/fabric/switches/{id}/maintenance/": (SWITCH_REACHABLE,),
    "POST /api/fabric/switches/{id}/ports/admin/": (
        "`ports` names ports of this switch.",
        SWITCH_REACHABLE,
    ),
    "POST /api/fabric/switches/{id}/qos/": (SWITCH_REACHABLE,),
    "POST /api/fabric/switches/{id}/save/": (SWITCH_REACHABLE,),
    "POST /api/faults/alertmanager/": (
        '`version` is Alertmanager\'s webhook payload version, "4".',
        NO_NUL_IN_KEYS,
    ),
    "POST /api/faults/events/": (
        "`node`, `switch`, `gpu`, `nic` and `port` name objects in the inventory; the fields "
        "the `kind` needs are given.",
        NO_NUL_IN_KEYS,
    ),
    "POST /api/faults/repair-cases/": (
        "`ticket` is an existing ticket; `opened_at` is not before the ticket was detected; "
        "each part names a slot the component has (a GPU index, a NIC device, a node).",
    ),
    "POST /api/faults/repair-cases/{id}/install/": (
        "`part` is a part of this case, received and not yet installed; `serial_in` is not "
        "installed elsewhere; `installed_at` is not before the case opened.",
    ),
    "POST /api/faults/repair-cases/{id}/parts/": (
        "A part names what its kind needs (`gpu_index` for a GPU, `nic` for a NIC), on an "
        "existing `node`.",
    ),
    "POST /api/faults/repair-cases/{id}/reserve-spare/": (
        "`site` has a spares shelf with a part of `kind` (the case's component when blank) that "
        "no other case holds; the case is neither installed nor closed.",
    ),
    "POST /api/faults/repair-cases/{id}/transition/": (
        "`to_status` is reachable from the case's status; `at` is not before the case opened "
        "nor in the future; a case is installed only once every part is.",
    ),
    "POST /api/faults/tickets/": (
        "A ticket names the node or the switch the problem is on, each in the inventory; a "
        "`gpu` needs its node.",
    ),
    "POST /api/faults/tickets/{id}/recovery/": (
        "`step` is one the ticket's state allows now (GET the ticket for its steps).",
    ),
    "POST /api/faults/tickets/{id}/transition/": (
        "`to_status` is reachable from the ticket's status; `subtype` is one of the category's "
        "subtypes.",
    ),
    "POST /api/inventory/allocations/": (ALLOCATION, HOSTLIST_NODES),
    "POST /api/inventory/allocations/bulk/": (ALLOCATION, HOSTLIST_NODES),
    "POST /api/inventory/cables/": (CABLE_ENDS, CABLE_LENGTH),
    "POST /api/inventory/cables/bulk/": (CABLE_ENDS, CABLE_LENGTH),
    "POST /api/inventory/gpus/": (GPU_SLOT,),
    "POST /api/inventory/gpus/bulk/": (GPU_SLOT,),
    "POST /api/inventory/nics/": (NIC_ROLE,),
    "POST /api/inventory/nics/bulk/": (NIC_ROLE,),
    "POST /api/inventory/nodes/": (NODE_FIELDS, "`hostname` is unique."),
    "POST /api/inventory/nodes/bulk/": (NODE_FIELDS, "`hostname` is unique."),
    "POST /api/inventory/ports/": (PORT_FIELDS,),
    "POST /api/inventory/ports/bulk/": (PORT_FIELDS,),
    "POST /api/inventory/racks/": (RACK_POD,),
    "POST /api/inventory/racks/bulk/": (RACK_POD,),
    "POST /api/inventory/switches/": (SWITCH_ROLE, "`hostname` is unique."),
    "POST /api/inventory/switches/bulk/": (SWITCH_ROLE, "`hostname` is unique."),
    "POST /api/inventory/topology/import": (
        "`spec` is a topology spec (inventory/topology/SPEC.md): a mapping with `version`, "
        "`name`, `node_templates` and `pods`, as an object or YAML text.",
    ),
    "POST /api/jobs/nodes/drain/": (
        "Exactly one of `hostlist` or `node_ids` names the nodes.",
        HOSTLIST_NODES,
    ),
    "POST /api/jobs/nodes/resume/": (
        "Exactly one of `hostlist` or `node_ids` names the nodes.",
        HOSTLIST_NODES,
    ),
    "POST /api/jobs/nodes/reboot/": (
        "Exactly one of `hostlist` or `node_ids` names the nodes.",
        HOSTLIST_NODES,
    ),
    "POST /api/jobs/nodes/cancel-reboot/": (
        "Exactly one of `hostlist` or `node_ids` names the nodes.",
        HOSTLIST_NODES,
    ),
    "POST /api/tokens/": (
        "`expires_at` is in the future and at most API_TOKEN_MAX_LIFETIME_DAYS (365) days ahead.",
    ),
    "PUT /api/inventory/allocations/{id}/": (ALLOCATION, ALLOCATION_FIXED),
    "PUT /api/inventory/cables/{id}/": (CABLE_ENDS_FIXED, CABLE_LENGTH),
    "PUT /api/inventory/gpus/{id}/": (GPU_SLOT,),
    "PUT /api/inventory/nics/{id}/": (NIC_ROLE,),
    "PUT /api/inventory/nodes/{id}/": (NODE_FIELDS,),
    "PUT /api/inventory/pods/{id}/": (POD_NAME,),
    "PUT /api/inventory/ports/{id}/": (PORT_FIELDS,),
    "PUT /api/inventory/racks/{id}/": (RACK_POD,),
    "PUT /api/inventory/switches/{id}/": (SWITCH_ROLE,),
}


def rules_for(method: str, path: str) -> tuple[str, ...]:
    return RULES_OUTSIDE_THE_SCHEMA.get(f"{method.upper()} {path}", ())


def described_rules(rules: tuple[str, ...]) -> str:
    """The paragraph an operation's description ends with."""
    return "Rules the schema cannot state:\n\n" + "\n".join(f"- {rule}" for rule in rules)
