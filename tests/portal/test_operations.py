"""/healthz, /readyz (with a really stopped Redis), /metrics, the OpenAPI schema, task routes."""

import io

import pytest
from django.core.management import call_command
from django.test import Client

pytestmark = pytest.mark.django_db


def test_healthz_answers_without_touching_dependencies():
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_is_ready_when_everything_answers(settings):
    response = Client().get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json()["checks"] == {
        "database": "ok",
        "redis": "ok",
        "broker": "ok",
        "slurm": "ok",  # the simulator: no controller to reach
        "fabric": "not configured (no switches in the inventory)",
    }


def test_readyz_names_a_stopped_redis_with_503(settings, private_redis):
    from portal.celery import app

    url = private_redis.url
    settings.REDIS_URL = url
    original_broker = app.conf.broker_url
    app.conf.broker_url = url
    try:
        assert Client().get("/readyz").status_code == 200
        private_redis.stop()
        response = Client().get("/readyz")
    finally:
        app.conf.broker_url = original_broker
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["down"] == ["broker", "redis"]
    assert "unreachable" in body["checks"]["redis"]
    assert body["checks"]["database"] == "ok"


def test_metrics_exposes_requests_and_actions_in_prometheus_format(api_as):
    api_as("operator").post("/api/actions/canary/", {"reason": "metrics"}, format="json")
    Client().get("/healthz")
    response = Client().get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert 'portal_actions{status="queued"} 1.0' in text
    assert 'portal_http_requests_total{method="GET",status="200",view="healthz"}' in text
    assert 'portal_dependency_up{dependency="database"} 1.0' in text


def test_openapi_schema_generates_without_warnings_and_validates():
    out, err = io.StringIO(), io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out, stderr=err)
    schema = out.getvalue()
    assert "/api/actions/{id}/cancel/" in schema
    assert "/api/actions/canary/" in schema
    assert err.getvalue() == ""


def test_schema_and_docs_are_served_without_a_cdn(make_user):
    browser = Client()
    browser.force_login(make_user("viewer"))
    assert browser.get("/api/schema/").status_code == 200
    docs = browser.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "cdn.jsdelivr" not in html and "unpkg.com" not in html
    bundle = "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"
    assert bundle in html
    assert browser.get(bundle).status_code == 200  # served by us, offline


def test_every_celery_task_has_an_explicit_route(settings):
    from portal.celery import app

    app.loader.import_default_modules()
    ours = [name for name in app.tasks if not name.startswith("celery.")]
    assert ours, "no tasks registered"
    unrouted = [name for name in ours if name not in settings.CELERY_TASK_ROUTES]
    assert unrouted == []
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled <= set(ours)


@pytest.mark.django_db
def test_dashboard_and_metrics_ask_each_dependency_once_per_interval(client, make_user):
    """A page re-read on every live event must not wait on a slow dependency each time;
    /readyz still asks afresh."""
    from portal import health

    calls = []

    def slow_dependency():
        calls.append(1)
        return "slow unreachable: timed out"

    health.register_readiness_check("slow", slow_dependency)
    try:
        client.force_login(make_user("operator"))
        for _ in range(3):
            page = client.get("/").content.decode()
        assert "slow unreachable" in page
        client.get("/metrics")
        assert len(calls) == 1
        client.get("/readyz")
        assert len(calls) == 2
        health.forget_recent_readiness()
        client.get("/")
        assert len(calls) == 3
    finally:
        health.READINESS_CHECKS.pop("slow")
