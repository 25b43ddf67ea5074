"""Forms of the fault pages; they only shape input, faults.services decides."""

from __future__ import annotations

from django import forms

from faults.models import Category, RecoveryMethod
from faults.parsing import GPU_KINDS, NIC_KINDS
from faults.policies import KNOWN_XIDS, rule_for
from faults.workflow import Status
from inventory.models import Node, Switch

# What a person can see on a node and report: the platform kinds about a node's own parts.
NODE_EVENT_KINDS = (
    ("xid", "XID error (GPU)"),
    ("ecc", "ECC errors (GPU)"),
    ("gpu_unresponsive", "GPU unresponsive"),
    ("nvlink_error", "NVLink errors (GPU)"),
    ("nic_error", "NIC errors"),
    ("transceiver_error", "Transceiver errors (NIC)"),
    ("nic_link_down", "NIC link down"),
)


class UserReportForm(forms.Form):
    summary = forms.CharField(max_length=300, help_text="One line: what is wrong?")
    # Typed with suggestions (static/js/node_typeahead.js), not a drop-down of every node: a
    # drop-down of 100 nodes was hard to use, and of 12,500 impossible.
    node = forms.ModelChoiceField(
        queryset=Node.objects.all(), required=False, to_field_name="hostname",
        widget=forms.TextInput(attrs={"list": "report-node-options", "autocomplete": "off",
                                      "data-node-typeahead": "", "placeholder": "gpu012"}),
        error_messages={"invalid_choice": "No node of that hostname in the inventory."},
    )
    gpu = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, label="GPU",
        choices=[("", "—"), *((index, f"GPU{index}") for index in range(8))],
    )
    switch = forms.ModelChoiceField(
        queryset=Switch.objects.order_by("hostname"), required=False, to_field_name="hostname"
    )
    category = forms.ChoiceField(
        choices=[("", "I don't know")] + [c for c in Category.choices if c[0] != "unclassified"],
        required=False,
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False)


class TransitionForm(forms.Form):
    to_status = forms.ChoiceField(choices=Status.choices, label="Move to")
    note = forms.CharField(required=False, max_length=5000)
    category = forms.ChoiceField(choices=[("", "—"), *Category.choices], required=False)
    subtype = forms.CharField(required=False, max_length=32)
    recovery_method = forms.ChoiceField(
        choices=[("", "—"), *RecoveryMethod.choices], required=False
    )
    rma_part = forms.CharField(required=False, max_length=200, label="RMA part")
    rma_case_number = forms.CharField(required=False, max_length=100, label="RMA case number")
    rma_expected_at = forms.DateField(required=False, label="RMA expected")
    confirm = forms.BooleanField(required=False, label="Resolve anyway")

    def service_arguments(self) -> dict:
        """Only what the person filled in: blank fields leave the ticket as it is."""
        data = self.cleaned_data
        arguments = {"to_status": data["to_status"], "note": data.get("note", ""),
                     "confirm": bool(data.get("confirm"))}
        for name in ("category", "subtype", "recovery_method", "rma_part", "rma_case_number",
                     "rma_expected_at"):
            if data.get(name) not in (None, ""):
                arguments[name] = data[name]
        return arguments


class NodeEventForm(forms.Form):
    """An XID, ECC, NVLink or NIC event seen on one node: the GPU and NIC are chosen from that
    node's own parts (GPUs by index with their serials: HGX BMCs number them otherwise)."""

    kind = forms.ChoiceField(choices=NODE_EVENT_KINDS, label="Event")
    gpu = forms.ChoiceField(required=False, label="GPU")
    xid = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, label="XID",
        choices=[("", "—"), *((xid, rule_for(f"xid:{xid}").title) for xid in KNOWN_XIDS)],
    )
    single_bit = forms.IntegerField(required=False, min_value=0, label="Single-bit ECC count")
    double_bit = forms.IntegerField(required=False, min_value=0, label="Double-bit ECC count")
    nic = forms.ChoiceField(required=False, label="NIC")
    message = forms.CharField(required=False, max_length=1000, label="What you saw",
                              widget=forms.TextInput(attrs={"placeholder": "a dmesg or log line"}))

    def __init__(self, *args, node: Node, **kwargs):
        super().__init__(*args, **kwargs)
        self.node = node
        self.fields["gpu"].choices = [("", "—")] + [
            (str(gpu.index), f"GPU{gpu.index}" + (f" · serial {gpu.serial}" if gpu.serial else ""))
            for gpu in sorted(node.gpus.all(), key=lambda gpu: gpu.index)
        ]
        self.fields["nic"].choices = [("", "—")] + [
            (nic.device, nic.device + (f" · rail {nic.rail}" if nic.rail is not None else ""))
            for nic in sorted(node.nics.all(), key=lambda nic: nic.device)
        ]

    def clean(self):
        data = super().clean()
        kind = data.get("kind")
        if kind in GPU_KINDS and not data.get("gpu"):
            self.add_error("gpu", "Choose the GPU.")
        if kind in NIC_KINDS and not data.get("nic"):
            self.add_error("nic", "Choose the NIC.")
        if kind == "xid" and data.get("xid") is None:
            self.add_error("xid", "Choose the XID.")
        if kind == "ecc" and not (data.get("single_bit") or data.get("double_bit")):
            self.add_error("double_bit", "Give the error counts nvidia-smi shows.")
        return data

    def event(self) -> dict:
        """The platform event this report is (faults/parsing.py's shape)."""
        data = self.cleaned_data
        event = {"kind": data["kind"], "node": self.node.hostname, "message": data["message"]}
        if data["kind"] in GPU_KINDS:
            event["gpu"] = int(data["gpu"])
        if data["kind"] in NIC_KINDS:
            event["nic"] = data["nic"]
        if data["kind"] == "xid":
            event["xid"] = data["xid"]
        if data["kind"] == "ecc":
            event["ecc"] = {"single_bit": data.get("single_bit") or 0,
                            "double_bit": data.get("double_bit") or 0}
        return event
