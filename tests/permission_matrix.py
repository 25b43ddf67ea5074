"""The permission matrix: every endpoint and page x every role x own/other tenant.

`MATRIX` maps each named route of the URL conf to the requests that exercise it and the
capability each needs (portal/roles.py); what each role must get is read off the role table,
so a new role or a capability granted to another role changes the expectations here by itself.
tests/test_permission_matrix.py walks the URL conf, so a new route without an entry here fails
CI until somebody decides who may use it.

Writes are probed with an empty body: a role that may write gets a 400 (its request reached
validation and changed nothing), a role that may not gets a 403. Tenant-private objects are
probed twice, for the tenant admin's own tenant and for another one (which must be a 404): the
selectors' scoping, given as a per-role override (`tenant_admin=404`), not as a capability.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from portal.roles import Role, role_may

ROLES = (*Role.values, "anonymous")


def expect(
    capability: str, allowed: int, *, denied: int, anonymous: int, **scoped: int
) -> dict[str, int]:
    """The status each role gets from a request that needs `capability`: `allowed` for the
    roles the table grants it, `denied` for the others; `scoped` overrides a role whose
    selectors answer differently for the probed object (another tenant's: 404)."""
    unknown = set(scoped) - set(Role.values)
    assert not unknown, f"not roles: {unknown}"
    answer = {role: allowed if role_may(role, capability) else denied for role in Role.values}
    return {**answer, **scoped, "anonymous": anonymous}


def api(capability: str, allowed: int = 200, *, denied: int = 403, **scoped: int):
    """An API request: anonymous is 401 (token auth announces itself)."""
    return expect(capability, allowed, denied=denied, anonymous=401, **scoped)


def page(capability: str, allowed: int = 200, *, denied: int = 403, **scoped: int):
    """A page: anonymous is sent to the login page (302)."""
    return expect(capability, allowed, denied=denied, anonymous=302, **scoped)


PUBLIC = dict.fromkeys(ROLES, 200)


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
    "dashboard": Route((get("/", page("use_portal")),)),
    "login": Route(exempt="the login form itself: public by definition"),
    "logout": Route(exempt="ends the session; POST only, every role"),
    "action-list": Route((get("/actions/", page("read_cluster")),)),
    "action-detail": Route((get(lambda w: f"/actions/{w.action.pk}/", page("read_cluster")),)),
    "action-cancel": Route(
        (post(lambda w: f"/actions/{w.action.pk}/cancel/", page("cancel_action", 302)),)
    ),
    "audit-list": Route((get("/audit/", page("read_audit")),)),
    "tenant-list": Route((get("/tenants/", page("read_tenants")),)),
    "tenant-detail": Route(
        (
            get(lambda w: f"/tenants/{w.own_tenant.slug}/", page("read_tenants")),
            get(
                lambda w: f"/tenants/{w.other_tenant.slug}/", page("read_tenants", tenant_admin=404)
            ),
            post(
                lambda w: f"/tenants/{w.own_tenant.slug}/",
                page("allocate", 400),
                note="allocating nodes: operators only; an empty form is a 400",
            ),
        )
    ),
    "tenant-allocations-csv": Route(
        (
            # A viewer may open the tenant's page, which says "hidden for your role", not its
            # private data: an empty file would read as "nothing allocated".
            get(lambda w: f"/tenants/{w.own_tenant.slug}/allocations.csv",
                page("read_tenants", viewer=403)),
            get(
                lambda w: f"/tenants/{w.other_tenant.slug}/allocations.csv",
                page("read_tenants", tenant_admin=404, viewer=403),
            ),
        )
    ),
    "tenant-usage-csv": Route(
        (
            # A viewer may open the tenant's page, which says "hidden for your role", not its
            # private data: an empty file would read as "nothing allocated".
            get(lambda w: f"/tenants/{w.own_tenant.slug}/usage.csv",
                page("read_tenants", viewer=403)),
            get(
                lambda w: f"/tenants/{w.other_tenant.slug}/usage.csv",
                page("read_tenants", tenant_admin=404, viewer=403),
            ),
        )
    ),
    "allocation-end": Route(
        (
            post(
                lambda w: f"/tenants/{w.own_tenant.slug}/allocations/{w.allocation.pk}/end/",
                page("allocate", 302),
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
    "api:api-root": Route((get("/api/", api("read_cluster")),)),
    "api:me": Route((get("/api/me/", api("use_portal")),)),
    "api:action-list": Route((get("/api/actions/", api("read_cluster")),)),
    "api:action-detail": Route(
        (get(lambda w: f"/api/actions/{w.action.pk}/", api("read_cluster")),)
    ),
    "api:action-cancel": Route(
        (
            post(
                lambda w: f"/api/actions/{w.action.pk}/cancel/",
                api("cancel_action"),
            ),
        )
    ),
    "api:action-canary": Route(
        (
            post(
                "/api/actions/canary/",
                api("run_canary", 202),
                body={"reason": "permission matrix"},
            ),
        )
    ),
    "api:auditentry-list": Route((get("/api/audit/", api("read_audit")),)),
    "api:auditentry-detail": Route(
        (get(lambda w: f"/api/audit/{w.audit_entry.pk}/", api("read_audit")),)
    ),
    "api:tenant-list": Route(
        (
            get("/api/tenants/", api("read_tenants")),
            post("/api/tenants/", api("manage_tenants", 400)),
        )
    ),
    "api:tenant-detail": Route(
        (
            get(lambda w: f"/api/tenants/{w.own_tenant.pk}/", api("read_tenants")),
            get(
                lambda w: f"/api/tenants/{w.other_tenant.pk}/",
                api("read_tenants", tenant_admin=404),
                note="another tenant's object is 404 for a tenant admin",
            ),
        )
    ),
    "api:apitoken-list": Route(
        (
            get("/api/tokens/", api("manage_own_tokens")),
            post(
                "/api/tokens/",
                api("manage_own_tokens", 400),
                note="everybody may create a token for themselves",
            ),
        )
    ),
    "api:apitoken-detail": Route(
        (
            get(
                lambda w: f"/api/tokens/{w.foreign_token.pk}/",
                api("manage_accounts", denied=404),
                note="another user's token is invisible except to admins, who revoke them",
            ),
        )
    ),
    # --- fabric: switch actions (issue 6) -------------------------------------------------------
    "fabric:port-admin": Route(
        (
            get(
                lambda w: f"/fabric/switches/{w.switch.pk}/ports/admin/?ports=Ethernet0",
                page("act_on_switch"),
            ),
            post(
                lambda w: f"/fabric/switches/{w.switch.pk}/ports/admin/",
                page("act_on_switch", 400),
            ),
        )
    ),
    "fabric:leaf-maintenance": Route(
        (get(lambda w: f"/fabric/switches/{w.switch.pk}/maintenance/", page("act_on_switch")),)
    ),
    "fabric:maintenance-end": Route(
        (
            get(
                lambda w: f"/fabric/switches/{w.switch.pk}/maintenance/end/",
                page("act_on_switch"),
            ),
        )
    ),
    "fabric:switch-qos": Route(
        (get(lambda w: f"/fabric/switches/{w.switch.pk}/qos/", page("act_on_switch")),)
    ),
    "fabric:switch-save": Route(
        (get(lambda w: f"/fabric/switches/{w.switch.pk}/save/", page("act_on_switch")),)
    ),
    "fabric:pod-qos": Route(
        (get(lambda w: f"/fabric/pods/{w.pod.pk}/qos/", page("act_on_switch")),)
    ),
    "api:fabric:switch-actions-blast-radius": Route(
        (
            get(
                lambda w: f"/api/fabric/switches/{w.switch.pk}/blast-radius/?ports=Ethernet0",
                api("read_fabric"),
            ),
        )
    ),
    "api:fabric:switch-actions-port-admin": Route(
        (
            post(
                lambda w: f"/api/fabric/switches/{w.switch.pk}/ports/admin/",
                api("act_on_switch", 400),
            ),
        )
    ),
    "api:fabric:switch-actions-maintenance": Route(
        (
            post(
                lambda w: f"/api/fabric/switches/{w.switch.pk}/maintenance/",
                api("act_on_switch", 400),
            ),
        )
    ),
    "api:fabric:switch-actions-maintenance-end": Route(
        (
            post(
                lambda w: f"/api/fabric/switches/{w.switch.pk}/maintenance/end/",
                api("act_on_switch", 400),
            ),
        )
    ),
    "api:fabric:switch-actions-qos": Route(
        (post(lambda w: f"/api/fabric/switches/{w.switch.pk}/qos/", api("act_on_switch", 400)),)
    ),
    "api:fabric:switch-actions-save": Route(
        (post(lambda w: f"/api/fabric/switches/{w.switch.pk}/save/", api("act_on_switch", 400)),)
    ),
    "api:fabric:pod-actions-qos": Route(
        (post(lambda w: f"/api/fabric/pods/{w.pod.pk}/qos/", api("act_on_switch", 400)),)
    ),
    # --- fabric: ECN counter collection (issue 14 item 5) ------------------------------------
    "fabric:switch-ecn-counters": Route(
        (get(lambda w: f"/fabric/switches/{w.switch.pk}/ecn-counters/", page("act_on_switch")),)
    ),
    "api:fabric:switch-actions-ecn-counters": Route(
        (
            post(
                lambda w: f"/api/fabric/switches/{w.switch.pk}/ecn-counters/",
                api("act_on_switch", 400),
            ),
        )
    ),
    # --- fabric: maintenance windows (issue 26 item 2); the probed window has ended, so a
    # step an operator may take answers 409 (API) or a redirect with the refusal (page) -----
    "fabric:maintenance-calendar": Route(
        (
            get("/fabric/maintenance/", page("read_fabric")),
            post("/fabric/maintenance/", page("act_on_switch", 400, denied=403),
                 note="an empty form: 400 naming the fields"),
        )
    ),
    "fabric:maintenance-window-step": Route(
        (post(lambda w: f"/fabric/maintenance/{w.window.pk}/start/",
              page("act_on_switch", 302)),)
    ),
    "api:fabric:maintenance-window-list": Route(
        (
            get("/api/fabric/maintenance-windows/", api("read_fabric")),
            post("/api/fabric/maintenance-windows/", api("act_on_switch", 400)),
        )
    ),
    "api:fabric:maintenance-window-detail": Route(
        (get(lambda w: f"/api/fabric/maintenance-windows/{w.window.pk}/", api("read_fabric")),)
    ),
    "api:fabric:maintenance-window-cancel": Route(
        (post(lambda w: f"/api/fabric/maintenance-windows/{w.window.pk}/cancel/",
              api("act_on_switch", 409)),)
    ),
    "api:fabric:maintenance-window-start": Route(
        (post(lambda w: f"/api/fabric/maintenance-windows/{w.window.pk}/start/",
              api("act_on_switch", 409)),)
    ),
    "api:fabric:maintenance-window-end": Route(
        (post(lambda w: f"/api/fabric/maintenance-windows/{w.window.pk}/end/",
              api("act_on_switch", 409)),)
    ),
    # --- faults (issue 5): cluster-wide roles read, responders act, tenant admins see nothing --
    "faults:board": Route((get("/faults/", page("read_faults")),)),
    "faults:ticket-list": Route((get("/faults/tickets/", page("read_faults")),)),
    "faults:statistics": Route((get("/faults/statistics/", page("read_faults")),)),
    "faults:repair-cases-csv": Route((get("/faults/repair-cases.csv", page("read_faults")),)),
    "faults:swaps-csv": Route((get("/faults/swaps.csv", page("read_faults")),)),
    "faults:ticket": Route((get(lambda w: f"/faults/{w.ticket.pk}/", page("read_faults")),)),
    "faults:report": Route(
        (
            get("/faults/report/", page("respond_to_faults")),
            post("/faults/report/", page("respond_to_faults", 400)),
        )
    ),
    "faults:report-node-event": Route(
        (
            get(lambda w: f"/faults/report/node/{w.node.hostname}/", page("respond_to_faults")),
            post(
                lambda w: f"/faults/report/node/{w.node.hostname}/",
                page("respond_to_faults", 400),
                note="no event kind: the form again naming it (400)",
            ),
        )
    ),
    "faults:acknowledge": Route(
        (
            post(
                lambda w: f"/faults/{w.ticket.pk}/acknowledge/",
                page("respond_to_faults", 302),
            ),
        )
    ),
    "faults:transition": Route(
        (
            post(
                lambda w: f"/faults/{w.ticket.pk}/transition/",
                page("respond_to_faults", 400),
            ),
        )
    ),
    "faults:note": Route(
        (post(lambda w: f"/faults/{w.ticket.pk}/notes/", page("respond_to_faults", 400)),)
    ),
    "faults:reopen": Route(
        (post(lambda w: f"/faults/{w.ticket.pk}/reopen/", page("respond_to_faults", 400)),)
    ),
    "faults:recovery": Route(
        (
            post(
                lambda w: f"/faults/{w.ticket.pk}/recovery/",
                page("respond_to_faults", 400),
                note="an empty step: the ticket page again with the refusal (400)",
            ),
        )
    ),
    "faults:repair-open": Route(
        (post(lambda w: f"/faults/{w.ticket.pk}/repairs/", page("respond_to_faults", 400)),)
    ),
    "faults:repair-transition": Route(
        (
            post(
                lambda w: f"/faults/{w.ticket.pk}/repairs/{w.repair_case.pk}/transition/",
                page("respond_to_faults", 400),
            ),
        )
    ),
    "faults:repair-reserve-spare": Route(
        (
            post(
                lambda w: f"/faults/{w.ticket.pk}/repairs/{w.repair_case.pk}/reserve-spare/",
                page("respond_to_faults", 400),
                note="no site named: the ticket page again, naming `site` (400)",
            ),
        )
    ),
    "faults:repair-install": Route(
        (
            post(
                lambda w: f"/faults/{w.ticket.pk}/repairs/{w.repair_case.pk}/install/",
                page("respond_to_faults", 400),
            ),
        )
    ),
    "api:faults:api-root": Route((get("/api/faults/", api("read_faults")),)),
    "api:faults:ticket-list": Route(
        (
            get("/api/faults/tickets/", api("read_faults")),
            post("/api/faults/tickets/", api("respond_to_faults", 400), note="a user report"),
        )
    ),
    "api:faults:ticket-detail": Route(
        (get(lambda w: f"/api/faults/tickets/{w.ticket.pk}/", api("read_faults")),)
    ),
    "api:faults:ticket-history": Route(
        (get(lambda w: f"/api/faults/tickets/{w.ticket.pk}/history/", api("read_faults")),)
    ),
    "api:faults:ticket-acknowledge": Route(
        (
            post(
                lambda w: f"/api/faults/tickets/{w.ticket.pk}/acknowledge/",
                api("respond_to_faults"),
            ),
        )
    ),
    "api:faults:ticket-transition": Route(
        (
            post(
                lambda w: f"/api/faults/tickets/{w.ticket.pk}/transition/",
                api("respond_to_faults", 400),
            ),
        )
    ),
    "api:faults:ticket-notes": Route(
        (
            post(
                lambda w: f"/api/faults/tickets/{w.ticket.pk}/notes/", api("respond_to_faults", 400)
            ),
        )
    ),
    "api:faults:ticket-reopen": Route(
        (
            post(
                lambda w: f"/api/faults/tickets/{w.ticket.pk}/reopen/",
                api("respond_to_faults", 409),
                note="an open ticket cannot be reopened",
            ),
        )
    ),
    # --- repair cases (issue 25): the tickets' permissions ----------------------------------
    "api:faults:repaircase-list": Route(
        (
            get("/api/faults/repair-cases/", api("read_faults")),
            post("/api/faults/repair-cases/", api("respond_to_faults", 400)),
        )
    ),
    "api:faults:repaircase-detail": Route(
        (get(lambda w: f"/api/faults/repair-cases/{w.repair_case.pk}/", api("read_faults")),)
    ),
    **{
        f"api:faults:repaircase-{step}": Route(
            (
                post(
                    lambda w, s=step: f"/api/faults/repair-cases/{w.repair_case.pk}/{s}/",
                    api("respond_to_faults", 400),
                ),
            )
        )
        for step in ("transition", "parts", "install", "reserve-spare")
    },
    "api:faults:ticket-recovery": Route(
        (
            post(
                lambda w: f"/api/faults/tickets/{w.ticket.pk}/recovery/",
                api("respond_to_faults", 400),
            ),
        )
    ),
    "api:faults:intakerecord-list": Route((get("/api/faults/intake/", api("read_faults")),)),
    "api:faults:intakerecord-detail": Route(
        (get(lambda w: f"/api/faults/intake/{w.intake.pk}/", api("read_faults")),)
    ),
    "api:faults:platform-events": Route(
        (post("/api/faults/events/", api("respond_to_faults", 400)),)
    ),
    "api:faults:alertmanager": Route(
        (post("/api/faults/alertmanager/", api("respond_to_faults", 400)),)
    ),
    "api:faults:statistics": Route((get("/api/faults/statistics/", api("read_faults")),)),
    # --- jobs (issue 4): tenant-private, so viewers see none; responders drain and resume -----
    "jobs:job-list": Route((get("/jobs/", page("read_jobs")),)),
    "jobs:job-detail": Route(
        (
            get(lambda w: f"/jobs/{w.own_job.job_id}/", page("read_jobs")),
            get(lambda w: f"/jobs/{w.other_job.job_id}/", page("read_jobs", tenant_admin=404)),
        )
    ),
    "jobs:analytics": Route((get("/jobs/analytics/", page("read_jobs")),)),
    "jobs:node-panel": Route(
        (get(lambda w: f"/jobs/nodes/{w.node.hostname}/slurm/", page("read_inventory")),)
    ),
    "jobs:bulk-drain": Route((get("/jobs/nodes/bulk-drain/", page("drain")),)),
    "jobs:node-drain": Route(
        (
            post(
                "/jobs/nodes/drain/",
                page("drain", 302),
                note="errors come back as a message",
            ),
        )
    ),
    "jobs:node-resume": Route(
        (
            post(
                "/jobs/nodes/resume/",
                page("resume", 302),
                note="errors come back as a message",
            ),
        )
    ),
    "jobs:node-cancel-reboot": Route(
        (
            post(
                "/jobs/nodes/cancel-reboot/",
                page("reboot", 302),
                note="errors come back as a message",
            ),
        )
    ),
    # --- console (issue 15): impact of taking something out, scoped to what each role sees ---
    "api:console:impact": Route(
        (
            get(
                lambda w: f"/api/impact/?target=node:{w.node.hostname}",
                api("use_portal"),
                note="the tenant admin's own node",
            ),
            get(
                lambda w: f"/api/impact/?target=node:{w.other_node.hostname}",
                api("use_portal", tenant_admin=400),
                note="another tenant's node is not the tenant admin's to name",
            ),
        )
    ),
    "api:jobs:job-list": Route((get("/api/jobs/jobs/", api("read_jobs")),)),
    "api:jobs:job-detail": Route(
        (
            get(
                lambda w: f"/api/jobs/jobs/{w.own_job.job_id}/",
                api("read_jobs"),
            ),
            get(
                lambda w: f"/api/jobs/jobs/{w.other_job.job_id}/",
                api("read_jobs", tenant_admin=404),
            ),
        )
    ),
    "api:jobs:analytics": Route((get("/api/jobs/analytics/", api("read_jobs")),)),
    "api:jobs:node-drain": Route((post("/api/jobs/nodes/drain", api("drain", 400)),)),
    "api:jobs:node-reboot": Route((post("/api/jobs/nodes/reboot", api("reboot", 400)),)),
    "api:jobs:node-cancel-reboot": Route(
        (post("/api/jobs/nodes/cancel-reboot", api("reboot", 400)),)
    ),
    "api:jobs:node-resume": Route((post("/api/jobs/nodes/resume", api("resume", 400)),)),
}


# --- inventory API (issue 3): everybody reads what the selectors let them see; operators write.
# Tenant admins see the nodes of their allocations (and those nodes' GPUs, NICs, cables) and
# nothing else; fabric objects (switches, ports, pods, racks) are not theirs to read.


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
                get(base, api("read_inventory")),
                post(base, api("write_inventory", 400)),
            )
        )
        detail = []
        if visible:
            detail.append(
                get(lambda w, a=visible, b=base: f"{b}{getattr(w, a).pk}/", api("read_inventory"))
            )
        if hidden:
            detail.append(
                get(
                    lambda w, a=hidden, b=base: f"{b}{getattr(w, a).pk}/",
                    api("read_inventory", tenant_admin=404),
                )
            )
        attribute = visible or hidden or "allocation"
        detail.append(
            Probe(
                "PATCH",
                lambda w, a=attribute, b=base: f"{b}{getattr(w, a).pk}/",
                api("write_inventory"),
                body={},
                note="an empty PATCH changes nothing but passes the permission check",
            )
        )
        rows[f"api:inventory:{basename}-detail"] = Route(tuple(detail))
        rows[f"api:inventory:{basename}-bulk"] = Route(
            (post(f"{base}bulk/", api("write_inventory", 400)),)
        )
    rows["api:inventory:allocation-detail"] = Route(
        (
            get(
                lambda w: f"/api/inventory/allocations/{w.allocation.pk}/",
                api("read_tenant_data", denied=404, tenant_admin=200),
                note="tenant-private: viewers see none",
            ),
            *rows["api:inventory:allocation-detail"].probes,
        )
    )
    rows["api:inventory:swap-list"] = Route((get("/api/inventory/swaps/", api("read_inventory")),))
    rows["api:inventory:swap-detail"] = Route(
        (
            get(lambda w: f"/api/inventory/swaps/{w.own_swap.pk}/", api("read_inventory")),
            get(
                lambda w: f"/api/inventory/swaps/{w.other_swap.pk}/",
                api("read_inventory", tenant_admin=404),
                note="a swap on another tenant's node",
            ),
        )
    )
    rows["api:inventory:spare-list"] = Route(
        (
            get("/api/inventory/spares/", api("read_inventory")),
            post("/api/inventory/spares/", api("write_inventory", 400)),
        )
    )
    rows["api:inventory:spare-detail"] = Route(
        (
            get(lambda w: f"/api/inventory/spares/{w.spare_stock.pk}/", api("read_inventory")),
            Probe(
                "PATCH",
                lambda w: f"/api/inventory/spares/{w.spare_stock.pk}/",
                api("write_inventory"),
                body={},
                note="an empty PATCH changes nothing but passes the permission check",
            ),
        )
    )
    rows["api:inventory:api-root"] = Route((get("/api/inventory/", api("read_cluster")),))
    rows["api:inventory:nic-trace"] = Route(
        (get(lambda w: f"/api/inventory/nics/{w.own_nic.pk}/trace/", api("read_fabric")),)
    )
    rows["api:inventory:port-trace"] = Route(
        (get(lambda w: f"/api/inventory/ports/{w.port.pk}/trace/", api("read_fabric")),)
    )
    rows["api:inventory:switch-nodes-behind"] = Route(
        (
            get(
                lambda w: f"/api/inventory/switches/{w.switch.pk}/nodes-behind/",
                api("read_inventory", tenant_admin=404),
            ),
        )
    )
    rows["api:inventory:node-power"] = Route(
        (
            get(
                lambda w: f"/api/inventory/nodes/{w.node.pk}/power/",
                api("power"),
                note="the impact before confirming: only those who may power see it",
            ),
            post(
                lambda w: f"/api/inventory/nodes/{w.node.pk}/power/",
                api("power", 400),
                note="viewers and tenant admins cannot power anything, not even their own node",
            ),
        )
    )
    rows["api:inventory:node-bmc"] = Route(
        (
            get(
                lambda w: f"/api/inventory/nodes/{w.node.pk}/bmc/",
                api("read_inventory"),
                note="what the BMC says: whoever may see the node, never its credentials",
            ),
            get(
                lambda w: f"/api/inventory/nodes/{w.other_node.pk}/bmc/",
                api("read_inventory", tenant_admin=404),
            ),
        )
    )
    rows["api:inventory:node-boot-override"] = Route(
        (
            post(
                lambda w: f"/api/inventory/nodes/{w.node.pk}/boot-override/",
                api("power", 400),
                note="the next boot's source: only those who may power nodes",
            ),
        )
    )
    rows["api:inventory:topology-import"] = Route(
        (post("/api/inventory/topology/import", api("write_inventory", 400)),)
    )
    rows["api:inventory:validation"] = Route(
        (get("/api/inventory/validation", api("read_fabric")),)
    )
    return rows


MATRIX.update(_inventory_rows())

MATRIX.update(
    {
        "inventory:node-list": Route((get("/inventory/", page("read_inventory")),)),
        "inventory:cable-list": Route((get("/inventory/cables/", page("read_inventory")),)),
        "inventory:hardware-search": Route(
            (get("/inventory/search/?q=matrix", page("read_inventory")),)
        ),
        "inventory:node-bmc": Route(
            (
                get(lambda w: f"/inventory/nodes/{w.node.hostname}/bmc/", page("read_inventory")),
                get(
                    lambda w: f"/inventory/nodes/{w.other_node.hostname}/bmc/",
                    page("read_inventory", tenant_admin=404),
                ),
            )
        ),
        "inventory:node-boot-override": Route(
            (
                post(
                    lambda w: f"/inventory/nodes/{w.node.hostname}/boot-override/",
                    page("power", 302),
                    note="an empty form is refused back to the node page, nothing queued",
                ),
            )
        ),
        "inventory:node-detail": Route(
            (
                get(lambda w: f"/inventory/nodes/{w.node.hostname}/", page("read_inventory")),
                get(
                    lambda w: f"/inventory/nodes/{w.other_node.hostname}/",
                    page("read_inventory", tenant_admin=404),
                ),
            )
        ),
        "inventory:part-history": Route(
            (
                get(
                    lambda w: f"/inventory/parts/{w.own_swap.serial_in}/",
                    page("read_inventory"),
                    note="a tenant admin sees only the swaps on their nodes",
                ),
            )
        ),
        "inventory:nic-trace": Route(
            (
                get(
                    lambda w: f"/inventory/nodes/{w.node.hostname}/nics/{w.own_nic.device}/trace/",
                    page("read_cluster"),
                ),
            )
        ),
        "inventory:spares": Route((get("/inventory/spares/", page("read_inventory")),)),
        "inventory:spares-set": Route(
            (
                post("/inventory/spares/set/", page("write_inventory", 400),
                     note="no part type or site: the page again naming them (400)"),
            )
        ),
        "inventory:switch-list": Route((get("/inventory/switches/", page("read_cluster")),)),
        "inventory:switch-detail": Route(
            (get(lambda w: f"/inventory/switches/{w.switch.hostname}/", page("read_cluster")),)
        ),
        "inventory:topology": Route((get("/inventory/topology/", page("read_cluster")),)),
        "inventory:validation": Route((get("/inventory/validation/", page("read_cluster")),)),
    }
)

# --- fabric monitoring (issue 6): cluster-wide roles read; the fabric is no tenant's data ------
MATRIX.update(
    {
        "fabric:switch-list": Route((get("/fabric/", page("read_fabric")),)),
        "fabric:fabric-live": Route((get("/fabric/live/", page("read_fabric")),)),
        "fabric:switch-detail": Route(
            (get(lambda w: f"/fabric/switches/{w.switch.hostname}/", page("read_fabric")),)
        ),
        "fabric:switch-nodes": Route(
            (get(lambda w: f"/fabric/switches/{w.switch.hostname}/nodes/", page("read_fabric")),)
        ),
        "fabric:switch-ports": Route(
            (get(lambda w: f"/fabric/switches/{w.switch.hostname}/ports/", page("read_fabric")),)
        ),
        "fabric:lldp": Route((get("/fabric/lldp/", page("read_fabric")),)),
        "fabric:rail-health": Route((get("/fabric/rail-health/", page("read_fabric")),)),
        "api:fabric:switch-list": Route((get("/api/fabric/switches/", api("read_fabric")),)),
        "api:fabric:switch-detail": Route(
            (get(lambda w: f"/api/fabric/switches/{w.switch.hostname}/", api("read_fabric")),)
        ),
        "api:fabric:switch-ports": Route(
            (get(lambda w: f"/api/fabric/switches/{w.switch.hostname}/ports/", api("read_fabric")),)
        ),
        "api:fabric:port-list": Route((get("/api/fabric/ports/", api("read_fabric")),)),
        "api:fabric:port-detail": Route(
            (get(lambda w: f"/api/fabric/ports/{w.port.pk}/", api("read_fabric")),)
        ),
        "api:fabric:port-history": Route(
            (get(lambda w: f"/api/fabric/ports/{w.port.pk}/history/", api("read_fabric")),)
        ),
        "api:fabric:lldp-finding-list": Route(
            (get("/api/fabric/lldp/findings/", api("read_fabric")),)
        ),
        "api:fabric:lldp-finding-detail": Route(
            (
                get(
                    "/api/fabric/lldp/findings/999999/",
                    api("read_fabric", 404),
                    note="no finding in the probe world: readers get 404, tenant admins 403 first",
                ),
            )
        ),
        "api:fabric:switch-aggregates": Route(
            (get("/api/fabric/aggregates/switches/", api("read_fabric")),)
        ),
        "api:fabric:rail-aggregates": Route(
            (get("/api/fabric/aggregates/rails/", api("read_fabric")),)
        ),
        "api:fabric:rail-health": Route(
            (
                get(
                    lambda w: f"/api/fabric/rail-health/?nodes={w.node.hostname}",
                    api("read_fabric"),
                ),
            )
        ),
    }
)


# --- telemetry (issue 16): job readers; tenant admins only their own jobs; operators' idle view -
MATRIX.update(
    {
        "telemetry:idle-gpus": Route((get("/telemetry/idle-gpus/", page("read_tenant_data")),)),
        "api:telemetry:observation3": Route(
            (get("/api/telemetry/observation3/", api("read_jobs")),)
        ),
        "api:telemetry:idle-gpus": Route((get("/api/telemetry/idle-gpus/", api("read_jobs")),)),
        "api:telemetry:job-utilisation": Route(
            (
                get(
                    lambda w: f"/api/telemetry/jobs/{w.own_job.job_id}/utilisation/",
                    api("read_jobs"),
                ),
                get(
                    lambda w: f"/api/telemetry/jobs/{w.other_job.job_id}/utilisation/",
                    api("read_jobs", tenant_admin=404),
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
                    page("use_portal", 302),
                    note="an exact hostname redirects to the node's page",
                ),
                get("/search/?q=matrix&list=1", page("use_portal")),
                get("/search/?q=x", page("use_portal", 400)),
            )
        ),
        "api:console:search": Route(
            (
                get(lambda w: f"/api/search/?q={w.node.hostname}", api("use_portal")),
                get("/api/search/?q=x", api("use_portal", 400)),
            )
        ),
    }
)
