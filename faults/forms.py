"""Forms of the fault pages; they only shape input, faults.services decides."""

from __future__ import annotations

from django import forms

from faults.models import Category, RecoveryMethod
from faults.workflow import Status
from inventory.models import Node, Switch


class UserReportForm(forms.Form):
    summary = forms.CharField(max_length=300, help_text="One line: what is wrong?")
    node = forms.ModelChoiceField(
        queryset=Node.objects.order_by("hostname"), required=False, to_field_name="hostname"
    )
    gpu = forms.IntegerField(required=False, min_value=0, max_value=7, label="GPU index")
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

    def service_arguments(self) -> dict:
        """Only what the person filled in: blank fields leave the ticket as it is."""
        data = self.cleaned_data
        arguments = {"to_status": data["to_status"], "note": data.get("note", "")}
        for name in ("category", "subtype", "recovery_method", "rma_part", "rma_case_number",
                     "rma_expected_at"):
            if data.get(name) not in (None, ""):
                arguments[name] = data[name]
        return arguments
