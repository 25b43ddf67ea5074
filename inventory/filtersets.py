"""django-filter filtersets of the inventory API: by pod, rack, role, rail, status, switch, node
name and Slurm hostlist expressions.

`?hostlist=gpu[001-016,020]` names hosts that must all exist (and be visible to the user): a
malformed expression or an unknown host is a 400 naming `hostlist`, never a silently shorter
list.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django_filters import rest_framework as filters

from inventory.hostlist import compress_hostlist, expand_hostlist
from inventory.models import (
    GPU,
    NIC,
    Allocation,
    Cable,
    CableStatus,
    LifecycleStatus,
    Node,
    Pod,
    Rack,
    Switch,
    SwitchPort,
)
from inventory.selectors import active_cables, nodes_from_hostlist
from portal.errors import InvalidInput


def _nodes_named(filterset: filters.FilterSet, expression: str) -> list[Node]:
    """The nodes a hostlist names; InvalidInput naming `hostlist` for any the user cannot see."""
    return nodes_from_hostlist(user=filterset.request.user, expression=expression)


def _switches_named(expression: str) -> list[str]:
    hostnames = expand_hostlist(expression)
    known = set(Switch.objects.filter(hostname__in=hostnames).values_list("hostname", flat=True))
    missing = [hostname for hostname in hostnames if hostname not in known]
    if missing:
        raise InvalidInput({"hostlist": [f"unknown switch(es): {compress_hostlist(missing)}"]})
    return hostnames


def _active_cable_ends(**lookups) -> tuple[QuerySet, QuerySet]:
    """Ids of NICs and ports, on either side of an active cable matching `lookups` (written for
    side B's far end, e.g. port__switch__hostname)."""
    cables = active_cables()
    side_a = cables.filter(**{f"b_{key}": value for key, value in lookups.items()})
    side_b = cables.filter(**{f"a_{key}": value for key, value in lookups.items()})
    return side_a, side_b


class PodFilterSet(filters.FilterSet):
    class Meta:
        model = Pod
        fields = ["name"]


class RackFilterSet(filters.FilterSet):
    pod = filters.CharFilter(field_name="pod__name", help_text="Pod name")

    class Meta:
        model = Rack
        fields = ["name", "pod"]


class NodeFilterSet(filters.FilterSet):
    hostname = filters.CharFilter()
    hostlist = filters.CharFilter(
        method="filter_hostlist", help_text="Slurm hostlist, e.g. gpu[001-016,020]"
    )
    pod = filters.CharFilter(field_name="pod__name", help_text="Pod name")
    pod_id = filters.NumberFilter()
    rack = filters.CharFilter(field_name="rack__name", help_text="Rack name")
    status = filters.MultipleChoiceFilter(choices=LifecycleStatus.choices)
    slurm_state = filters.CharFilter()
    model = filters.CharFilter()

    class Meta:
        model = Node
        fields = ["hostname", "pod", "pod_id", "rack", "status", "slurm_state", "model"]

    def filter_hostlist(self, queryset, name, value):
        return queryset.filter(pk__in=[node.pk for node in _nodes_named(self, value)])


class _OnNodeFilterSet(filters.FilterSet):
    """Filters of things inside a node (GPUs, NICs): by the node's name, hostlist, pod, rack."""

    node = filters.CharFilter(field_name="node__hostname", help_text="Node hostname")
    node_id = filters.NumberFilter()
    hostlist = filters.CharFilter(
        method="filter_hostlist", help_text="Nodes as a Slurm hostlist, e.g. gpu[001-016,020]"
    )
    pod = filters.CharFilter(field_name="node__pod__name", help_text="Pod name of the node")
    rack = filters.CharFilter(field_name="node__rack__name", help_text="Rack name of the node")
    node_status = filters.ChoiceFilter(field_name="node__status", choices=LifecycleStatus.choices)

    def filter_hostlist(self, queryset, name, value):
        return queryset.filter(node_id__in=[node.pk for node in _nodes_named(self, value)])


class GPUFilterSet(_OnNodeFilterSet):
    class Meta:
        model = GPU
        fields = ["node", "node_id", "hostlist", "pod", "rack", "index", "model"]


class NICFilterSet(_OnNodeFilterSet):
    role = filters.MultipleChoiceFilter(choices=NIC.Role.choices)
    rail = filters.NumberFilter()
    switch = filters.CharFilter(
        method="filter_switch", help_text="Hostname of the switch the NIC is cabled to"
    )

    class Meta:
        model = NIC
        fields = [
            "node",
            "node_id",
            "hostlist",
            "pod",
            "rack",
            "role",
            "rail",
            "device",
            "speed_gbps",
            "switch",
        ]

    def filter_switch(self, queryset, name, value):
        side_a, side_b = _active_cable_ends(port__switch__hostname=value)
        return queryset.filter(Q(pk__in=side_a.values("a_nic")) | Q(pk__in=side_b.values("b_nic")))


class SwitchFilterSet(filters.FilterSet):
    hostname = filters.CharFilter()
    hostlist = filters.CharFilter(
        method="filter_hostlist", help_text="Switches as a hostlist, e.g. leaf-p1-r[0-7]"
    )
    role = filters.MultipleChoiceFilter(choices=Switch.Role.choices)
    pod = filters.CharFilter(field_name="pod__name", help_text="Pod name")
    rack = filters.CharFilter(field_name="rack__name", help_text="Rack name")
    rail = filters.NumberFilter()
    status = filters.MultipleChoiceFilter(choices=LifecycleStatus.choices)

    class Meta:
        model = Switch
        fields = ["hostname", "hostlist", "role", "pod", "rack", "rail", "status", "model"]

    def filter_hostlist(self, queryset, name, value):
        return queryset.filter(hostname__in=_switches_named(value))


class SwitchPortFilterSet(filters.FilterSet):
    switch = filters.CharFilter(field_name="switch__hostname", help_text="Switch hostname")
    switch_id = filters.NumberFilter()
    role = filters.ChoiceFilter(
        field_name="switch__role", choices=Switch.Role.choices, help_text="Role of the switch"
    )
    pod = filters.CharFilter(field_name="switch__pod__name", help_text="Pod of the switch")
    rail = filters.NumberFilter(field_name="switch__rail", help_text="Rail of the leaf")
    node = filters.CharFilter(
        method="filter_node", help_text="Hostname of the node cabled to the port"
    )
    breakout = filters.BooleanFilter(
        field_name="breakout_mode", method="filter_breakout", help_text="Broken-out cages only"
    )

    class Meta:
        model = SwitchPort
        fields = [
            "switch",
            "switch_id",
            "role",
            "pod",
            "rail",
            "name",
            "speed_gbps",
            "admin_status",
            "oper_status",
            "node",
            "breakout",
        ]

    def filter_node(self, queryset, name, value):
        side_a, side_b = _active_cable_ends(nic__node__hostname=value)
        return queryset.filter(
            Q(pk__in=side_a.values("a_port")) | Q(pk__in=side_b.values("b_port"))
        )

    def filter_breakout(self, queryset, name, value):
        return queryset.exclude(breakout_mode="") if value else queryset.filter(breakout_mode="")


class CableFilterSet(filters.FilterSet):
    status = filters.MultipleChoiceFilter(choices=CableStatus.choices)
    type = filters.ChoiceFilter(choices=Cable.Type.choices)
    node = filters.CharFilter(method="filter_node", help_text="Hostname of a node at either end")
    hostlist = filters.CharFilter(
        method="filter_hostlist", help_text="Nodes at either end, as a Slurm hostlist"
    )
    switch = filters.CharFilter(
        method="filter_switch", help_text="Hostname of a switch at either end"
    )
    rail = filters.NumberFilter(method="filter_rail", help_text="Rail of the NIC at either end")
    pod = filters.CharFilter(method="filter_pod", help_text="Pod of the node at either end")

    class Meta:
        model = Cable
        fields = ["status", "type", "node", "hostlist", "switch", "rail", "pod", "label"]

    def filter_node(self, queryset, name, value):
        return queryset.filter(Q(a_nic__node__hostname=value) | Q(b_nic__node__hostname=value))

    def filter_hostlist(self, queryset, name, value):
        ids = [node.pk for node in _nodes_named(self, value)]
        return queryset.filter(Q(a_nic__node_id__in=ids) | Q(b_nic__node_id__in=ids))

    def filter_switch(self, queryset, name, value):
        return queryset.filter(
            Q(a_port__switch__hostname=value) | Q(b_port__switch__hostname=value)
        )

    def filter_rail(self, queryset, name, value):
        return queryset.filter(Q(a_nic__rail=value) | Q(b_nic__rail=value))

    def filter_pod(self, queryset, name, value):
        return queryset.filter(Q(a_nic__node__pod__name=value) | Q(b_nic__node__pod__name=value))


class AllocationFilterSet(filters.FilterSet):
    tenant = filters.CharFilter(field_name="tenant__slug", help_text="Tenant slug")
    node = filters.CharFilter(
        method="filter_node", help_text="Allocations holding this node (hostname)"
    )
    current = filters.BooleanFilter(method="filter_current", help_text="In force now")

    class Meta:
        model = Allocation
        fields = ["tenant", "node", "current"]

    def filter_node(self, queryset, name, value):
        return queryset.filter(pk__in=Allocation.objects.filter(nodes__hostname=value).values("pk"))

    def filter_current(self, queryset, name, value):
        current = Allocation.objects.current().values("pk")
        return queryset.filter(pk__in=current) if value else queryset.exclude(pk__in=current)
