"""The embedded default of `make demo` holds.

`make test` runs with PostgreSQL and Redis, so nothing else would notice the demo's own
configuration breaking: SQLite, no Redis, Celery tasks in the web process, in-memory channel
layer and cache. Here a real demo runs in a temporary VAR_DIR, prepared like `make demo`
(migrate, seed_demo, import_topology) and served by scripts/demo-run, once for this module;
the Slurm and fabric syncs its in-process beat runs in its first minutes are run once at the
start (a job per tenant, counters, LLDP), so pages have data. The operator then does over
HTTP what a user of the demo would (allocate nodes to tenant A, run the canary Action, report
a fault), and every named page and API route of the permission matrix is probed as the
operator and as tenant A's admin: each answers as the matrix says, never 5xx.

Analytics must give the same numbers on both databases: one fixture (tests/jobs/analytics_
fixture.py) is loaded into the suite's PostgreSQL and into a fresh embedded-default SQLite.
"""

from __future__ import annotations

import asyncio
import functools
import json
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests
from django.db import connection

from tests.jobs import analytics_fixture
from tests.permission_matrix import MATRIX
from tests.portal.embedded_default import EmbeddedDemo, fabric_lab_settings, manage, run_python

DEMO_USERS = {"operator": "demo-operator", "tenant_admin": "demo-tenant-admin"}
# Where the demo's world differs from the matrix's on purpose: (route, role) -> status, why.
EMBEDDED_STATUSES = {
    ("api:action-cancel", "operator"): (
        409,
        "the canary Action already succeeded (tasks run in process); the matrix's is queued",
    ),
}


# Module scope: seeded once, and stopped when this module is done, not at the end of the suite.
@pytest.fixture(scope="module")
def embedded_demo(tmp_path_factory):
    demo = EmbeddedDemo(tmp_path_factory.mktemp("embedded-demo"), secrets.token_urlsafe(12))
    demo.prepare()
    run_python(demo.var_dir, "from tests.portal.embedded_world import add_jobs; add_jobs()")
    demo.start()
    try:
        try:
            run_python(
                demo.var_dir,
                "from tests.portal.embedded_world import run_fabric_tasks; run_fabric_tasks()",
                extra=fabric_lab_settings(demo.var_dir),
            )
            _use_the_demo_as_an_operator(demo)
            run_python(
                demo.var_dir, "from tests.portal.embedded_world import add_repairs; add_repairs()"
            )
            demo.probe_world = _world(demo.world())
        except Exception as error:
            log_tail = demo.log()[-6000:]
            raise RuntimeError(f"{error}\n--- the demo's log, its end ---\n{log_tail}") from error
        yield demo
    finally:
        demo.stop()


def _use_the_demo_as_an_operator(demo: EmbeddedDemo) -> None:
    """The writes a demo user makes first, over HTTP; they also give the probes their objects."""
    demo.api("demo-admin")  # a token that is not the operator's or the tenant admin's
    api = demo.api("demo-operator")
    base = demo.base_url
    tenants = api.get(f"{base}/api/tenants/", timeout=30).json()["results"]
    tenant_a = next(tenant for tenant in tenants if tenant["slug"] == "tenant-a")
    nodes = api.get(f"{base}/api/inventory/nodes/?ordering=hostname", timeout=30).json()["results"]
    writes = [
        (
            "/api/inventory/allocations/",
            {
                "tenant": tenant_a["id"],
                "hostlist": ",".join(node["hostname"] for node in nodes[:2]),
                "start": datetime.now(UTC).isoformat(),
                "purpose": "embedded default probe",
            },
        ),
        ("/api/actions/canary/", {"reason": "embedded default probe"}),
        (
            "/api/faults/tickets/",
            {"summary": "embedded default probe", "node": nodes[0]["hostname"]},
        ),
    ]
    for path, body in writes:
        response = api.post(f"{base}{path}", json=body, timeout=60)
        assert response.status_code in (201, 202), (
            f"POST {path}: {response.status_code} {response.text}"
        )


def _world(objects: dict) -> SimpleNamespace:
    missing = sorted(name for name, value in objects.items() if value is None)
    assert not missing, f"the demo has no object for the probes' {missing}"
    return SimpleNamespace(**{name: SimpleNamespace(**value) for name, value in objects.items()})


def _changes_nothing(probe, role: str) -> bool:
    """GETs, empty PATCHes and writes the matrix expects to be refused or rejected."""
    return probe.method in ("GET", "PATCH") or probe.expect[role] >= 400


def _send(demo: EmbeddedDemo, clients: dict, probe) -> tuple[str, int]:
    path = probe.path(demo.probe_world)
    url = f"{demo.base_url}{path}"
    if path.startswith("/api/"):
        response = clients["api"].request(probe.method, url, json=probe.body, timeout=60)
    else:
        browser = clients["browser"]
        form = None
        if probe.method != "GET":
            form = {**(probe.body or {}), "csrfmiddlewaretoken": browser.cookies["csrftoken"]}
        response = browser.request(probe.method, url, data=form, allow_redirects=False, timeout=60)
    return path, response.status_code


def _probe(demo: EmbeddedDemo, role: str, *, changing_the_demo: bool) -> None:
    clients = {"browser": demo.session(DEMO_USERS[role]), "api": demo.api(DEMO_USERS[role])}
    mismatches, sent = [], 0
    for name, route in sorted(MATRIX.items()):
        for probe in route.probes:
            if _changes_nothing(probe, role) == changing_the_demo:
                continue
            path, status = _send(demo, clients, probe)
            sent += 1
            expected = EMBEDDED_STATUSES.get((name, role), (probe.expect[role],))[0]
            if status >= 500 or status != expected:
                mismatches.append(f"{name}: {probe.method} {path} -> {status}, expected {expected}")
    assert sent, "no probes sent"
    assert not mismatches, "\n".join(mismatches) + "\n\n" + "\n".join(demo.server_errors_logged())


@pytest.mark.parametrize("role", sorted(DEMO_USERS))
def test_every_named_route_answers_in_the_embedded_default(embedded_demo, role):
    """Pages and API routes, reads and the writes that change nothing (refused or invalid)."""
    _probe(embedded_demo, role, changing_the_demo=False)


def test_readiness_and_login_page_answer_in_the_embedded_default(embedded_demo):
    """The matrix exempts them; the demo must still answer: ready without Redis."""
    readiness = requests.get(f"{embedded_demo.base_url}/readyz", timeout=30)
    assert readiness.status_code == 200, readiness.text
    assert requests.get(f"{embedded_demo.base_url}/login/", timeout=30).status_code == 200


def test_the_demo_lives_in_its_var_dir_not_the_checkouts(embedded_demo):
    """VAR_DIR moves every file of the embedded default: the developer's var/ is left alone."""
    var_dir = embedded_demo.var_dir
    paths = json.loads(
        run_python(
            var_dir,
            "import json; from django.conf import settings as s; print(json.dumps(["
            "s.DATABASES['default']['NAME'], str(s.VAR_DIR), s.FABRIC_CREDENTIALS_FILE, "
            "s.FABRIC_KNOWN_HOSTS_FILE]))",
        ).splitlines()[-1]
    )
    assert all(Path(path).is_relative_to(var_dir) for path in paths), paths
    assert (var_dir / "portal.sqlite3").stat().st_size > 0
    assert (var_dir / "secret-key").exists()
    assert f"settings in {var_dir / 'fabric' / 'env'}" in embedded_demo.log()


def test_the_demo_prints_its_logins_last(embedded_demo):
    """The logins used to scroll away above the import's progress; now demo-run prints them
    once the server answers, after everything its set-up printed."""
    deadline = time.monotonic() + 20
    while "password: " not in embedded_demo.log() and time.monotonic() < deadline:
        time.sleep(0.2)
    log = embedded_demo.log()
    logins = log.rindex("Demo users (all share one password):")
    assert log.index(f"settings in {embedded_demo.var_dir / 'fabric' / 'env'}") < logins
    assert f"password: {embedded_demo.password}" in log[logins:]
    assert "log in with one of the demo users above" in log[logins:]


def test_the_operators_writes_answer_in_the_embedded_default(embedded_demo):
    """The matrix's writes that do change the demo (cancel, acknowledge, end the allocation,
    drain...): after the read probes above, which need the demo as it was."""
    _probe(embedded_demo, "operator", changing_the_demo=True)


def _children(pid: int) -> set[int]:
    children = set()
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.add(int(status.parent.name))
    return children


def _web_server_pid(demo: EmbeddedDemo) -> int:
    for pid in _children(demo.process.pid):
        if b"rundemo" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    raise AssertionError("no rundemo process under scripts/demo-run")


async def _next_node_state(base_url: str, key: str, hostname: str, trigger, timeout: float):
    import websockets

    async with websockets.connect(
        base_url.replace("http://", "ws://") + "/ws/",
        additional_headers={"Authorization": f"Token {key}"},
    ) as socket:
        await socket.send(json.dumps({"type": "subscribe", "groups": ["cluster"]}))
        while json.loads(await socket.recv())["type"] != "subscribed":
            pass
        await asyncio.to_thread(trigger)
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            frame = json.loads(await asyncio.wait_for(socket.recv(), left))
            for event in frame.get("events", [frame] if frame["type"] == "event" else []):
                if event["event"] == "node.state" and event["payload"]["hostname"] == hostname:
                    return event["payload"]
    raise AssertionError(f"no node.state event for {hostname} in {timeout} s")


def test_periodic_work_runs_in_its_own_process_and_its_events_reach_sockets(embedded_demo):
    """The syncs run in a child of the web server, not in it, and what they
    publish still reaches a websocket served by the web process (through the relay)."""
    demo = embedded_demo
    key = demo.api("demo-operator").headers["Authorization"].split()[1]
    hostname = "gpu100"
    fail = functools.partial(
        run_python,
        demo.var_dir,
        f"from tests.portal.embedded_world import fail_node; fail_node({hostname!r}, True)",
    )
    try:
        # The node sync runs every 5 s in the demo; its event is the one thing that says DOWN.
        payload = asyncio.run(_next_node_state(demo.base_url, key, hostname, fail, 60))
        assert payload["state"] in ("down", "not_responding"), payload
    finally:
        run_python(
            demo.var_dir,
            f"from tests.portal.embedded_world import fail_node; fail_node({hostname!r}, False)",
        )
    runs = json.loads(
        run_python(
            demo.var_dir, "from tests.portal.embedded_world import periodic_runs; periodic_runs()"
        )
        .strip()
        .splitlines()[-1]
    )
    ran_by, finished = runs["jobs.tasks.sync_node_states"]
    assert finished, runs
    runner = int(ran_by.rsplit(":", 1)[1])
    web = _web_server_pid(demo)
    assert runner != web
    assert runner in _children(web), f"the sync ran in {runner}, not a child of the web {web}"


def test_analytics_are_the_same_on_sqlite_and_postgresql(db, tmp_path):
    assert connection.vendor == "postgresql"
    analytics_fixture.load()
    on_postgresql = json.loads(json.dumps(analytics_fixture.snapshot(), sort_keys=True))

    manage(tmp_path, "migrate", "--no-input")
    output = run_python(tmp_path, "from tests.jobs.analytics_fixture import main; main()")
    on_sqlite = json.loads(output.strip().splitlines()[-1])

    # The fixture reaches every bucket with percentiles, and the tenant scopes differ.
    operator_sizes = on_postgresql["operator"]["sizes"]["rows"]
    assert all(row["count"] >= 2 and row["cdf"] for row in operator_sizes), operator_sizes
    assert on_postgresql["tenant_admin"] != on_postgresql["operator"]
    # Running jobs of a trace are stopped where it was taken (issue 28): LEAST on both.
    traced = on_postgresql["operator"]["states"]["running_from_traces"]
    assert traced["count"] >= 2 and traced["taken_at_earliest"] < traced["taken_at_latest"]
    for scope in on_postgresql:
        assert on_sqlite[scope] == on_postgresql[scope], scope
