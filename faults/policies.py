"""What each kind of fault event means and what is done about it (DESIGN.md section 7).

A rule per event kind ("xid:79", "ecc", "switch_reboot", ...) gives the taxonomy (category,
subtype), the severity, and the recovery steps. Each step is either done automatically when the
event opens or attaches to a ticket, or proposed on the ticket's timeline for a person:

    drain          queue a slurm.drain Action for the node, the ticket as reason
    reboot         request a reboot of the node
    reset_gpu      reset the GPU (nvidia-smi -r) when it is idle
    mark_suspect   flag the GPU as suspect on the ticket
    vendor         open an RMA with the vendor
    restart_app    restart the application (contained errors)
    watch          keep watching the counters
    resume         return the node to service in Slurm (proposed when the signal clears)

Signals from the other apps (a link down, a health-check drain, a node DOWN, a job ending
NODE_FAIL, a switch unreachable) have rules too. When such a signal clears (port up, node healthy,
switch answering), the ticket records it and the rule's `on_clear` says what follows: "resume"
proposes returning the nodes the signal drained to service; `auto_on_clear` lists the steps the
portal performs itself instead (override with FAULTS_POLICY_OVERRIDES = {"link_down":
{"auto_on_clear": ["resume"]}}).

Settings: FAULTS_POLICY_OVERRIDES = {"xid:63": {"auto": ["drain"]}, ...} replaces fields of the
built-in rules (keys as below); FAULTS_REPEAT_THRESHOLD (default 2) is how many earlier tickets
on the same GPU serial or node make the policy also propose the vendor.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from django.conf import settings

from faults.models import Category, Severity

KNOWN_XIDS = (48, 63, 64, 74, 79, 92, 94, 95)

STEP_DESCRIPTIONS = {
    "drain": "Drain the node in Slurm",
    "reboot": "Reboot the node",
    "reset_gpu": "Reset the GPU when idle",
    "mark_suspect": "Mark the GPU suspect",
    "vendor": "Open an RMA with the vendor",
    "restart_app": "Restart the application",
    "watch": "Watch the error counters",
    "resume": "Resume the node in Slurm",
}
AUTOMATIC_STEPS = frozenset({"drain", "mark_suspect"})  # the steps the portal can do itself


@dataclass(frozen=True)
class Rule:
    kind: str
    title: str
    category: str
    subtype: str
    severity: str
    auto: tuple[str, ...] = ()
    propose: tuple[str, ...] = ()
    propose_vendor_on_repeat: bool = False
    auto_resolve_when_alert_resolves: bool = False
    on_clear: tuple[str, ...] = ()  # proposed when the signal clears
    auto_on_clear: tuple[str, ...] = ()  # performed when the signal clears
    extra: dict = field(default_factory=dict)


_GPU, _NVLINK = Category.GPU, Category.NVLINK_NVSWITCH_PCIE
BUILT_IN_RULES: dict[str, Rule] = {
    rule.kind: rule
    for rule in (
        # ECC errors that keep coming back on one GPU are the memory wearing out, which a reset
        # does not mend: past the repeat threshold the ECC rules propose the vendor too.
        Rule("xid:48", "XID 48 double-bit ECC error", _GPU, "ecc", Severity.CRITICAL,
             auto=("drain",), propose=("reset_gpu",), propose_vendor_on_repeat=True),
        Rule("xid:63", "XID 63 row-remap pending", _GPU, "ecc", Severity.MINOR,
             propose=("reset_gpu",), propose_vendor_on_repeat=True),
        Rule("xid:64", "XID 64 row-remap failure", _GPU, "ecc", Severity.MAJOR,
             auto=("mark_suspect",), propose=("reset_gpu", "vendor")),
        Rule("xid:74", "XID 74 NVLink error", _NVLINK, "nvlink", Severity.MAJOR,
             propose=("reset_gpu",), propose_vendor_on_repeat=True),
        Rule("xid:79", "XID 79 GPU fell off the bus", _GPU, "unresponsive", Severity.CRITICAL,
             auto=("drain", "mark_suspect"), propose=("reboot",), propose_vendor_on_repeat=True),
        Rule("xid:92", "XID 92 excessive single-bit ECC", _GPU, "ecc", Severity.MINOR,
             propose=("watch",), propose_vendor_on_repeat=True),
        Rule("xid:94", "XID 94 contained ECC error", _GPU, "ecc", Severity.MAJOR,
             propose=("restart_app",), propose_vendor_on_repeat=True),
        Rule("xid:95", "XID 95 uncontained ECC error", _GPU, "ecc", Severity.CRITICAL,
             auto=("drain",), propose=("reset_gpu",), propose_vendor_on_repeat=True),
        Rule("ecc", "ECC errors", _GPU, "ecc", Severity.MAJOR, propose=("watch",),
             propose_vendor_on_repeat=True),
        Rule("gpu_unresponsive", "GPU unresponsive", _GPU, "unresponsive", Severity.CRITICAL,
             auto=("drain", "mark_suspect"), propose=("reboot",), propose_vendor_on_repeat=True),
        Rule("nvlink_error", "NVLink errors", _NVLINK, "nvlink", Severity.MAJOR,
             propose=("reset_gpu",), propose_vendor_on_repeat=True),
        Rule("nic_error", "NIC errors", Category.NIC_TRANSCEIVER, "nic", Severity.MAJOR,
             propose=("drain", "reboot")),
        Rule("transceiver_error", "Transceiver errors", Category.NIC_TRANSCEIVER, "transceiver",
             Severity.MAJOR, propose=("drain", "vendor")),
        # A rail NIC down leaves the node without its share of the rail-optimised fabric:
        # multi-node jobs there would run at a fraction of their bandwidth (node health checks
        # drain such nodes too: jobs.drivers.simulator's "NHC: ... link down").
        Rule("nic_link_down", "NIC link down", Category.NIC_TRANSCEIVER, "transceiver",
             Severity.MAJOR, auto=("drain",), propose=("vendor",)),
        Rule("switch_reboot", "Switch rebooted", Category.INTERCONNECT_SWITCH, "",
             Severity.CRITICAL),
        Rule("node_down", "Node DOWN in Slurm", Category.UNCLASSIFIED, "", Severity.CRITICAL,
             on_clear=("resume",)),
        # State changes: fabric polls and switch Actions, the node-state sync, accounting.
        Rule("link_down", "Link down", Category.NIC_TRANSCEIVER, "transceiver", Severity.MAJOR,
             propose=("drain",), on_clear=("resume",)),
        Rule("port_shut", "Port shut down", Category.INTERCONNECT_SWITCH, "", Severity.MINOR,
             on_clear=("resume",)),
        Rule("health_check_drain", "Drained by the node health check", Category.UNCLASSIFIED,
             "", Severity.MAJOR, on_clear=("resume",)),
        Rule("node_fail", "Job ended NODE_FAIL", Category.UNCLASSIFIED, "", Severity.MAJOR,
             propose=("drain",)),
        Rule("switch_unreachable", "Switch unreachable", Category.INTERCONNECT_SWITCH, "",
             Severity.CRITICAL),
        # Fabric findings (fabric.hooks): LLDP against the cabling, and Observation 7.
        Rule("lldp_swapped", "Cables swapped (LLDP disagrees with the cabling)",
             Category.MISCONFIGURATION, "network", Severity.MAJOR),
        Rule("lldp_mismatched", "Link ends somewhere else than cabled (LLDP)",
             Category.MISCONFIGURATION, "network", Severity.MAJOR),
        Rule("lldp_missing", "Cabled link not seen by LLDP", Category.NIC_TRANSCEIVER,
             "transceiver", Severity.MAJOR),
        Rule("rail_imbalance", "Rail imbalance in a running job (Observation 7)",
             Category.INTERCONNECT_SWITCH, "leaf", Severity.MAJOR),
        # BMC event log entries (faults.services.bmc_events). A GPU entry is Table 13's "GPU
        # (HW error)"; power supplies, fans, temperatures and host memory have no row of their
        # own in Table 13, so they wait in "unclassified" for a person to triage.
        Rule("bmc_gpu", "GPU fault in the BMC event log", _GPU, "hardware_error",
             Severity.CRITICAL, propose=("drain", "reboot"), propose_vendor_on_repeat=True),
        Rule("bmc_psu", "Power supply fault in the BMC event log", Category.UNCLASSIFIED, "",
             Severity.MAJOR, propose=("vendor",)),
        Rule("bmc_fan", "Fan fault in the BMC event log", Category.UNCLASSIFIED, "",
             Severity.MAJOR, propose=("vendor",)),
        Rule("bmc_temperature", "Temperature out of range in the BMC event log",
             Category.UNCLASSIFIED, "", Severity.MAJOR, propose=("drain",)),
        Rule("bmc_memory", "Memory fault in the BMC event log", Category.UNCLASSIFIED, "",
             Severity.MAJOR, propose=("drain", "vendor")),
        Rule("user_report", "Reported by a user", Category.UNCLASSIFIED, "", Severity.MAJOR),
        # A user naming a GPU (ECC errors, a GPU gone): take the node out before more jobs land.
        Rule("user_report_gpu", "GPU problem reported by a user", Category.UNCLASSIFIED, "",
             Severity.MAJOR, propose=("drain",)),
        Rule("alert", "Alert", Category.UNCLASSIFIED, "", Severity.MAJOR),
    )
}
# ECC counts with double-bit errors are as serious as XID 48.
DOUBLE_BIT_ECC_RULE = replace(
    BUILT_IN_RULES["xid:48"], kind="ecc", title="Double-bit ECC errors"
)
PLATFORM_KINDS = ("xid", "ecc", "gpu_unresponsive", "nvlink_error", "nic_error",
                  "transceiver_error", "nic_link_down", "switch_reboot")


def rule_for(kind: str) -> Rule:
    """The rule for an event kind, with FAULTS_POLICY_OVERRIDES applied."""
    rule = BUILT_IN_RULES[kind]
    overrides = getattr(settings, "FAULTS_POLICY_OVERRIDES", {}).get(kind)
    if overrides:
        values = {
            key: tuple(value) if key in ("auto", "propose", "on_clear", "auto_on_clear") else value
            for key, value in overrides.items()
        }
        rule = replace(rule, **values)
    return rule


def repeat_threshold() -> int:
    return int(getattr(settings, "FAULTS_REPEAT_THRESHOLD", 2))
