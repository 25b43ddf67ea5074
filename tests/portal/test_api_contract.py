"""The OpenAPI contract is true: schemathesis over every operation of /api/schema/, every check.

For an operator and for a tenant admin, each operation of the schema the portal serves gets its
schemathesis cases: the coverage phase's deterministic boundary and invalid values (each
parameter and body field, unexpected methods), then fuzzing with a fixed seed, then fuzzing
again with a second seed; then the stateful phase walks chains of calls along the links
schemathesis infers from the schema (a POST's id into the GET, PATCH and DELETE of that
object), once per seed. They go to the WSGI application in process, against the test database
seeded with a small cluster (half of the fuzzed path parameters, and every reference in a
positive body, name a seeded object), and every built-in check runs on every response: no
server error; status, content type, headers and body as documented; positive data accepted
and negative data rejected; a missing required header refused; an undocumented method refused;
the token enforced (each request is sent again without it); a deleted object gone
(use-after-free) and a created one there (resource availability). A refusal of schema-valid
data passes only where the operation states the rule the schema cannot
(RULES_OUTSIDE_THE_SCHEMA, also in the operation's description) and the 4xx names a field;
KNOWN_GAPS lists, with the reason, where schemathesis itself gets it wrong.

Bounded for a two-core machine: fuzzing draws MAX_EXAMPLES per operation; the coverage phase
runs once per serializer (POST and PATCH; PUT and the bulk writes, which validate through the
same serializers, are fuzzed only) and for the first seed only; a tenant admin's writes,
refused before any input is read, are fuzzed only; workflows are WORKFLOW_SCENARIOS scenarios
of WORKFLOW_STEPS calls. Each role writes a summary (examples, time, statuses, findings) to
test-artifacts/api-contract-<role>.json; API_CONTRACT_KEEP_GOING=1 records every failing
example instead of stopping each operation at its first, to list all findings at once.

Every example (and each workflow scenario) runs in a savepoint that is rolled back, so each
request sees the same seeded world (a DELETE does not take the object away from the next
example), and a request that dooms its transaction does not poison the next one.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock

import hypothesis
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from hypothesis import seed as hypothesis_seed
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.config._checks import (
    NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES,
    POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES,
)
from schemathesis.core import NotSet
from schemathesis.core.failures import FailureGroup

from portal.api.rules_outside_the_schema import RULES_OUTSIDE_THE_SCHEMA
from portal.models import Role, Tenant
from portal.services.accounts import api_token_create, user_create
from portal.throttling import AddressRateThrottle
from portal.wsgi import application

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
KEEP_GOING = os.environ.get("API_CONTRACT_KEEP_GOING") == "1"
# The first seed runs every phase; the second fuzzes and walks workflows again with other data
# (the coverage phase is deterministic: a second seed would repeat it case for case).
SEEDS = (20251124, 20261126)
SEED = SEEDS[0]
MAX_EXAMPLES = 10  # fuzzed examples per operation and role
# Stateful workflows (links inferred from the schema's dependencies and Location headers):
# scenarios per seed and role, and calls per scenario.
WORKFLOW_SCENARIOS = 10
WORKFLOW_STEPS = 5
load_all_checks()
# Every built-in check runs: the conformance checks, positive and negative data acceptance,
# missing required headers, unsupported methods, ignored auth, use-after-free and resource
# availability (these two in the workflows, where a DELETE and a later GET meet).
EVERY_CHECK = sorted(CHECKS.get_all_names())
# A schema-valid request refused (ST202) is tolerated only for an operation that states the rule
# it broke: portal/api/rules_outside_the_schema.py lists, per operation, each rule OpenAPI cannot
# state (a name that must exist, exactly one of a or b, an end after the start, unique together,
# a step the state allows), and the schema's description of the operation says each
# (test_rules_outside_the_schema_are_in_the_description). Even then only a 4xx whose body names
# a field passes (refused_naming_a_field). Everything else the schema can state is in it.
# KNOWN_GAPS lists where schemathesis itself is wrong, by operation and failure code, and why.
# A failure outside both fails the test; the artifact counts those tolerated apart.
NO_BODY_IS_VALID = (
    "schemathesis's negative phase sends no body to an operation whose body is optional and "
    "reports the answer as 'Invalid component: positive test case': the request was valid"
)


def operations_with_an_optional_body(schema: dict) -> list[str]:
    return [
        f"{method.upper()} {path}"
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
        if "requestBody" in operation and not operation["requestBody"].get("required")
    ]


KNOWN_GAPS: dict[tuple[str, str], str] = {}  # filled once the schema is generated, below
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Written to by no tenant admin (their tokens excepted): see the docstring.
TENANT_ADMIN_WRITES = ("/api/tokens/",)


def generated_schema() -> dict:
    """The document /api/schema/ serves (test_served_schema_is_the_one_checked holds them
    equal), built at collection so that each operation is a test of its own."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document))


API_SCHEMA = generated_schema()
KNOWN_GAPS.update(
    {(label, "ST201"): NO_BODY_IS_VALID for label in operations_with_an_optional_body(API_SCHEMA)}
)
FUZZED_ONLY = {"phases": {"coverage": {"enabled": False}}}


def contract_config(seed: int, *, coverage: bool) -> SchemathesisConfig:
    return SchemathesisConfig.from_dict(
        {
            "seed": seed,
            "generation": {
                "max-examples": MAX_EXAMPLES,
                "with-security-parameters": False,  # each role's token is sent instead
                "database": "none",
                "no-shrink": True,
            },
            "checks": {
                "enabled": True,
                # The schema cannot say which ETag is current: an If-Match that is well formed
                # but stale is refused with 412 (nothing written), before the body is read.
                "positive_data_acceptance": {
                    "expected-statuses": [*POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES, "412"]
                },
                "negative_data_rejection": {
                    "expected-statuses": [*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "412"]
                },
            },
            "phases": {} if coverage else {"coverage": {"enabled": False}},
            "operations": [
                {"include-method": "PUT", **FUZZED_ONLY},
                {"include-path-regex": "/bulk/$", **FUZZED_ONLY},
            ],
        }
    )


# Copies: the stateful phase writes the links it infers into the document it was given.
contract_schema = schemathesis.openapi.from_dict(
    copy.deepcopy(API_SCHEMA), config=contract_config(SEEDS[0], coverage=True)
)
second_seed_schema = schemathesis.openapi.from_dict(
    copy.deepcopy(API_SCHEMA), config=contract_config(SEEDS[1], coverage=False)
)
# Requests, and the checks' own probes (ignored_auth sends each without its token), go to the
# WSGI application in process.
contract_schema.app = second_seed_schema.app = application


@contextmanager
def requests_in_test_transaction():
    """Django closes a connection that is inside a transaction when a request starts or ends
    (close_old_connections); the test client disconnects that handler, and so do we, since
    our requests go through the bare WSGI application inside the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


# Routes whose path parameter names a seeded object (see seed_world).
SEEDED_ROUTES = (
    "/api/actions/{id}/",
    "/api/audit/{id}/",
    "/api/fabric/lldp/findings/{id}/",
    "/api/fabric/pods/{id}/",
    "/api/fabric/ports/{id}/",
    "/api/fabric/switches/{hostname}/",
    "/api/fabric/switches/{id}/",
    "/api/faults/intake/{id}/",
    "/api/faults/repair-cases/{id}/",
    "/api/faults/tickets/{id}/",
    "/api/inventory/allocations/{id}/",
    "/api/inventory/cables/{id}/",
    "/api/inventory/gpus/{id}/",
    "/api/inventory/nics/{id}/",
    "/api/inventory/nodes/{id}/",
    "/api/inventory/pods/{id}/",
    "/api/inventory/ports/{id}/",
    "/api/inventory/racks/{id}/",
    "/api/inventory/spares/{id}/",
    "/api/inventory/swaps/{id}/",
    "/api/inventory/switches/{id}/",
    "/api/jobs/jobs/{job_id}/",
    "/api/tenants/{id}/",
    "/api/tokens/{id}/",
)


def seed_world() -> dict[str, list]:
    """A small cluster with something behind every route; returns the ids each route's path
    parameter can name (route template -> values)."""
    from faults.services import intake as fault_intake
    from inventory.models import GPU, NIC, Allocation, Cable, Node, Pod, Rack, Switch, SwitchPort
    from jobs.models import Job
    from portal.actions.canary import CANARY_KIND
    from portal.models import AuditEntry
    from portal.services.actions import enqueue_action

    tenant_a = Tenant.objects.get(slug="tenant-a")
    operator = user_create(username="contract-seeder", role=Role.OPERATOR)
    pods = [Pod.objects.create(name=f"pod{number}") for number in (1, 2)]
    racks = [Rack.objects.create(name=f"rack{number}", pod=pods[number - 1]) for number in (1, 2)]
    nodes = []
    for number, (pod, rack) in enumerate(zip(pods, racks, strict=True), start=1):
        node = Node.objects.create(
            hostname=f"gpu00{number}", pod=pod, rack=rack, slurm_state="idle"
        )
        for index in range(8):
            GPU.objects.create(
                node=node,
                index=index,
                uuid=f"GPU-{number:04d}{index:04d}-0000-0000-0000-000000000000",
                serial=f"16543220{number:02d}{index:02d}",
            )
        NIC.objects.create(node=node, device="mlx5_0", role=NIC.Role.RAIL, rail=0)
        NIC.objects.create(node=node, device="mlx5_1", role=NIC.Role.RAIL, rail=1)
        nodes.append(node)
    leaf = Switch.objects.create(
        hostname="leaf-p1-r0",
        role=Switch.Role.LEAF,
        pod=pods[0],
        rail=0,
        management_address="192.0.2.10",
    )
    storage = Switch.objects.create(hostname="storage-sw1", role=Switch.Role.STORAGE)
    ports = [
        SwitchPort.objects.create(switch=leaf, name=f"Ethernet{8 * n}", index=n + 1)
        for n in range(2)
    ]
    Cable.objects.create(
        a_nic=nodes[0].nics.get(device="mlx5_0"),
        b_port=ports[0],
        type=Cable.Type.DR4_400G,
        status="connected",
        label="c1",
    )
    now = datetime.now(UTC)
    allocation = Allocation.objects.create(tenant=tenant_a, start=now - timedelta(days=1))
    allocation.nodes.set([nodes[0]])
    Job.objects.create(
        job_id="4242",
        state="RUNNING",
        source=Job.Source.SQUEUE,
        account="tenant-a",
        tenant=tenant_a,
        gpus=8,
        node_count=1,
        nodelist="gpu001",
        submit_time=now - timedelta(hours=2),
        start_time=now - timedelta(hours=1),
    )
    Job.objects.create(
        job_id="4243",
        state="COMPLETED",
        source=Job.Source.SACCT,
        account="other",
        gpus=16,
        node_count=2,
        nodelist="gpu[001-002]",
        submit_time=now - timedelta(hours=5),
        start_time=now - timedelta(hours=4),
        end_time=now - timedelta(hours=3),
        elapsed_seconds=3600,
        gpu_seconds=57600,
    )
    # Tickets with and without components: the API must describe both.
    fault_intake.submit_user_report(
        reported_by=operator, summary="storage switch unreachable", switch=storage
    )
    fault_intake.receive_platform_event(
        raw_body=json.dumps({"kind": "xid", "node": "gpu001", "gpu": 3, "xid": 79}),
        submitted_by=operator,
    )
    fault_intake.receive_platform_event(
        raw_body=json.dumps({"kind": "switch_reboot", "switch": "leaf-p1-r0"}),
        submitted_by=operator,
    )
    enqueue_action(
        kind=CANARY_KIND, target="worker pipeline", reason="contract", requested_by=operator
    )
    from fabric.models import LldpFinding
    from faults.models import FaultTicket, IntakeRecord, RepairCase
    from faults.services import repairs
    from inventory.models import ComponentSwap

    # Repair cases in two states (one whose parts may be installed) and a swap with history.
    gpu_ticket = FaultTicket.objects.filter(gpu__isnull=False).first()
    for status in ("open", "part_received"):
        case = repairs.open_repair_case(
            ticket=gpu_ticket, vendor="Supermicro", component="gpu", actor=operator,
            vendor_case_number=f"SM-{status}",
            parts=[repairs.PartRequest(kind="gpu", gpu_index=3),
                   repairs.PartRequest(kind="psu", position="PSU1")],
        )
        if status != "open":
            repairs.transition_repair_case(case=case, to_status=status, actor=operator)
    repairs.install_repair_part(case=case, part=case.parts.last(), serial_in="PSU-NEW",
                                serial_out="PSU-OLD", actor=operator)
    from inventory.models import SpareStock
    from inventory.spares import spare_stock_set

    # A shelf with free GPUs (a reservation can succeed) and one with none (it is refused).
    spare_stock_set(kind="gpu", site="tokyo", on_hand=50, minimum=2)
    spare_stock_set(kind="psu", site="tokyo", on_hand=0, minimum=1)
    from portal.models import Action, APIToken

    LldpFinding.objects.create(
        kind=LldpFinding.Kind.MISSING,
        key="leaf-p1-r0:Ethernet8",
        summary="no neighbor",
        first_seen_at=now,
        last_seen_at=now,
    )
    return {
        "/api/actions/{id}/": list(Action.objects.values_list("pk", flat=True)),
        "/api/audit/{id}/": list(AuditEntry.objects.values_list("pk", flat=True)[:5]),
        "/api/fabric/lldp/findings/{id}/": list(LldpFinding.objects.values_list("pk", flat=True)),
        "/api/fabric/pods/{id}/": [pod.pk for pod in pods],
        "/api/fabric/ports/{id}/": [port.pk for port in ports],
        "/api/fabric/switches/{hostname}/": [leaf.hostname, storage.hostname],
        "/api/fabric/switches/{id}/": [leaf.pk, storage.pk],
        "/api/faults/intake/{id}/": list(IntakeRecord.objects.values_list("pk", flat=True)),
        "/api/faults/repair-cases/{id}/": list(RepairCase.objects.values_list("pk", flat=True)),
        "/api/faults/tickets/{id}/": list(FaultTicket.objects.values_list("pk", flat=True)),
        "/api/inventory/allocations/{id}/": [allocation.pk],
        "/api/inventory/cables/{id}/": list(Cable.objects.values_list("pk", flat=True)),
        "/api/inventory/gpus/{id}/": list(GPU.objects.values_list("pk", flat=True)[:3]),
        "/api/inventory/nics/{id}/": list(NIC.objects.values_list("pk", flat=True)[:3]),
        "/api/inventory/nodes/{id}/": [node.pk for node in nodes],
        "/api/inventory/pods/{id}/": [pod.pk for pod in pods],
        "/api/inventory/ports/{id}/": [port.pk for port in ports],
        "/api/inventory/racks/{id}/": [rack.pk for rack in racks],
        "/api/inventory/spares/{id}/": list(SpareStock.objects.values_list("pk", flat=True)),
        "/api/inventory/swaps/{id}/": list(ComponentSwap.objects.values_list("pk", flat=True)),
        "/api/inventory/switches/{id}/": [leaf.pk, storage.pk],
        "/api/jobs/jobs/{job_id}/": ["4242", "4243"],
        "/api/tenants/{id}/": list(Tenant.objects.values_list("pk", flat=True)),
        "/api/tokens/{id}/": list(APIToken.objects.values_list("pk", flat=True)),
    }


def seeded_template_for(path: str) -> str | None:
    """The seeded route template an operation's path lies under (`/api/inventory/nodes/{id}/`
    for `/api/inventory/nodes/{id}/trace/`), if any."""
    for template in SEEDED_ROUTES:
        if path.startswith(template):
            return template
    return None


class ContractRun:
    """What one role's run sent and what came back: the summary written to test-artifacts/."""

    def __init__(self, role: str):
        self.role = role
        self.examples = 0
        self.operations: set[str] = set()
        self.skipped = 0
        self.statuses: Counter = Counter()
        self.phases: Counter = Counter()
        self.failures: list[dict] = []
        self.started = time.monotonic()

    def record(self, case, response, failures, *, workflow: bool = False) -> list:
        """Records the example; returns its failures that neither a stated rule nor KNOWN_GAPS
        explains."""
        self.examples += 1
        self.operations.add(case.operation.label)
        self.statuses[response.status_code] += 1
        phase = "stateful" if workflow else case.meta.phase.name.value if case.meta else "explicit"
        self.phases[phase] += 1
        new = []
        for failure in failures:
            by_rule = (
                failure.code == "ST202"
                and case.operation.label in RULES_OUTSIDE_THE_SCHEMA
                and refused_naming_a_field(response)
            )
            known = KNOWN_GAPS.get((case.operation.label, failure.code))
            if known is NO_BODY_IS_VALID and not isinstance(case.body, NotSet):
                known = None  # only the case schemathesis gets wrong: no body at all
            if not by_rule and known is None:
                new.append(failure)
            self.failures.append(
                {
                    "stated_rule": by_rule,
                    "known_gap": known is not None and not by_rule,
                    "operation": case.operation.label,
                    "phase": phase,
                    "code": failure.code,
                    "kind": failure.kind_title,
                    "title": failure.title,
                    "status": response.status_code,
                    "message": failure.message[:500],
                    "body": response.text[:300],
                    "request": f"{case.method} {case.formatted_path} query={case.query} "
                    f"body={str(case.body)[:200]}",
                }
            )
        return new

    def summary(self) -> dict:
        kinds = Counter(
            f"{failure['code']} {failure['kind']}"
            for failure in self.failures
            if not failure["known_gap"] and not failure["stated_rule"]
        )
        known = Counter(
            f"{failure['code']} {failure['kind']}"
            for failure in self.failures
            if failure["known_gap"]
        )
        by_rule = Counter(
            failure["operation"] for failure in self.failures if failure["stated_rule"]
        )
        return {
            "role": str(self.role),
            "seeds": list(SEEDS),
            "max_examples": MAX_EXAMPLES,
            "checks": EVERY_CHECK,
            "operations": len(self.operations),
            "examples": self.examples,
            "coverage_cases_skipped": self.skipped,
            "seconds": round(time.monotonic() - self.started, 1),
            "statuses": {str(code): n for code, n in sorted(self.statuses.items())},
            "phases": dict(self.phases),
            "failures_by_kind": dict(sorted(kinds.items())),
            "known_gaps_by_kind": dict(sorted(known.items())),
            "refusals_by_stated_rule": sum(by_rule.values()),
            "refusals_by_stated_rule_per_operation": dict(sorted(by_rule.items())),
            "failures": self.failures,
        }


def refused_naming_a_field(response) -> bool:
    """A 4xx whose JSON body names at least one field (`{"node": [...]}`), or, for a bulk
    write, an item's field (`{"errors": [{"index": 0, "fields": {...}}]}`)."""
    if not 400 <= response.status_code < 500:
        return False
    try:
        body = json.loads(response.text)
    except ValueError:
        return False
    if not isinstance(body, dict):
        return False
    errors = body.get("errors")
    if isinstance(errors, list) and errors:
        # A bulk write's items name their fields; a topology spec's errors their location.
        return all(
            isinstance(error, dict) and (error.get("fields") or "location" in error)
            for error in errors
        )
    return any(name not in ("detail", "errors") for name in body)


@dataclass
class ContractWorld:
    role: str
    headers: dict[str, str]
    run: ContractRun


@pytest.fixture(scope="module", params=[Role.OPERATOR, Role.TENANT_ADMIN])
def contract_world(request, django_db_setup, django_db_blocker):
    """The seeded world for one role's run, in a transaction rolled back when the run ends."""
    from django.conf import settings

    role = request.param
    # Thousands of refused requests are the point here; log only server errors.
    request_log = logging.getLogger("django.request")
    log_level = request_log.level
    request_log.setLevel(logging.ERROR)
    hashers = settings.PASSWORD_HASHERS
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # ignored_auth sends requests without the token, thousands from one address: the brake on
    # those (tests/portal/test_api_throttling.py) would answer 429 instead of 401.
    no_throttles = mock.patch.object(AddressRateThrottle, "get_rate", return_value=None)
    with no_throttles, django_db_blocker.unblock(), transaction.atomic():
        tenant_a = Tenant.objects.create(
            name="Tenant A", slug="tenant-a", slurm_account="tenant-a", evpn_vni=10200
        )
        Tenant.objects.create(
            name="Tenant B", slug="tenant-b", slurm_account="tenant-b", evpn_vni=10300
        )
        user = user_create(
            username=f"contract-{role}",
            role=role,
            tenant=tenant_a if role == Role.TENANT_ADMIN else None,
            # One user with an email, one without: /api/me/ must describe both.
            email="tenant-admin@example.org" if role == Role.TENANT_ADMIN else "",
        )
        _, key = api_token_create(user=user, name="contract")
        SEEDED_OBJECTS.clear()
        SEEDED_OBJECTS.update(seed_world())
        world = ContractWorld(
            role=role, headers={"Authorization": f"Token {key}"}, run=ContractRun(role)
        )
        yield world
        transaction.set_rollback(True)
    settings.PASSWORD_HASHERS = hashers
    request_log.setLevel(log_level)
    summary = world.run.summary()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"api-contract-{role}.json").write_text(json.dumps(summary, indent=1))
    print({key: value for key, value in summary.items() if key != "failures"})


# Half of the fuzzed path parameters name a seeded object. Strategies are built before the
# world is seeded, so they draw a placeholder that map_path_parameters turns into a real value.
SEEDED_PLACEHOLDER = "seeded-object-"
SEEDED_OBJECTS: dict[str, list] = {}


def before_generate_path_parameters(context, strategy):
    template = seeded_template_for(context.operation.path)
    if template is None:
        return strategy
    name = template.rsplit("{", 1)[1].rstrip("}/")
    placeholders = st.integers(0, 3).map(lambda n: f"{SEEDED_PLACEHOLDER}{n}")
    return st.one_of(strategy, st.fixed_dictionaries({name: placeholders}))


def map_path_parameters(context, path_parameters):
    template = seeded_template_for(context.operation.path)
    if template is None or not path_parameters:
        return path_parameters
    mapped = dict(path_parameters)
    for name, value in path_parameters.items():
        if isinstance(value, str) and value.startswith(SEEDED_PLACEHOLDER):
            values = SEEDED_OBJECTS[template]
            mapped[name] = values[int(value.removeprefix(SEEDED_PLACEHOLDER)) % len(values)]
    return mapped


# Body fields that name another object: the schema says "an integer", and a positive case's
# random one names nothing (a 400 naming the field). A positive case names a seeded object, as
# half the path parameters do; negative cases keep what they drew.
REFERENCE_FIELDS = {
    "tenant": "/api/tenants/{id}/",
    "node": "/api/inventory/nodes/{id}/",
    "nodes": "/api/inventory/nodes/{id}/",
    "node_ids": "/api/inventory/nodes/{id}/",
    "pod": "/api/inventory/pods/{id}/",
    "rack": "/api/inventory/racks/{id}/",
    "switch": "/api/inventory/switches/{id}/",
    "a_nic": "/api/inventory/nics/{id}/",
    "b_nic": "/api/inventory/nics/{id}/",
    "a_port": "/api/inventory/ports/{id}/",
    "b_port": "/api/inventory/ports/{id}/",
    "breakout_parent": "/api/inventory/ports/{id}/",
    "gpu": "/api/inventory/gpus/{id}/",
    "affinity_gpu": "/api/inventory/gpus/{id}/",
}


def _seeded_reference(name: str, value):
    values = SEEDED_OBJECTS.get(REFERENCE_FIELDS[name]) or [value]
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return values[value % len(values)]
    if isinstance(value, list) and value and all(type(item) is int for item in value):
        return [values[item % len(values)] for item in value]
    return value


def _with_seeded_references(body):
    if isinstance(body, list):
        return [_with_seeded_references(item) for item in body]
    if not isinstance(body, dict):
        return body
    return {
        name: _seeded_reference(name, value) if name in REFERENCE_FIELDS else value
        for name, value in body.items()
    }


def map_case(context, case):
    if case.meta is not None and case.meta.generation.mode.is_positive:
        case.body = _with_seeded_references(case.body)
    return case


for _schema in (contract_schema, second_seed_schema):
    _schema.hook(before_generate_path_parameters)
    _schema.hook(map_path_parameters)
    _schema.hook(map_case)


def fuzzed_only_for(role: str, case) -> bool:
    """A tenant admin's writes are refused before any input is read: the coverage phase's
    hundreds of invalid bodies would each be the same 403, so only fuzzed examples run."""
    return (
        role == Role.TENANT_ADMIN
        and case.method.upper() in UNSAFE_METHODS
        and not case.operation.path.startswith(TENANT_ADMIN_WRITES)
        and case.meta is not None
        and case.meta.phase.name.value == "coverage"
    )


def check_case(case, contract_world) -> None:
    if fuzzed_only_for(contract_world.role, case):
        contract_world.run.skipped += 1
        return
    with requests_in_test_transaction(), transaction.atomic():
        response = case.call(headers=contract_world.headers)
        try:
            # Every enabled check; those that send more requests (ignored_auth,
            # unsupported_method) do so inside this rolled-back transaction too.
            case.validate_response(response, headers=contract_world.headers)
        except FailureGroup as group:
            new = contract_world.run.record(case, response, group.exceptions)
            if new and not KEEP_GOING:
                raise
        else:
            contract_world.run.record(case, response, [])
        finally:
            transaction.set_rollback(True)


@pytest.mark.django_db
@contract_schema.parametrize()
def test_api_contract(case, contract_world):
    check_case(case, contract_world)


@pytest.mark.django_db
@second_seed_schema.parametrize()
def test_api_contract_second_seed(case, contract_world):
    check_case(case, contract_world)


@pytest.mark.django_db
@pytest.mark.parametrize("seed", SEEDS)
def test_api_workflows(seed, contract_world):
    """The stateful phase: chains of calls along the links schemathesis infers (a POST's id
    into the GET, PATCH and DELETE of that object), every check on each response; each
    scenario runs in a savepoint rolled back when it ends."""
    world = contract_world

    class Workflow(contract_schema.as_state_machine()):
        def setup(self):
            self.scenario = transaction.atomic()
            self.scenario.__enter__()

        def teardown(self):
            transaction.set_rollback(True)
            self.scenario.__exit__(None, None, None)

        def get_call_kwargs(self, case):
            return {"headers": world.headers}

        def call(self, case, **kwargs):
            with transaction.atomic():  # a request that dooms its work leaves the rest be
                return case.call(**kwargs)

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            try:
                # As the base class does, with the headers the token went in, so that
                # ignored_auth knows it was the run's own (and sends the request without it).
                case.validate_response(
                    response,
                    additional_checks=additional_checks,
                    headers=world.headers,
                    recorder=self.recorder,
                )
            except FailureGroup as group:
                new = world.run.record(case, response, group.exceptions, workflow=True)
                if new and not KEEP_GOING:
                    raise
            else:
                world.run.record(case, response, [], workflow=True)

    settings = hypothesis_settings(
        max_examples=WORKFLOW_SCENARIOS,
        stateful_step_count=WORKFLOW_STEPS,
        database=None,
        deadline=None,
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    with requests_in_test_transaction():
        hypothesis_seed(seed)(Workflow).run(settings=settings)


@pytest.mark.django_db
def test_served_schema_is_the_one_checked(contract_world):
    from django.test import Client

    response = Client().get("/api/schema/?format=json", headers=contract_world.headers)
    assert response.status_code == 200
    assert json.loads(response.content) == API_SCHEMA


def test_rules_outside_the_schema_are_in_the_description():
    """Each stated rule is an operation of the schema, and its description says the rule."""
    operations = {
        f"{method.upper()} {path}": operation
        for path, methods in API_SCHEMA["paths"].items()
        for method, operation in methods.items()
    }
    assert set(RULES_OUTSIDE_THE_SCHEMA) <= set(operations)
    for label, rules in RULES_OUTSIDE_THE_SCHEMA.items():
        for rule in rules:
            assert rule in operations[label]["description"], (label, rule)
