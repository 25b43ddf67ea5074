"""Intake parsing: turn what a channel delivered into validated `Incident`s, or say what is wrong.

Nothing here writes; services.intake records the raw delivery first and then applies the
incidents. The fingerprint of an incident is `<component>|<kind>`, where the kind is the
taxonomy category when the event classifies itself (an XID 79 and a user saying "GPU 3 is gone"
both say `gpu`), so two channels reporting one incident meet on one ticket.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from faults.models import Category, Severity, Source
from faults.policies import DOUBLE_BIT_ECC_RULE, KNOWN_XIDS, PLATFORM_KINDS, Rule, rule_for
from inventory.models import GPU, NIC, Node, Switch, SwitchPort
from portal.errors import InvalidInput
from portal.timeparse import parse_datetime_utc

MAX_MESSAGE_LENGTH = 1000
GPU_KINDS = frozenset({"xid", "ecc", "gpu_unresponsive", "nvlink_error"})
NIC_KINDS = frozenset({"nic_error", "transceiver_error", "nic_link_down"})
# Alertmanager alertname -> platform event kind; extend with FAULTS_ALERTNAME_KINDS.
DEFAULT_ALERTNAME_KINDS = {
    "GPUXidError": "xid",
    "GPUEccErrors": "ecc",
    "GPUUnresponsive": "gpu_unresponsive",
    "GPUFellOffTheBus": "gpu_unresponsive",
    "NVLinkErrors": "nvlink_error",
    "NICErrors": "nic_error",
    "TransceiverErrors": "transceiver_error",
    "NICLinkDown": "nic_link_down",  # node_infiniband_state_id == 1 (telemetry/config.py)
    "SwitchReboot": "switch_reboot",
    "NodeDown": "node_down",
}
ALERT_SEVERITIES = {
    "critical": Severity.CRITICAL,
    "page": Severity.CRITICAL,
    "error": Severity.MAJOR,
    "warning": Severity.MAJOR,
    "info": Severity.MINOR,
    "none": Severity.MINOR,
}


@dataclass
class Components:
    node: Node | None = None
    gpu: GPU | None = None
    nic: NIC | None = None
    switch: Switch | None = None
    port: SwitchPort | None = None
    job: str = ""  # a Slurm job id, for a job's NODE_FAIL on no node known to be down

    def key(self) -> str:
        """The component part of a fingerprint: the most specific component named."""
        if self.gpu is not None:
            ident = self.gpu.serial or self.gpu.uuid or f"{self.gpu.node.hostname}/{self.gpu.index}"
            return f"gpu:{ident}"
        if self.nic is not None:
            return f"nic:{self.nic.node.hostname}/{self.nic.device}"
        if self.port is not None:
            return f"port:{self.port.switch.hostname}/{self.port.name}"
        if self.switch is not None:
            return f"switch:{self.switch.hostname}"
        if self.node is not None:
            return f"node:{self.node.hostname}"
        if self.job:
            return f"job:{self.job}"
        return ""


@dataclass
class Incident:
    source: str
    rule: Rule
    components: Components
    summary: str
    detected_at: datetime
    category: str
    subtype: str
    severity: str
    details: dict = field(default_factory=dict)
    alert_fingerprint: str = ""

    @property
    def fingerprint(self) -> str:
        component = self.components.key()
        if not component:
            return ""
        kind = self.category if self.category != Category.UNCLASSIFIED else self.rule.kind
        return f"{component}|{kind}"


# --- components --------------------------------------------------------------------------------


def _lookup_node(hostname, field_name: str) -> Node:
    if not isinstance(hostname, str) or not hostname.strip():
        raise InvalidInput({field_name: ["Name the node by its hostname."]})
    node = Node.objects.select_related("pod").filter(hostname=hostname.strip()).first()
    if node is None:
        raise InvalidInput({field_name: [f"Unknown node {hostname!r}: not in the inventory."]})
    return node


def _lookup_gpu(node: Node, value, field_name: str) -> GPU:
    """A GPU by index (0-7, also as a string), UUID ("GPU-...") or serial, on `node`."""
    gpus = GPU.objects.select_related("node").filter(node=node)
    if isinstance(value, bool) or value is None or value == "":
        raise InvalidInput({field_name: ["Name the GPU by index, UUID or serial."]})
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        gpu = gpus.filter(index=int(value)).first()
    elif isinstance(value, str):
        gpu = gpus.filter(uuid=value).first() or gpus.filter(serial=value).first()
    else:
        raise InvalidInput({field_name: ["Name the GPU by index, UUID or serial."]})
    if gpu is None:
        raise InvalidInput({field_name: [f"Unknown GPU {value!r} on {node.hostname}."]})
    return gpu


def _lookup_nic(node: Node, device, field_name: str) -> NIC:
    if not isinstance(device, str) or not device:
        raise InvalidInput({field_name: ["Name the NIC by device, e.g. mlx5_0."]})
    nic = NIC.objects.select_related("node").filter(node=node, device=device).first()
    if nic is None:
        raise InvalidInput({field_name: [f"Unknown NIC {device!r} on {node.hostname}."]})
    return nic


def _lookup_switch(hostname, field_name: str) -> Switch:
    if not isinstance(hostname, str) or not hostname.strip():
        raise InvalidInput({field_name: ["Name the switch by its hostname."]})
    switch = Switch.objects.select_related("pod").filter(hostname=hostname.strip()).first()
    if switch is None:
        raise InvalidInput({field_name: [f"Unknown switch {hostname!r}: not in the inventory."]})
    return switch


def _lookup_port(switch: Switch, name, field_name: str) -> SwitchPort:
    port = SwitchPort.objects.select_related("switch").filter(switch=switch, name=name).first()
    if port is None:
        raise InvalidInput({field_name: [f"Unknown port {name!r} on {switch.hostname}."]})
    return port


def _timestamp(value, field_name: str) -> datetime:
    if value in (None, ""):
        return timezone.now()
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        parsed = parse_datetime_utc(value)
    except ValueError:
        raise InvalidInput(
            {field_name: ["Use an ISO 8601 date and time, e.g. 2025-01-14T03:12Z."]}
        ) from None
    # Alertmanager sends the zero time for "not ended"; clocks may also run ahead of ours.
    return min(parsed, timezone.now())


def _message(value, field_name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_MESSAGE_LENGTH:
        raise InvalidInput({field_name: [f"Use text of at most {MAX_MESSAGE_LENGTH} characters."]})
    return value.strip()


def _count(value, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput({field_name: ["Use a whole number of 0 or more."]})
    return value


# --- platform events ---------------------------------------------------------------------------


def parse_platform_event(body) -> Incident:
    """Validate one platform event (node agent, DCGM exporter, switch syslog forwarder).

    Shape: {"kind": "xid", "node": "gpu001", "gpu": 3, "xid": 79, "message": "...",
    "observed_at": "2025-01-14T03:12:00Z"}; see the API docs for every kind.
    """
    if not isinstance(body, dict):
        raise InvalidInput({"detail": "An event is a JSON object."})
    return _incident_from_fields(body, source=Source.PLATFORM, prefix="")


def parse_reported_event(body: dict) -> Incident:
    """A platform event a person saw (an XID in dmesg, ECC counts in nvidia-smi) and reported
    from the node page: classified as the platform's own event would be, by a person."""
    return _incident_from_fields(body, source=Source.USER_REPORT, prefix="")


def _incident_from_fields(fields: dict, *, source: str, prefix: str) -> Incident:
    kind = fields.get("kind")
    if kind not in PLATFORM_KINDS:
        raise InvalidInput(
            {f"{prefix}kind": [f"Unknown event kind {kind!r}; known: {', '.join(PLATFORM_KINDS)}."]}
        )
    details: dict = {}
    components = Components()
    if kind == "switch_reboot":
        components.switch = _lookup_switch(fields.get("switch"), f"{prefix}switch")
    else:
        components.node = _lookup_node(fields.get("node"), f"{prefix}node")
    if kind in GPU_KINDS:
        components.gpu = _lookup_gpu(components.node, fields.get("gpu"), f"{prefix}gpu")
    if kind in NIC_KINDS:
        components.nic = _lookup_nic(components.node, fields.get("nic"), f"{prefix}nic")
    if fields.get("port") not in (None, "") and components.switch is not None:
        components.port = _lookup_port(components.switch, fields["port"], f"{prefix}port")

    rule_kind = kind
    if kind == "xid":
        xid = fields.get("xid")
        if isinstance(xid, str) and xid.isdigit():
            xid = int(xid)
        if isinstance(xid, bool) or xid not in KNOWN_XIDS:
            known = ", ".join(str(x) for x in KNOWN_XIDS)
            raise InvalidInput({f"{prefix}xid": [f"Unknown XID {xid!r}; known: {known}."]})
        rule_kind, details["xid"] = f"xid:{xid}", xid
    rule = rule_for(rule_kind)
    if kind == "ecc":
        ecc = fields.get("ecc")
        if not isinstance(ecc, dict):
            raise InvalidInput({f"{prefix}ecc": ["Give {'single_bit': n, 'double_bit': n}."]})
        details["single_bit"] = _count(ecc.get("single_bit", 0), f"{prefix}ecc.single_bit")
        details["double_bit"] = _count(ecc.get("double_bit", 0), f"{prefix}ecc.double_bit")
        if details["double_bit"]:
            rule = DOUBLE_BIT_ECC_RULE
    category, subtype = rule.category, rule.subtype
    if kind == "switch_reboot":
        switch_role = components.switch.role
        if switch_role == Switch.Role.STORAGE:
            category, subtype = Category.STORAGE_SWITCH, "reboot"
        elif switch_role in (Switch.Role.LEAF, Switch.Role.SPINE):
            subtype = switch_role
    message = _message(fields.get("message"), f"{prefix}message")
    if message:
        details["message"] = message
    summary = f"{rule.title} on {_component_words(components)}"
    if kind == "ecc":
        summary += f" ({details['single_bit']} single-bit, {details['double_bit']} double-bit)"
    if source == Source.PLATFORM and components.switch is not None:
        source = Source.SWITCH  # the switch's own log (syslog forwarder), not a node's agent
    return Incident(
        source=source,
        rule=rule,
        components=components,
        summary=summary,
        detected_at=_timestamp(fields.get("observed_at"), f"{prefix}observed_at"),
        category=category,
        subtype=subtype,
        severity=rule.severity,
        details=details,
    )


def _component_words(components: Components) -> str:
    if components.gpu is not None:
        return f"{components.gpu.node.hostname} GPU{components.gpu.index}"
    if components.nic is not None:
        return f"{components.nic.node.hostname} {components.nic.device}"
    if components.port is not None:
        return f"{components.port.switch.hostname} {components.port.name}"
    if components.switch is not None:
        return components.switch.hostname
    return components.node.hostname if components.node else "unknown component"


# --- Alertmanager ------------------------------------------------------------------------------


@dataclass
class AlertDelivery:
    status: str  # firing | resolved
    incident: Incident
    ends_at: datetime | None


def parse_alertmanager(body) -> list[AlertDelivery]:
    """Validate an Alertmanager webhook (payload version 4); every alert or none.

    An alert is mapped by its labels: `alertname` picks the kind (FAULTS_ALERTNAME_KINDS), an
    `xid` label makes it an XID event, `node`/`hostname`/`instance` name the node, `gpu` the GPU
    (index, UUID or serial), `device` the NIC, `switch` the switch, `severity` the severity and
    `category` the taxonomy for alerts of no known kind.
    """
    if not isinstance(body, dict):
        raise InvalidInput({"detail": "An Alertmanager webhook is a JSON object."})
    if body.get("version") != "4":
        version = body.get("version")
        raise InvalidInput({"version": [f"Expected payload version '4', got {version!r}."]})
    if body.get("status") not in ("firing", "resolved"):
        raise InvalidInput({"status": ["Use 'firing' or 'resolved'."]})
    alerts = body.get("alerts")
    if not isinstance(alerts, list) or not alerts:
        raise InvalidInput({"alerts": ["Give a non-empty list of alerts."]})
    errors: dict[str, list[str]] = {}
    deliveries = []
    for position, alert in enumerate(alerts):
        try:
            deliveries.append(_parse_alert(alert, prefix=f"alerts[{position}]."))
        except InvalidInput as error:
            detail = error.detail if isinstance(error.detail, dict) else {"detail": [error.detail]}
            for name, messages in detail.items():
                errors.setdefault(name, []).extend(
                    messages if isinstance(messages, list) else [messages]
                )
    if errors:
        raise InvalidInput(errors)
    return deliveries


def _parse_alert(alert, *, prefix: str) -> AlertDelivery:
    if not isinstance(alert, dict):
        raise InvalidInput({prefix.rstrip("."): ["An alert is an object."]})
    status = alert.get("status")
    if status not in ("firing", "resolved"):
        raise InvalidInput({f"{prefix}status": ["Use 'firing' or 'resolved'."]})
    labels, annotations = alert.get("labels"), alert.get("annotations", {})
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise InvalidInput({f"{prefix}labels": ["Labels are an object of strings."]})
    if not isinstance(annotations, dict):
        raise InvalidInput({f"{prefix}annotations": ["Annotations are an object."]})
    alertname = labels.get("alertname")
    if not alertname:
        raise InvalidInput({f"{prefix}labels.alertname": ["Every alert needs an alertname."]})
    fingerprint = alert.get("fingerprint", "")
    if not isinstance(fingerprint, str) or len(fingerprint) > 64:
        raise InvalidInput({f"{prefix}fingerprint": ["Use Alertmanager's fingerprint string."]})
    kinds = {**DEFAULT_ALERTNAME_KINDS, **getattr(settings, "FAULTS_ALERTNAME_KINDS", {})}
    kind = "xid" if labels.get("xid") else kinds.get(alertname, "alert")
    node_name = labels.get("node") or labels.get("hostname") or labels.get("instance", "")
    node_name = node_name.split(":", 1)[0]
    message = annotations.get("summary") or annotations.get("description") or ""
    label_prefix = f"{prefix}labels."
    if kind in PLATFORM_KINDS:
        fields = {
            "kind": kind,
            "node": node_name,
            "gpu": labels.get("gpu") or labels.get("UUID") or labels.get("gpu_uuid"),
            "xid": labels.get("xid"),
            "nic": labels.get("device") or labels.get("nic"),
            "switch": labels.get("switch") or node_name,
            "port": labels.get("interface") or labels.get("port"),
            "message": str(message)[:MAX_MESSAGE_LENGTH],
            "ecc": {"single_bit": 0, "double_bit": 1 if "double" in alertname.lower() else 0},
        }
        incident = _incident_from_fields(fields, source=Source.ALERTMANAGER, prefix=label_prefix)
    else:
        incident = _generic_alert(kind, alertname, labels, node_name, label_prefix)
        incident.details["message"] = str(message)[:MAX_MESSAGE_LENGTH]
    incident.detected_at = _timestamp(alert.get("startsAt"), f"{prefix}startsAt")
    severity = ALERT_SEVERITIES.get(labels.get("severity", "").lower())
    if severity:
        incident.severity = severity
    incident.alert_fingerprint = fingerprint
    incident.details["alertname"] = alertname
    ends_at = None
    if status == "resolved":
        ends_at = _timestamp(alert.get("endsAt"), f"{prefix}endsAt")
    return AlertDelivery(status=status, incident=incident, ends_at=ends_at)


def _generic_alert(kind, alertname, labels, node_name, prefix) -> Incident:
    components = Components()
    if labels.get("switch"):
        components.switch = _lookup_switch(labels["switch"], f"{prefix}switch")
    elif node_name:
        components.node = _lookup_node(node_name, f"{prefix}node")
        if labels.get("gpu"):
            components.gpu = _lookup_gpu(components.node, labels["gpu"], f"{prefix}gpu")
    else:
        raise InvalidInput({f"{prefix}node": ["Label the alert with a node or a switch."]})
    rule = rule_for(kind if kind == "node_down" else "alert")
    category = labels.get("category") or rule.category
    if category not in Category.values:
        raise InvalidInput({f"{prefix}category": [f"Unknown category {category!r}."]})
    return Incident(
        source=Source.ALERTMANAGER,
        rule=rule,
        components=components,
        summary=f"{alertname} on {_component_words(components)}",
        detected_at=timezone.now(),
        category=category,
        subtype="",
        severity=rule.severity,
        details={},
    )


# --- user reports and Slurm --------------------------------------------------------------------


def reported_gpu(node: Node | None, index: int | None) -> GPU | None:
    """The GPU a person's report names by its index (the form and the API ask for one): on the
    node the report names, since an index alone does not say whose GPU it is."""
    if index is None:
        return None
    if node is None:
        raise InvalidInput({"gpu": ["Name the node the GPU is in."]})
    gpu = GPU.objects.filter(node=node, index=index).first()
    if gpu is None:
        raise InvalidInput({"gpu": [f"{node.hostname} has no GPU{index}."]})
    return gpu


def user_report_incident(
    *,
    node: Node | None,
    gpu: GPU | None,
    switch: Switch | None,
    category: str,
    summary: str,
    detected_at: datetime | None,
) -> Incident:
    components = Components(node=node, gpu=gpu, switch=switch)
    names_a_gpu = gpu is not None or category == Category.GPU
    rule = rule_for("user_report_gpu" if names_a_gpu and node is not None else "user_report")
    return Incident(
        source=Source.USER_REPORT,
        rule=rule,
        components=components,
        summary=summary,
        detected_at=detected_at or timezone.now(),
        category=category or Category.UNCLASSIFIED,
        subtype="",
        severity=rule.severity,
    )


def slurm_incident(*, node: Node, state: str, reason: str) -> Incident:
    rule = rule_for("node_down")
    summary = f"{node.hostname} {state} in Slurm" + (f": {reason}" if reason else "")
    return Incident(
        source=Source.SLURM,
        rule=rule,
        components=Components(node=node),
        summary=summary[:300],
        detected_at=timezone.now(),
        category=rule.category,
        subtype="",
        severity=rule.severity,
        details={"state": state, "reason": reason},
    )


# Fabric finding kinds that open tickets; "unexpected" neighbours are shown, not ticketed.
FABRIC_FINDING_RULES = {
    "swapped": "lldp_swapped",
    "mismatched": "lldp_mismatched",
    "missing": "lldp_missing",
    "rail_imbalance": "rail_imbalance",
}


def fabric_incident(finding) -> Incident | None:
    """A fabric.hooks.FabricFinding as an incident on its switch port (LLDP) or its leaf (rail
    imbalance), so repeated reports of one problem attach to one ticket."""
    kind = FABRIC_FINDING_RULES.get(finding.kind)
    if kind is None or not finding.switches:
        return None
    rule = rule_for(kind)
    switch = Switch.objects.filter(hostname=finding.switches[0]).first()
    if switch is None:
        return None
    port = None
    if finding.ports:  # "leaf-p1-r2:Ethernet4"
        port_name = finding.ports[0].rpartition(":")[2]
        port = SwitchPort.objects.filter(switch=switch, name=port_name).first()
    return Incident(
        source=Source.SWITCH,
        rule=rule,
        components=Components(switch=switch, port=port),
        summary=finding.summary[:300],
        detected_at=timezone.now(),
        category=rule.category,
        subtype=rule.subtype,
        severity=rule.severity,
        details={"finding": finding.key, "kind": finding.kind, "switches": list(finding.switches),
                 "ports": list(finding.ports), "nodes": list(finding.nodes)},
    )
