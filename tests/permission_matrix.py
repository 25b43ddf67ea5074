"""The permission matrix (issue 8): every endpoint and page x the five roles x own/other tenant.

`MATRIX` maps each named route of the URL conf to the requests that exercise it and the status
each role must get. tests/test_permission_matrix.py walks the URL conf, so a new route without
an entry here fails CI until somebody decides who may use it.

Writes are probed with an empty body: a role that may write gets a 400 (its request reached
validation and changed nothing), a role that may not gets a 403. Tenant-private objects are
probed twice, for the tenant admin's own tenant and for another one (which must be a 404).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

ROLES = ("admin", "operator", "oncall", "viewer", "tenant_admin", "anonymous")


def statuses(admin, operator, oncall, viewer, tenant_admin, anonymous) -> dict[str, int]:
    return dict(zip(ROLES, (admin, operator, oncall, viewer, tenant_admin, anonymous), strict=True))


# Common rows. API: anonymous is 401 (token auth announces itself). Pages: anonymous -> login.
API_READ_ALL = statuses(200, 200, 200, 200, 200, 401)
API_READ_CLUSTER = statuses(200, 200, 200, 200, 403, 401)
API_WRITE_OPERATORS = statuses(400, 400, 403, 403, 403, 401)
API_WRITE_RESPONDERS = statuses(400, 400, 400, 403, 403, 401)
PAGE_ALL = statuses(200, 200, 200, 200, 200, 302)
PAGE_CLUSTER = statuses(200, 200, 200, 200, 403, 302)
PAGE_OPERATORS = statuses(200, 200, 403, 403, 403, 302)
PUBLIC = statuses(200, 200, 200, 200, 200, 200)


@dataclass(frozen=True)
class Probe:
    """One request: `path(world)` builds the URL from the objects the test made."""

    method: str
    path: Callable[[object], str]
    expect: dict[str, int]
    body: dict | None = None
    note: str = ""


@dataclass(frozen=True)
class Route:
    probes: tuple[Probe, ...] = field(default_factory=tuple)
    exempt: str = ""  # why this route is not probed (must say why)


def get(path, expect, note=""):
    return Probe("GET", path if callable(path) else (lambda world, p=path: p), expect, note=note)


def post(path, expect, body=None, note=""):
    return Probe(
        "POST",
        path if callable(path) else (lambda world, p=path: p),
        expect,
        body=body or {},
        note=note,
    )


MATRIX: dict[str, Route] = {
    # --- portal pages -------------------------------------------------------------------------
    "dashboard": Route((get("/", PAGE_ALL),)),
    "login": Route(exempt="the login form itself: public by definition"),
    "logout": Route(exempt="ends the session; POST only, every role"),
    "action-list": Route((get("/actions/", PAGE_CLUSTER),)),
    "action-detail": Route((get(lambda w: f"/actions/{w.action.pk}/", PAGE_CLUSTER),)),
    "action-cancel": Route(
        (post(lambda w: f"/actions/{w.action.pk}/cancel/", statuses(302, 302, 302, 403, 403, 302)),)
    ),
    "audit-list": Route((get("/audit/", PAGE_OPERATORS),)),
    "tenant-list": Route((get("/tenants/", PAGE_ALL),)),
    "tenant-detail": Route(
        (
            get(lambda w: f"/tenants/{w.own_tenant.slug}/", PAGE_ALL),
            get(
                lambda w: f"/tenants/{w.other_tenant.slug}/", statuses(200, 200, 200, 200, 404, 302)
            ),
            post(
                lambda w: f"/tenants/{w.own_tenant.slug}/",
                statuses(400, 400, 403, 403, 403, 302),
                note="allocating nodes: operators only; an empty form is a 400",
            ),
        )
    ),
    "tenant-allocations-csv": Route(
        (
            get(lambda w: f"/tenants/{w.own_tenant.slug}/allocations.csv", PAGE_ALL),
            get(
                lambda w: f"/tenants/{w.other_tenant.slug}/allocations.csv",
                statuses(200, 200, 200, 200, 404, 302),
            ),
        )
    ),
    "tenant-usage-csv": Route(
        (
            get(lambda w: f"/tenants/{w.own_tenant.slug}/usage.csv", PAGE_ALL),
            get(
                lambda w: f"/tenants/{w.other_tenant.slug}/usage.csv",
                statuses(200, 200, 200, 200, 404, 302),
            ),
        )
    ),
    "allocation-end": Route(
        (
            post(
                lambda w: f"/tenants/{w.own_tenant.slug}/allocations/{w.allocation.pk}/end/",
                statuses(302, 302, 403, 403, 403, 302),
            ),
        )
    ),
    # --- operations and docs ------------------------------------------------------------------
    "healthz": Route((get("/healthz", PUBLIC),)),
    "readyz": Route(
        exempt="reports dependencies; public for load balancers, tested in test_operations"
    ),
    "metrics": Route((get("/metrics", PUBLIC),)),
    "schema": Route((get("/api/schema/", PUBLIC),)),
    "api-docs": Route((get("/api/docs/", PUBLIC),)),
    # --- portal API ---------------------------------------------------------------------------
    "api:api-root": Route((get("/api/", API_READ_CLUSTER),)),
    "api:me": Route((get("/api/me/", API_READ_ALL),)),
    "api:action-list": Route((get("/api/actions/", API_READ_CLUSTER),)),
    "api:action-detail": Route((get(lambda w: f"/api/actions/{w.action.pk}/", API_READ_CLUSTER),)),
    "api:action-cancel": Route(
        (
            post(
                lambda w: f"/api/actions/{w.action.pk}/cancel/",
                statuses(200, 200, 200, 403, 403, 401),
            ),
        )
    ),
    "api:action-canary": Route(
        (
            post(
                "/api/actions/canary/",
                statuses(202, 202, 202, 403, 403, 401),
                body={"reason": "permission matrix"},
            ),
        )
    ),
    "api:auditentry-list": Route((get("/api/audit/", statuses(200, 200, 403, 403, 403, 401)),)),
    "api:auditentry-detail": Route(
        (get(lambda w: f"/api/audit/{w.audit_entry.pk}/", statuses(200, 200, 403, 403, 403, 401)),)
    ),
    "api:tenant-list": Route(
        (
            get("/api/tenants/", API_READ_ALL),
            post("/api/tenants/", statuses(400, 403, 403, 403, 403, 401)),
        )
    ),
    "api:tenant-detail": Route(
        (
            get(lambda w: f"/api/tenants/{w.own_tenant.pk}/", API_READ_ALL),
            get(
                lambda w: f"/api/tenants/{w.other_tenant.pk}/",
                statuses(200, 200, 200, 200, 404, 401),
                note="another tenant's object is 404 for a tenant admin",
            ),
        )
    ),
    "api:apitoken-list": Route(
        (
            get("/api/tokens/", API_READ_ALL),
            post(
                "/api/tokens/",
                statuses(400, 400, 400, 400, 400, 401),
                note="everybody may create a token for themselves",
            ),
        )
    ),
    "api:apitoken-detail": Route(
        (
            get(
                lambda w: f"/api/tokens/{w.foreign_token.pk}/",
                statuses(200, 404, 404, 404, 404, 401),
                note="another user's token is invisible except to admins, who revoke them",
            ),
        )
    ),
    # --- fabric: switch actions (issue 6) -------------------------------------------------------
    "fabric:port-admin": Route(
        (
            get(
                lambda w: f"/fabric/switches/{w.switch.pk}/ports/admin/?ports=Ethernet0",
                PAGE_OPERATORS,
            ),
            post(
                lambda w: f"/fabric/switches/{w.switch.pk}/ports/admin/",
                statuses(400, 400, 403, 403, 403, 302),
            ),
        )
    ),
    "fabric:leaf-maintenance": Route(
        (get(lambda w: f"/fabric/switches/{w.switch.pk}/maintenance/", PAGE_OPERATORS),)
    ),
    "fabric:switch-qos": Route(
        (get(lambda w: f"/fabric/switches/{w.switch.pk}/qos/", PAGE_OPERATORS),)
    ),
    "fabric:switch-save": Route(
        (get(lambda w: f"/fabric/switches/{w.switch.pk}/save/", PAGE_OPERATORS),)
    ),
    "fabric:pod-qos": Route((get(lambda w: f"/fabric/pods/{w.pod.pk}/qos/", PAGE_OPERATORS),)),
    "api:fabric:switch-actions-blast-radius": Route(
        (
            get(
                lambda w: f"/api/fabric/switches/{w.switch.pk}/blast-radius/?ports=Ethernet0",
                API_READ_CLUSTER,
            ),
        )
    ),
    "api:fabric:switch-actions-port-admin": Route(
        (post(lambda w: f"/api/fabric/switches/{w.switch.pk}/ports/admin/", API_WRITE_OPERATORS),)
    ),
    "api:fabric:switch-actions-maintenance": Route(
        (post(lambda w: f"/api/fabric/switches/{w.switch.pk}/maintenance/", API_WRITE_OPERATORS),)
    ),
    "api:fabric:switch-actions-qos": Route(
        (post(lambda w: f"/api/fabric/switches/{w.switch.pk}/qos/", API_WRITE_OPERATORS),)
    ),
    "api:fabric:switch-actions-save": Route(
        (post(lambda w: f"/api/fabric/switches/{w.switch.pk}/save/", API_WRITE_OPERATORS),)
    ),
    "api:fabric:pod-actions-qos": Route(
        (post(lambda w: f"/api/fabric/pods/{w.pod.pk}/qos/", API_WRITE_OPERATORS),)
    ),
    # --- fabric: ECN counter collection (issue 14 item 5) ------------------------------------
    "fabric:switch-ecn-counters": Route(
        (get(lambda w: f"/fabric/switches/{w.switch.pk}/ecn-counters/", PAGE_OPERATORS),)
    ),
    "api:fabric:switch-actions-ecn-counters": Route(
        (post(lambda w: f"/api/fabric/switches/{w.switch.pk}/ecn-counters/", API_WRITE_OPERATORS),)
    ),
    # --- faults (issue 5): cluster-wide roles read, responders act, tenant admins see nothing --
    "faults:board": Route((get("/faults/", PAGE_CLUSTER),)),
    "faults:ticket-list": Route((get("/faults/tickets/", PAGE_CLUSTER),)),
    "faults:statistics": Route((get("/faults/statistics/", PAGE_CLUSTER),)),
    "faults:ticket": Route((get(lambda w: f"/faults/{w.ticket.pk}/", PAGE_CLUSTER),)),
    "faults:report": Route(
        (
            get("/faults/report/", statuses(200, 200, 200, 403, 403, 302)),
            post("/faults/report/", statuses(400, 400, 400, 403, 403, 302)),
        )
    ),
    "faults:acknowledge": Route(
        (
            post(
                lambda w: f"/faults/{w.ticket.pk}/acknowledge/",
                statuses(302, 302, 302, 403, 403, 302),
            ),
        )
    ),
    "faults:transition": Route(
        (
            post(
                lambda w: f"/faults/{w.ticket.pk}/transition/",
                statuses(400, 400, 400, 403, 403, 302),
            ),
        )
    ),
    "faults:note": Route(
        (post(lambda w: f"/faults/{w.ticket.pk}/notes/", statuses(400, 400, 400, 403, 403, 302)),)
    ),
    "faults:reopen": Route(
        (post(lambda w: f"/faults/{w.ticket.pk}/reopen/", statuses(400, 400, 400, 403, 403, 302)),)
    ),
    "faults:recovery": Route(
        (post(lambda w: f"/faults/{w.ticket.pk}/recovery/", statuses(400, 400, 400, 403, 403, 302),
              note="an empty step: the ticket page again with the refusal (400)"),)
    ),
    "api:faults:api-root": Route((get("/api/faults/", API_READ_CLUSTER),)),
    "api:faults:ticket-list": Route(
        (
            get("/api/faults/tickets/", API_READ_CLUSTER),
            post("/api/faults/tickets/", API_WRITE_RESPONDERS, note="a user report"),
        )
    ),
    "api:faults:ticket-detail": Route(
        (get(lambda w: f"/api/faults/tickets/{w.ticket.pk}/", API_READ_CLUSTER),)
    ),
    "api:faults:ticket-history": Route(
        (get(lambda w: f"/api/faults/tickets/{w.ticket.pk}/history/", API_READ_CLUSTER),)
    ),
    "api:faults:ticket-acknowledge": Route(
        (
            post(
                lambda w: f"/api/faults/tickets/{w.ticket.pk}/acknowledge/",
                statuses(200, 200, 200, 403, 403, 401),
            ),
        )
    ),
    "api:faults:ticket-transition": Route(
        (post(lambda w: f"/api/faults/tickets/{w.ticket.pk}/transition/", API_WRITE_RESPONDERS),)
    ),
    "api:faults:ticket-notes": Route(
        (post(lambda w: f"/api/faults/tickets/{w.ticket.pk}/notes/", API_WRITE_RESPONDERS),)
    ),
    "api:faults:ticket-reopen": Route(
        (
            post(
                lambda w: f"/api/faults/tickets/{w.ticket.pk}/reopen/",
                statuses(409, 409, 409, 403, 403, 401),
                note="an open ticket cannot be reopened",
            ),
        )
    ),
    "api:faults:ticket-recovery": Route(
        (post(lambda w: f"/api/faults/tickets/{w.ticket.pk}/recovery/", API_WRITE_RESPONDERS),)
    ),
    "api:faults:intakerecord-list": Route((get("/api/faults/intake/", API_READ_CLUSTER),)),
    "api:faults:intakerecord-detail": Route(
        (get(lambda w: f"/api/faults/intake/{w.intake.pk}/", API_READ_CLUSTER),)
    ),
    "api:faults:platform-events": Route((post("/api/faults/events/", API_WRITE_RESPONDERS),)),
    "api:faults:alertmanager": Route((post("/api/faults/alertmanager/", API_WRITE_RESPONDERS),)),
    "api:faults:statistics": Route((get("/api/faults/statistics/", API_READ_CLUSTER),)),
    # --- jobs (issue 4): tenant-private, so viewers see none; responders drain and resume -----
    "jobs:job-list": Route((get("/jobs/", statuses(200, 200, 200, 403, 200, 302)),)),
    "jobs:job-detail": Route(
        (
            get(lambda w: f"/jobs/{w.own_job.job_id}/", statuses(200, 200, 200, 403, 200, 302)),
            get(lambda w: f"/jobs/{w.other_job.job_id}/", statuses(200, 200, 200, 403, 404, 302)),
        )
    ),
    "jobs:analytics": Route((get("/jobs/analytics/", statuses(200, 200, 200, 403, 200, 302)),)),
    "jobs:node-panel": Route((get(lambda w: f"/jobs/nodes/{w.node.hostname}/slurm/", PAGE_ALL),)),
    "jobs:bulk-drain": Route(
        (get("/jobs/nodes/bulk-drain/", statuses(200, 200, 200, 403, 403, 302)),)
    ),
    "jobs:node-drain": Route(
        (
            post(
                "/jobs/nodes/drain/",
                statuses(302, 302, 302, 403, 403, 302),
                note="errors come back as a message",
            ),
        )
    ),
    "jobs:node-resume": Route(
        (
            post(
                "/jobs/nodes/resume/",
                statuses(302, 302, 302, 403, 403, 302),
                note="errors come back as a message",
            ),
        )
    ),
    # --- console (issue 15): impact of taking something out, scoped to what each role sees ---
    "api:console:impact": Route(
        (
            get(lambda w: f"/api/impact/?target=node:{w.node.hostname}", API_READ_ALL,
                note="the tenant admin's own node"),
            get(lambda w: f"/api/impact/?target=node:{w.other_node.hostname}",
                statuses(200, 200, 200, 200, 400, 401),
                note="another tenant's node is not the tenant admin's to name"),
        )
    ),
    "api:jobs:job-list": Route((get("/api/jobs/jobs/", statuses(200, 200, 200, 403, 200, 401)),)),
    "api:jobs:job-detail": Route(
        (
            get(
                lambda w: f"/api/jobs/jobs/{w.own_job.job_id}/",
                statuses(200, 200, 200, 403, 200, 401),
            ),
            get(
                lambda w: f"/api/jobs/jobs/{w.other_job.job_id}/",
                statuses(200, 200, 200, 403, 404, 401),
            ),
        )
    ),
    "api:jobs:analytics": Route(
        (get("/api/jobs/analytics/", statuses(200, 200, 200, 403, 200, 401)),)
    ),
    "api:jobs:node-drain": Route((post("/api/jobs/nodes/drain", API_WRITE_RESPONDERS),)),
    "api:jobs:node-resume": Route((post("/api/jobs/nodes/resume", API_WRITE_RESPONDERS),)),
}


# --- inventory API (issue 3): everybody reads what the selectors let them see; operators write.
# Tenant admins see the nodes of their allocations (and those nodes' GPUs, NICs, cables) and
# nothing else; fabric objects (switches, ports, pods, racks) are not theirs to read.
API_OWN_ONLY = statuses(200, 200, 200, 200, 404, 401)


def _inventory_rows() -> dict[str, Route]:
    rows: dict[str, Route] = {}
    resources = {
        # basename: (url part, world attribute of an object the tenant admin may see or None,
        #            world attribute of one they may not)
        "pod": ("pods", "pod", None),  # pods and racks are not secret: names of places
        "rack": ("racks", "rack", None),
        "node": ("nodes", "node", "other_node"),
        "gpu": ("gpus", "own_gpu", "other_gpu"),
        "nic": ("nics", "own_nic", "other_nic"),
        "switch": ("switches", None, "switch"),
        "port": ("ports", None, "port"),
        "cable": ("cables", "own_cable", None),
        "allocation": ("allocations", None, None),  # tenant-private: probed below
    }
    for basename, (part, visible, hidden) in resources.items():
        base = f"/api/inventory/{part}/"
        rows[f"api:inventory:{basename}-list"] = Route(
            (
                get(base, API_READ_ALL),
                post(base, API_WRITE_OPERATORS),
            )
        )
        detail = []
        if visible:
            detail.append(get(lambda w, a=visible, b=base: f"{b}{getattr(w, a).pk}/", API_READ_ALL))
        if hidden:
            detail.append(get(lambda w, a=hidden, b=base: f"{b}{getattr(w, a).pk}/", API_OWN_ONLY))
        attribute = visible or hidden or "allocation"
        detail.append(
            Probe(
                "PATCH",
                lambda w, a=attribute, b=base: f"{b}{getattr(w, a).pk}/",
                statuses(200, 200, 403, 403, 403, 401),
                body={},
                note="an empty PATCH changes nothing but passes the permission check",
            )
        )
        rows[f"api:inventory:{basename}-detail"] = Route(tuple(detail))
        rows[f"api:inventory:{basename}-bulk"] = Route((post(f"{base}bulk/", API_WRITE_OPERATORS),))
    rows["api:inventory:allocation-detail"] = Route(
        (
            get(
                lambda w: f"/api/inventory/allocations/{w.allocation.pk}/",
                statuses(200, 200, 200, 404, 200, 401),
                note="tenant-private: viewers see none",
            ),
            *rows["api:inventory:allocation-detail"].probes,
        )
    )
    rows["api:inventory:api-root"] = Route((get("/api/inventory/", API_READ_CLUSTER),))
    rows["api:inventory:nic-trace"] = Route(
        (get(lambda w: f"/api/inventory/nics/{w.own_nic.pk}/trace/", API_READ_CLUSTER),)
    )
    rows["api:inventory:port-trace"] = Route(
        (get(lambda w: f"/api/inventory/ports/{w.port.pk}/trace/", API_READ_CLUSTER),)
    )
    rows["api:inventory:switch-nodes-behind"] = Route(
        (get(lambda w: f"/api/inventory/switches/{w.switch.pk}/nodes-behind/", API_OWN_ONLY),)
    )
    rows["api:inventory:topology-import"] = Route(
        (post("/api/inventory/topology/import", statuses(400, 400, 403, 403, 403, 401)),)
    )
    rows["api:inventory:validation"] = Route((get("/api/inventory/validation", API_READ_CLUSTER),))
    return rows


MATRIX.update(_inventory_rows())

MATRIX.update(
    {
        "inventory:node-list": Route((get("/inventory/", PAGE_ALL),)),
        "inventory:cable-list": Route((get("/inventory/cables/", PAGE_ALL),)),
        "inventory:hardware-search": Route((get("/inventory/search/?q=matrix", PAGE_ALL),)),
        "inventory:node-detail": Route(
            (
                get(lambda w: f"/inventory/nodes/{w.node.hostname}/", PAGE_ALL),
                get(
                    lambda w: f"/inventory/nodes/{w.other_node.hostname}/",
                    statuses(200, 200, 200, 200, 404, 302),
                ),
            )
        ),
        "inventory:nic-trace": Route(
            (
                get(
                    lambda w: f"/inventory/nodes/{w.node.hostname}/nics/{w.own_nic.device}/trace/",
                    PAGE_CLUSTER,
                ),
            )
        ),
        "inventory:switch-list": Route((get("/inventory/switches/", PAGE_CLUSTER),)),
        "inventory:switch-detail": Route(
            (get(lambda w: f"/inventory/switches/{w.switch.hostname}/", PAGE_CLUSTER),)
        ),
        "inventory:topology": Route((get("/inventory/topology/", PAGE_CLUSTER),)),
        "inventory:validation": Route((get("/inventory/validation/", PAGE_CLUSTER),)),
    }
)

# --- fabric monitoring (issue 6): cluster-wide roles read; the fabric is no tenant's data ------
MATRIX.update(
    {
        "fabric:switch-list": Route((get("/fabric/", PAGE_CLUSTER),)),
        "fabric:fabric-live": Route((get("/fabric/live/", PAGE_CLUSTER),)),
        "fabric:switch-detail": Route(
            (get(lambda w: f"/fabric/switches/{w.switch.hostname}/", PAGE_CLUSTER),)
        ),
        "fabric:switch-nodes": Route(
            (get(lambda w: f"/fabric/switches/{w.switch.hostname}/nodes/", PAGE_CLUSTER),)
        ),
        "fabric:switch-ports": Route(
            (get(lambda w: f"/fabric/switches/{w.switch.hostname}/ports/", PAGE_CLUSTER),)
        ),
        "fabric:lldp": Route((get("/fabric/lldp/", PAGE_CLUSTER),)),
        "fabric:rail-health": Route((get("/fabric/rail-health/", PAGE_CLUSTER),)),
        "api:fabric:switch-list": Route((get("/api/fabric/switches/", API_READ_CLUSTER),)),
        "api:fabric:switch-detail": Route(
            (get(lambda w: f"/api/fabric/switches/{w.switch.hostname}/", API_READ_CLUSTER),)
        ),
        "api:fabric:switch-ports": Route(
            (get(lambda w: f"/api/fabric/switches/{w.switch.hostname}/ports/", API_READ_CLUSTER),)
        ),
        "api:fabric:port-list": Route((get("/api/fabric/ports/", API_READ_CLUSTER),)),
        "api:fabric:port-detail": Route(
            (get(lambda w: f"/api/fabric/ports/{w.port.pk}/", API_READ_CLUSTER),)
        ),
        "api:fabric:port-history": Route(
            (get(lambda w: f"/api/fabric/ports/{w.port.pk}/history/", API_READ_CLUSTER),)
        ),
        "api:fabric:lldp-finding-list": Route(
            (get("/api/fabric/lldp/findings/", API_READ_CLUSTER),)
        ),
        "api:fabric:lldp-finding-detail": Route(
            (
                get(
                    "/api/fabric/lldp/findings/999999/",
                    statuses(404, 404, 404, 404, 403, 401),
                    note="no finding in the probe world: readers get 404, tenant admins 403 first",
                ),
            )
        ),
        "api:fabric:switch-aggregates": Route(
            (get("/api/fabric/aggregates/switches/", API_READ_CLUSTER),)
        ),
        "api:fabric:rail-aggregates": Route(
            (get("/api/fabric/aggregates/rails/", API_READ_CLUSTER),)
        ),
        "api:fabric:rail-health": Route(
            (get(lambda w: f"/api/fabric/rail-health/?nodes={w.node.hostname}", API_READ_CLUSTER),)
        ),
    }
)


# --- telemetry (issue 16): job readers; tenant admins only their own jobs; operators' idle view -
MATRIX.update(
    {
        "telemetry:idle-gpus": Route(
            (get("/telemetry/idle-gpus/", statuses(200, 200, 200, 403, 403, 302)),)
        ),
        "api:telemetry:observation3": Route(
            (get("/api/telemetry/observation3/", statuses(200, 200, 200, 403, 200, 401)),)
        ),
        "api:telemetry:idle-gpus": Route(
            (get("/api/telemetry/idle-gpus/", statuses(200, 200, 200, 403, 200, 401)),)
        ),
        "api:telemetry:job-utilisation": Route(
            (
                get(
                    lambda w: f"/api/telemetry/jobs/{w.own_job.job_id}/utilisation/",
                    statuses(200, 200, 200, 403, 200, 401),
                ),
                get(
                    lambda w: f"/api/telemetry/jobs/{w.other_job.job_id}/utilisation/",
                    statuses(200, 200, 200, 403, 404, 401),
                ),
            )
        ),
    }
)


# --- console: the jump box's search (issue 15); every role finds what it may see --------------
MATRIX.update(
    {
        "console:search": Route(
            (
                get(
                    lambda w: f"/search/?q={w.node.hostname}",
                    statuses(302, 302, 302, 302, 302, 302),
                    note="an exact hostname redirects to the node's page",
                ),
                get("/search/?q=matrix&list=1", PAGE_ALL),
                get("/search/?q=x", statuses(400, 400, 400, 400, 400, 302)),
            )
        ),
        "api:console:search": Route(
            (
                get(lambda w: f"/api/search/?q={w.node.hostname}", API_READ_ALL),
                get("/api/search/?q=x", statuses(400, 400, 400, 400, 400, 401)),
            )
        ),
    }
)
