"""The request pipeline and the task queues are each assembled in one place in
portal/settings.py: these are the values they must come to, in order, with and without the
single sign-on proxy (which adds its middleware right after authentication)."""

import json

from tests.portal.test_production_settings import run_with

MIDDLEWARE = [
    "portal.metrics.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "portal.middleware.RejectNulCharactersMiddleware",
    "portal.middleware.RequestBodyErrorsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",
]
PROXY_MIDDLEWARE = "portal.identity.remote.TrustedProxyRemoteUserMiddleware"

TASK_ROUTES = {
    "portal.tasks.run_action": {"queue": "actions"},
    "portal.tasks.sweep_stuck_actions": {"queue": "periodic"},
    "jobs.tasks.sync_node_states": {"queue": "periodic"},
    "jobs.tasks.sync_live_jobs": {"queue": "periodic"},
    "jobs.tasks.import_accounting": {"queue": "periodic"},
    "fabric.tasks.poll_fabric_counters": {"queue": "periodic"},
    "fabric.tasks.reconcile_fabric_lldp": {"queue": "periodic"},
    "fabric.tasks.check_running_jobs_rail_health": {"queue": "periodic"},
    "telemetry.tasks.summarise_finished_jobs": {"queue": "periodic"},
    "fabric.tasks.run_maintenance_windows": {"queue": "periodic"},
    "faults.tasks.poll_bmc_events": {"queue": "periodic"},
}

READ_SETTINGS = (
    "import django, json, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'portal.settings'; "
    "django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'middleware': s.MIDDLEWARE, 'routes': s.CELERY_TASK_ROUTES, "
    "'beat': s.CELERY_BEAT_SCHEDULE, 'poll': s.FABRIC_POLL_INTERVAL, "
    "'stale': s.FABRIC_READINESS_STALE_SECONDS}))"
)


def settings_under(environment: dict[str, str]) -> dict:
    result = run_with(environment, "-c", READ_SETTINGS)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_middleware_and_task_routes_in_order():
    values = settings_under({})
    assert values["middleware"] == MIDDLEWARE
    assert values["routes"] == TASK_ROUTES
    assert list(values["routes"]) == list(TASK_ROUTES)  # and in the order they are listed


def test_the_proxy_middleware_follows_authentication():
    values = settings_under(
        {"REMOTE_AUTH_ENABLED": "true", "REMOTE_AUTH_TRUSTED_PROXIES": "10.0.0.1"}
    )
    authentication = MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware")
    expected = [*MIDDLEWARE]
    expected.insert(authentication + 1, PROXY_MIDDLEWARE)
    assert values["middleware"] == expected


def test_one_poll_interval_paces_the_poll_the_rail_check_and_readiness():
    values = settings_under({"FABRIC_POLL_INTERVAL": "20"})
    assert values["poll"] == 20.0
    assert values["stale"] == 60.0
    for entry in ("fabric-poll-counters", "fabric-rail-health-of-running-jobs"):
        assert values["beat"][entry]["schedule"] == 20.0
        assert values["beat"][entry]["options"] == {"expires": 20.0}
