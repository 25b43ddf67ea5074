"""The topology the inventory records, drawn (an SVG laid out here, drawn by the template), and
the inventory's validation report. Inventory pages: what the switches report live is fabric's
(fabric/views/)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.generic import TemplateView

from inventory import selectors
from inventory.forms import ValidationFilterForm
from inventory.hostlist import compress_hostlist
from inventory.revision import cached_by_revision
from inventory.validation import ERROR, RULES, current_violations
from inventory.views.base import InventoryPageMixin

# Geometry of the picture, in SVG user units (the viewBox scales them to the screen).
LEAF_WIDTH, LEAF_HEIGHT, LEAF_GAP = 138, 50, 14
SPINE_HEIGHT = 50
POD_PADDING, POD_LABEL = 14, 30
TIER_GAP = 125  # vertical room for the leaf-spine links
MARGIN = 16


@dataclass(frozen=True)
class Box:
    x: int
    y: int
    width: int
    height: int

    @property
    def centre_x(self) -> int:
        return self.x + self.width // 2

    @property
    def bottom(self) -> int:
        return self.y + self.height


@dataclass(frozen=True)
class PlacedSwitch:
    switch: selectors.FabricSwitch
    box: Box
    nodes: int = 0  # leafs: nodes cabled to it
    links: int = 0  # active leaf-spine links


@dataclass(frozen=True)
class Link:
    leaf: str
    spine: str
    count: int
    rail: int | None
    x1: int
    y1: int
    x2: int
    y2: int
    unusual: bool  # differs from the fabric's usual links per pair (0 included)
    label_x: int  # where an unusual count is written, near the leaf end
    label_y: int


@dataclass(frozen=True)
class PlacedPod:
    name: str
    box: Box
    label_x: int
    label_y: int
    leafs: list[PlacedSwitch]


def fabric_picture(summary: selectors.FabricSummary, usual: int | None = None) -> dict:
    """Place pods and their leafs above and below a row of spines, and every leaf-spine link.

    Two pods (SAKURAONE) become one pod above and one below the spines, so each row holds eight
    leafs and the picture stays readable at 1366 px; more pods stack further out.
    """
    pods = list(summary.leafs_by_pod.items())
    leafs_per_row = max((len(leafs) for _, leafs in pods), default=0)
    pod_width = leafs_per_row * LEAF_WIDTH + max(leafs_per_row - 1, 0) * LEAF_GAP
    pod_height = POD_LABEL + LEAF_HEIGHT + 2 * POD_PADDING
    width = max(pod_width + 2 * POD_PADDING + 2 * MARGIN, 640)
    above, below = pods[: (len(pods) + 1) // 2], pods[(len(pods) + 1) // 2 :]
    spine_y = MARGIN + len(above) * (pod_height + TIER_GAP)
    height = spine_y + SPINE_HEIGHT + len(below) * (pod_height + TIER_GAP) + MARGIN

    spine_count = len(summary.spines)
    spine_width = LEAF_WIDTH
    if spine_count:
        room = width - 2 * MARGIN - (spine_count - 1) * LEAF_GAP
        spine_width = min(LEAF_WIDTH, room // spine_count)
    spines_width = spine_count * spine_width + max(spine_count - 1, 0) * LEAF_GAP
    spine_x0 = (width - spines_width) // 2
    spines = [
        PlacedSwitch(
            spine,
            Box(spine_x0 + i * (spine_width + LEAF_GAP), spine_y, spine_width, SPINE_HEIGHT),
            links=sum(
                count for (_, spine_id), count in summary.links.items() if spine_id == spine.id
            ),
        )
        for i, spine in enumerate(summary.spines)
    ]

    pod_x = (width - pod_width) // 2 - POD_PADDING
    placed_pods = []
    for row, (pod, leafs) in enumerate(above):
        top = spine_y - TIER_GAP - pod_height - row * (pod_height + TIER_GAP)
        placed_pods.append((_place_pod(summary, pod, leafs, pod_x, top, pod_width, True), True))
    for row, (pod, leafs) in enumerate(below):
        top = spine_y + SPINE_HEIGHT + TIER_GAP + row * (pod_height + TIER_GAP)
        placed_pods.append((_place_pod(summary, pod, leafs, pod_x, top, pod_width, False), False))

    if usual is None:
        usual = Counter(summary.links.values()).most_common(1)[0][0] if summary.links else 0
    links = []
    for placed, is_above in placed_pods:
        for leaf in placed.leafs:
            for spine in spines:
                count = summary.links.get((leaf.switch.id, spine.switch.id), 0)
                x1, x2 = leaf.box.centre_x, spine.box.centre_x
                y1 = leaf.box.bottom if is_above else leaf.box.y
                y2 = spine.box.y if is_above else spine.box.bottom
                links.append(
                    Link(
                        leaf.switch.hostname,
                        spine.switch.hostname,
                        count,
                        leaf.switch.rail,
                        x1,
                        y1,
                        x2,
                        y2,
                        count != usual,
                        x1 + (x2 - x1) // 5,
                        y1 + (y2 - y1) // 5,
                    )
                )
    return {
        "width": width,
        "height": height,
        "pods": [placed for placed, _ in placed_pods],
        "spines": spines,
        "links": links,
        "usual_links": usual,
    }


def _place_pod(summary, pod: str, leafs, x: int, top: int, pod_width: int, above: bool):
    # The label sits on the side away from the spines, so links never cross it.
    if above:
        label_y, leaf_y = top + POD_PADDING + 16, top + POD_PADDING + POD_LABEL
    else:
        leaf_y, label_y = top + POD_PADDING, top + POD_PADDING + LEAF_HEIGHT + 26
    return PlacedPod(
        pod,
        Box(x, top, pod_width + 2 * POD_PADDING, POD_LABEL + LEAF_HEIGHT + 2 * POD_PADDING),
        x + POD_PADDING,
        label_y,
        [
            PlacedSwitch(
                leaf,
                Box(x + POD_PADDING + i * (LEAF_WIDTH + LEAF_GAP), leaf_y, LEAF_WIDTH, LEAF_HEIGHT),
                nodes=summary.nodes_per_leaf.get(leaf.id, 0),
                links=summary.uplinks(leaf.id),
            )
            for i, leaf in enumerate(leafs)
        ],
    )


# More pods than this and the picture shows one pod at a time (at scale 20, forty pods made a
# 650 KB page of 12,000 elements that no one could read), with a table of all pods beside it.
POD_PICTURE_LIMIT = 4


@dataclass(frozen=True)
class PodRow:
    name: str
    leafs: int
    nodes: int
    uplinks: int
    unusual_pairs: int  # leaf-spine pairs whose link count differs from the fabric's usual


def pod_rows(summary: selectors.FabricSummary, usual: int) -> list[PodRow]:
    rows = []
    for pod, leafs in summary.leafs_by_pod.items():
        pairs = [(leaf.id, spine.id) for leaf in leafs for spine in summary.spines]
        rows.append(
            PodRow(
                pod,
                len(leafs),
                len(summary.hostnames_by_pod.get(pod, [])),
                sum(summary.links.get(pair, 0) for pair in pairs),
                sum(1 for pair in pairs if summary.links.get(pair, 0) != usual),
            )
        )
    return rows


class TopologyView(InventoryPageMixin, TemplateView):
    section = "topology"
    template_name = "inventory/topology.html"

    def get(self, request, *args, **kwargs):
        # Whole-fleet counts change only with the inventory: computed once per change.
        summary = cached_by_revision("fabric-summary", selectors.fabric_summary)
        pods = list(summary.leafs_by_pod)
        usual = Counter(summary.links.values()).most_common(1)[0][0] if summary.links else 0
        shown_pod, rows = None, []
        if len(pods) > POD_PICTURE_LIMIT:
            rows = pod_rows(summary, usual)
            shown_pod = request.GET.get("pod") or next(
                (row.name for row in rows if row.unusual_pairs), pods[0]
            )
            if shown_pod not in summary.leafs_by_pod:
                raise Http404(f"No pod named {shown_pod!r} has leafs.")
        context = self.get_context_data(
            summary=summary,
            fleet_leaf_count=sum(len(leafs) for leafs in summary.leafs_by_pod.values()),
            fleet_link_count=sum(summary.links.values()),
            pod_rows=rows,
            shown_pod=shown_pod,
            **self.picture_context(summary.only_pod(shown_pod) if shown_pod else summary, usual),
            **kwargs,
        )
        return self.render_to_response(context)

    @staticmethod
    def picture_context(summary: selectors.FabricSummary, usual: int) -> dict:
        picture = fabric_picture(summary, usual)
        picture["pod_hosts"] = {
            pod: (compress_hostlist(hostnames), len(hostnames))
            for pod, hostnames in summary.hostnames_by_pod.items()
        }
        matrix = [
            (
                leaf,
                [summary.links.get((leaf.id, spine.id), 0) for spine in summary.spines],
                summary.uplinks(leaf.id),
                summary.nodes_per_leaf.get(leaf.id, 0),
            )
            for leafs in summary.leafs_by_pod.values()
            for leaf in leafs
        ]
        return {
            "picture": picture,
            "matrix": matrix,
            "matrix_spines": summary.spines,
            "leaf_count": len(matrix),
            "spine_count": len(summary.spines),
            "link_count": sum(summary.links.values()),
        }


# Which page a violation's object reference opens.
REFERENCE_LABELS = {
    "node": "node",
    "nic": "NIC",
    "switch": "switch",
    "port": "port",
    "spine": "spine",
    "cable": "cable",
    "cables": "cables",
    "node_b": "node",
    "nic_b": "NIC",
    "switch_b": "switch",
    "port_b": "port",
}


def violation_references(objects: dict[str, str]) -> list[tuple[str, str, str | None]]:
    """(label, value, url or None) for each object a violation names, linked where a page
    exists: nodes, their NICs, switches and their ports."""
    references = []
    for key, value in objects.items():
        url = None
        side = "_b" if key.endswith("_b") else ""
        if key in ("node", "node_b"):
            url = reverse("inventory:node-detail", args=[value])
        elif key in ("nic", "nic_b") and objects.get(f"node{side}"):
            node_url = reverse("inventory:node-detail", args=[objects[f"node{side}"]])
            url = f"{node_url}#nic-{value}"
        elif key in ("switch", "switch_b", "spine"):
            url = reverse("inventory:switch-detail", args=[value])
        elif key in ("port", "port_b") and objects.get(f"switch{side}"):
            switch_url = reverse("inventory:switch-detail", args=[objects[f"switch{side}"]])
            url = f"{switch_url}#port-{value}"
        references.append((REFERENCE_LABELS.get(key, key), value, url))
    return references


def group_violations(violations) -> list[dict]:
    """Violations grouped by rule (in the order they come: errors first), each row with the
    objects it names, and each group's error and warning counts."""
    groups: dict[str, dict] = {}
    for violation in violations:
        group = groups.setdefault(
            violation.rule,
            {
                "rule": violation.rule,
                "description": RULES.get(violation.rule, ""),
                "rows": [],
                "errors": 0,
                "warnings": 0,
            },
        )
        group["rows"].append((violation, violation_references(violation.objects)))
        group["errors" if violation.severity == ERROR else "warnings"] += 1
    return list(groups.values())


class ValidationView(InventoryPageMixin, TemplateView):
    section = "validation"
    template_name = "inventory/validation.html"

    def get(self, request, *args, **kwargs):
        form = ValidationFilterForm(request.GET)
        valid = form.is_valid()
        rule = form.cleaned_data.get("rule") if valid else ""
        # The whole fleet is checked (five queries) so every rule's count shows beside the
        # filter; the rule filter only narrows what is listed.
        everything = current_violations() if valid else []
        shown = [violation for violation in everything if not rule or violation.rule == rule]
        error_count = sum(1 for violation in shown if violation.severity == ERROR)
        context = self.get_context_data(
            form=form,
            groups=group_violations(shown),
            counts=Counter(violation.rule for violation in everything),
            rules=RULES,
            violation_count=len(shown),
            error_count=error_count,
            warning_count=len(shown) - error_count,
            current_rule=rule,
            **kwargs,
        )
        return TemplateResponse(request, self.template_name, context, status=200 if valid else 400)
