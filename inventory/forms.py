"""Filter forms of the inventory list pages: they turn query strings into selector filters and
name the field of any bad value, so a typo in a hostlist is a message, never a 500."""

from __future__ import annotations

from django import forms

from inventory.hostlist import expand_hostlist
from inventory.models import (
    Cable,
    CableStatus,
    ComponentKind,
    LifecycleStatus,
    Node,
    Pod,
    Rack,
    Switch,
)
from inventory.validation import RULES
from portal.errors import InvalidInput
from portal.natural_sort import natural_sorted


def _blank_first(choices, label: str = "any") -> list[tuple[str, str]]:
    return [("", label), *[(str(value), str(text)) for value, text in choices]]


def _pod_choices():
    names = natural_sorted(Pod.objects.values_list("name", flat=True))  # p2 before p10
    return _blank_first((name, name) for name in names)


class FilterForm(forms.Form):
    """A GET form whose cleaned, non-empty values are the selector's `filters`."""

    def filters(self) -> dict[str, str]:
        return {name: value for name, value in self.cleaned_data.items() if value not in ("", None)}


class NodeFilterForm(FilterForm):
    hostlist = forms.CharField(
        required=False,
        label="Hosts",
        widget=forms.TextInput(
            attrs={"placeholder": "gpu[001-016,020]", "spellcheck": "false", "type": "search"}
        ),
        help_text="A Slurm hostlist expression",
    )
    pod = forms.ChoiceField(required=False)
    rack = forms.ChoiceField(required=False)
    status = forms.ChoiceField(required=False, choices=_blank_first(LifecycleStatus.choices))
    slurm_state = forms.ChoiceField(required=False, label="Slurm state")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pod"].choices = _pod_choices()
        self.fields["rack"].choices = _blank_first(
            (name, name) for name in Rack.objects.values_list("name", flat=True)
        )
        # Only states Slurm has reported so far: the jobs app writes them as it syncs.
        states = (
            Node.objects.exclude(slurm_state="")
            .values_list("slurm_state", flat=True)
            .distinct()
            .order_by("slurm_state")
        )
        self.fields["slurm_state"].choices = _blank_first((state, state) for state in states)

    def clean_hostlist(self) -> str:
        expression = self.cleaned_data["hostlist"].strip()
        if expression:
            try:
                expand_hostlist(expression)
            except InvalidInput as error:
                messages = error.detail.get("hostlist") if isinstance(error.detail, dict) else None
                raise forms.ValidationError(messages or str(error.detail)) from error
        return expression


class SwitchFilterForm(FilterForm):
    role = forms.ChoiceField(required=False, choices=_blank_first(Switch.Role.choices))
    pod = forms.ChoiceField(required=False)
    status = forms.ChoiceField(required=False, choices=_blank_first(LifecycleStatus.choices))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pod"].choices = _pod_choices()


class CableFilterForm(FilterForm):
    status = forms.ChoiceField(required=False, choices=_blank_first(CableStatus.choices))
    type = forms.ChoiceField(required=False, choices=_blank_first(Cable.Type.choices))
    switch = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "leaf-p1-r0", "type": "search"}),
    )
    node = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "gpu001", "type": "search"}),
    )
    # A cable number on any page links here: the list narrowed to that one cable.
    cable = forms.IntegerField(required=False, min_value=1, label="Cable #")

    def clean_switch(self) -> str:
        hostname = self.cleaned_data["switch"].strip()
        if hostname and not Switch.objects.filter(hostname=hostname).exists():
            raise forms.ValidationError(f"No switch {hostname!r}.")
        return hostname


class ValidationFilterForm(FilterForm):
    rule = forms.ChoiceField(
        required=False, choices=_blank_first(((rule, rule) for rule in RULES), "all rules")
    )


class HardwareSearchForm(FilterForm):
    q = forms.CharField(
        required=False,
        label="Search",
        max_length=100,
        widget=forms.TextInput(
            attrs={
                "type": "search",
                "placeholder": "GPU UUID or serial, PCI bus id, MAC, node serial",
                "spellcheck": "false",
            }
        ),
    )


class SpareStockForm(forms.Form):
    """The spares page's "set a shelf" form (POST): a part type at a site, its count on hand and
    its minimum; blank counts are left as they are. The shape checks are here; the rules (fewer
    on hand than cases hold, an unknown type) are inventory.spares.spare_stock_set's, and its
    refusal is shown beside the field it names."""

    kind = forms.ChoiceField(label="Part type", choices=ComponentKind.choices)
    site = forms.CharField(max_length=64)
    on_hand = forms.IntegerField(label="On hand", required=False, min_value=0,
                                 max_value=1_000_000)
    minimum = forms.IntegerField(required=False, min_value=0, max_value=1_000_000)

    def clean(self):
        cleaned = super().clean()
        if not self.errors and cleaned.get("on_hand") is None and cleaned.get("minimum") is None:
            self.add_error("on_hand", "Give the count on hand, the minimum, or both.")
        return cleaned
