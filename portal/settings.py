"""The portal's one settings module: every deployment-specific value comes from the environment.

Embedded default (nothing set): SQLite, tasks run in process, in-memory channel layer and cache.
With DATABASE_URL / REDIS_URL: PostgreSQL via psycopg 3, Celery over Redis, channels-redis.
"""

import json
import os
from datetime import timedelta
from pathlib import Path

from portal.environment import (
    ConfigurationError,
    channel_layer_prefix,
    database_config,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_rate,
    local_secret_key,
)

BASE_DIR = Path(__file__).resolve().parent.parent
ENV = os.environ
# --- embedded default: where local state lives (SQLite file, secret key, fabric lab files) ------
# VAR_DIR moves it out of the checkout's var/, so a test can run a whole demo without touching
# the developer's; relative paths are taken from the checkout.
VAR_DIR = BASE_DIR / (ENV.get("VAR_DIR", "").strip() or "var")

DEBUG = env_bool(ENV, "DEBUG", False)
SECRET_KEY = ENV.get("SECRET_KEY", "")
if not SECRET_KEY:
    if env_bool(ENV, "REQUIRE_SECRET_KEY", False):
        raise ConfigurationError("SECRET_KEY must be set in production")
    # Embedded mode: a key generated once and kept in var/, so logins survive a restart of the
    # demo server and every local process (web, worker, tests) signs with the same key.
    SECRET_KEY = local_secret_key(VAR_DIR / "secret-key")

ALLOWED_HOSTS = env_list(ENV, "ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list(ENV, "CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from our own static files, no CDN
    "channels",
    "portal",
    "inventory",
    "jobs",
    "faults",
    "fabric",
    "console",  # above the domain apps: pages and endpoints that compose them (impact, search)
    "telemetry",  # GPU telemetry read from the site's Prometheus
    "axes",  # login lock-out
    "csp",  # Content-Security-Policy
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"
ASGI_APPLICATION = "portal.asgi.application"
AUTH_USER_MODEL = "portal.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.context_processors.navigation",
            ],
        },
    },
]

DATABASES = {"default": database_config(ENV, str(VAR_DIR / "portal.sqlite3"))}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    VAR_DIR.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Only deployments that run collectstatic set it; the demo serves through the finders.
STATIC_ROOT = ENV.get("STATIC_ROOT") or None
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Serve straight from the app/static dirs so `make demo` works without collectstatic.
WHITENOISE_USE_FINDERS = True

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool(ENV, "SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# --- Redis: Celery broker, channel layer, cache -------------------------------------------------
REDIS_URL = ENV.get("REDIS_URL", "").strip()
if REDIS_URL and not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ConfigurationError("REDIS_URL must start with redis://, rediss:// or unix://")

if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
    CHANNEL_LAYERS = {
        "default": {
            # Each web process is one member of a group however many websockets it serves
            # (portal/realtime/fanout.py): a broadcast to processes, which is what Redis pub/sub
            # is. One PUBLISH per event and a push to each process, where the core layer
            # (RedisChannelLayer) writes a sorted set per member and takes four round trips to
            # receive each message. 200 sockets at 100 events/s (bench/ws_fanout.py --soak),
            # back to back on a shared 2-core machine: p99 105 ms vs 108-121 ms, max 135 vs
            # 196-238 ms, server CPU 15% vs 21% of a core; under heavier load the core layer's
            # p99 reached 0.7-0.9 s, pub/sub's 0.17 s. Pub/sub has no blocking pop to race
            # redis-py 8's 5 s read timeout (which closed every idle socket), no group expiry
            # and no dead members; it keeps nothing for a process that is briefly disconnected,
            # so the fan-out's heartbeat notices the gap and has clients re-read.
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        # redis-py 8 caps a pool at 100 connections and raises instead of waiting.
                        "max_connections": env_int(ENV, "CHANNEL_REDIS_MAX_CONNECTIONS", 2000),
                    }
                ],
                # Pub/sub channels ignore the database number in REDIS_URL: the prefix keeps
                # portals sharing a Redis server apart.
                "prefix": channel_layer_prefix(ENV, REDIS_URL),
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# An open websocket checks again what its user may follow at least this often (besides at once
# when a service changes a token, an account, a role or an allocation): the bound on how long a
# change made behind the services' back (a raw update, an allocation reaching its end) goes
# unnoticed. Each check is a few queries per socket.
REALTIME_REAUTH_SECONDS = env_float(ENV, "REALTIME_REAUTH_SECONDS", 60.0)
if REALTIME_REAUTH_SECONDS <= 0:
    raise ConfigurationError("REALTIME_REAUTH_SECONDS must be a positive number of seconds")

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fixup closes the worker's database connections before and after every task
# unless told to reuse them: a new PostgreSQL connection for each Action (~1.5 ms of every
# claim, and a server backend started each time). It now reconnects every 1,000 tasks, and
# portal/celery.py checks the connection before each task the way Django does before a
# request (CONN_MAX_AGE, CONN_HEALTH_CHECKS).
CELERY_DB_REUSE_MAX = 1000
# --- Requests never wait on the broker: the Action row is the outbox, so a send that
# fails is left to the sweeper. No task result is read (the Action row is the result), so no
# publish waits on the result backend (its reconnect loop held requests 16-19 s while Redis was
# down); one quick retry covers a pooled connection that went stale, short socket timeouts
# bound a Redis that does not answer.
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.1,
    "interval_max": 0.1,
}
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # A message whose worker died unacknowledged goes back to the queue after this long.
    "visibility_timeout": env_int(ENV, "CELERY_VISIBILITY_TIMEOUT", 3600),
    "socket_connect_timeout": env_float(ENV, "CELERY_BROKER_CONNECT_TIMEOUT", 1.0),
    "socket_timeout": env_float(ENV, "CELERY_BROKER_SOCKET_TIMEOUT", 5.0),
}
if REDIS_URL:
    # The cache on the same Redis fails open (portal/cache.py) and waits as briefly.
    CACHES["default"]["BACKEND"] = "portal.cache.FailOpenRedisCache"
    CACHES["default"]["OPTIONS"] = {
        "socket_connect_timeout": CELERY_BROKER_TRANSPORT_OPTIONS["socket_connect_timeout"],
        "socket_timeout": CELERY_BROKER_TRANSPORT_OPTIONS["socket_connect_timeout"],
    }
# --- end of broker bounds ---
CELERY_TASK_DEFAULT_QUEUE = "default"
# Every task's queue, in one place (tests/portal/test_operations.py fails on a task without one).
CELERY_TASK_ROUTES = {
    "portal.tasks.run_action": {"queue": "actions"},
    "portal.tasks.sweep_stuck_actions": {"queue": "periodic"},
    "jobs.tasks.sync_node_states": {"queue": "periodic"},
    "jobs.tasks.sync_live_jobs": {"queue": "periodic"},
    "jobs.tasks.import_accounting": {"queue": "periodic"},
    "fabric.tasks.poll_fabric_counters": {"queue": "periodic"},
    "fabric.tasks.reconcile_fabric_lldp": {"queue": "periodic"},
    "fabric.tasks.check_running_jobs_rail_health": {"queue": "periodic"},
    "telemetry.tasks.summarise_finished_jobs": {"queue": "periodic"},
}
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-actions": {
        "task": "portal.tasks.sweep_stuck_actions",
        "schedule": env_float(ENV, "ACTION_SWEEP_INTERVAL", 30.0),
    },
}

# --- jobs app: Slurm sync (jobs/sync.py, jobs/tasks.py) ----------------------------------------
# Node states and squeue are mirrored every few seconds; accounting (sacct) less often.
JOBS_NODE_SYNC_INTERVAL = env_float(ENV, "JOBS_NODE_SYNC_INTERVAL", 5.0)
JOBS_LIVE_SYNC_INTERVAL = env_float(ENV, "JOBS_LIVE_SYNC_INTERVAL", 5.0)
JOBS_ACCOUNTING_INTERVAL = env_float(ENV, "JOBS_ACCOUNTING_INTERVAL", 60.0)
# How far back the first accounting import reads when there is no watermark yet.
JOBS_ACCOUNTING_INITIAL_DAYS = env_float(ENV, "JOBS_ACCOUNTING_INITIAL_DAYS", 7.0)
# The simulator driver's cluster (jobs/drivers/simulator.py DEFAULTS lists the keys).
SLURM_SIMULATOR = {
    "seed": env_int(ENV, "SLURM_SIMULATOR_SEED", 20250301),
    "mean_arrival_seconds": env_float(ENV, "SLURM_SIMULATOR_MEAN_ARRIVAL_SECONDS", 2700.0),
}
CELERY_BEAT_SCHEDULE.update(
    {
        # `expires`: a run still queued when the next is due is dropped, not piled up.
        "jobs-sync-node-states": {
            "task": "jobs.tasks.sync_node_states",
            "schedule": JOBS_NODE_SYNC_INTERVAL,
            "options": {"expires": JOBS_NODE_SYNC_INTERVAL},
        },
        "jobs-sync-live-jobs": {
            "task": "jobs.tasks.sync_live_jobs",
            "schedule": JOBS_LIVE_SYNC_INTERVAL,
            "options": {"expires": JOBS_LIVE_SYNC_INTERVAL},
        },
        "jobs-import-accounting": {
            "task": "jobs.tasks.import_accounting",
            "schedule": JOBS_ACCOUNTING_INTERVAL,
            "options": {"expires": JOBS_ACCOUNTING_INTERVAL},
        },
    }
)
# --- end of jobs app block ----------------------------------------------------------------------

# --- fabric-monitor: counter polling and LLDP reconciliation (fabric/polling.py, lldp.py) ------
# How often every switch's counters are read; the rail check and readiness follow it.
FABRIC_POLL_INTERVAL = env_float(ENV, "FABRIC_POLL_INTERVAL", 60.0)
CELERY_BEAT_SCHEDULE |= {
    "fabric-poll-counters": {
        "task": "fabric.tasks.poll_fabric_counters",
        "schedule": FABRIC_POLL_INTERVAL,
        # A poll that waited longer than one interval is stale: the next one is due anyway.
        "options": {"expires": FABRIC_POLL_INTERVAL},
    },
    "fabric-reconcile-lldp": {
        "task": "fabric.tasks.reconcile_fabric_lldp",
        "schedule": env_float(ENV, "FABRIC_LLDP_INTERVAL", 300.0),
    },
    # Rail imbalance needs several history samples: checking as often as the poll is enough.
    "fabric-rail-health-of-running-jobs": {
        "task": "fabric.tasks.check_running_jobs_rail_health",
        "schedule": FABRIC_POLL_INTERVAL,
        "options": {"expires": FABRIC_POLL_INTERVAL},
    },
}
# Switches read at once by one poll (threads; each waits on SSH, not on the CPU).
# Past this many nodes the dashboard draws pods (or a big pod's racks) as aggregate cells with a
# drill-down, not a cell per node: 12,500 node cells were 2.96 MB and 1.1 s, and 2,000 (scale
# 20) 1.3 s under load (issue 28). SAKURAONE's 100 nodes stay a cell each.
DASHBOARD_AGGREGATE_ABOVE_NODES = env_int(ENV, "DASHBOARD_AGGREGATE_ABOVE_NODES", 1000)
FABRIC_POLL_CONCURRENCY = env_int(ENV, "FABRIC_POLL_CONCURRENCY", 16)
# History: one row per port per resolution slot, kept as a ring of this many seconds.
FABRIC_HISTORY_SECONDS = env_int(ENV, "FABRIC_HISTORY_SECONDS", 86400)
FABRIC_HISTORY_RESOLUTION_SECONDS = env_int(ENV, "FABRIC_HISTORY_RESOLUTION_SECONDS", 60)
# Rail imbalance (paper Observation 7): a rail under RATIO x the median of the other rails
# for SAMPLES consecutive history samples.
FABRIC_RAIL_IMBALANCE_RATIO = env_float(ENV, "FABRIC_RAIL_IMBALANCE_RATIO", 0.5)
FABRIC_RAIL_IMBALANCE_SAMPLES = env_int(ENV, "FABRIC_RAIL_IMBALANCE_SAMPLES", 3)
# Maintenance (fabric/maintenance.py): how often a starting maintenance asks Slurm whether its
# drained nodes are empty, and how long it waits for their jobs before it fails naming them
# (nothing shut) unless the operator chose to shut under running jobs.
MAINTENANCE_CHECK_SECONDS = env_float(ENV, "MAINTENANCE_CHECK_SECONDS", 15.0)
MAINTENANCE_DRAIN_DEADLINE_SECONDS = env_float(ENV, "MAINTENANCE_DRAIN_DEADLINE_SECONDS",
                                               4 * 3600.0)
# Maintenance windows (fabric/maintenance_windows.py): how often beat starts the windows whose
# planned start has come and ends those whose planned end has passed.
MAINTENANCE_WINDOW_CHECK_SECONDS = env_float(ENV, "MAINTENANCE_WINDOW_CHECK_SECONDS", 30.0)
if MAINTENANCE_WINDOW_CHECK_SECONDS <= 0:
    raise ConfigurationError("MAINTENANCE_WINDOW_CHECK_SECONDS must be a positive number")
CELERY_TASK_ROUTES["fabric.tasks.run_maintenance_windows"] = {"queue": "periodic"}
CELERY_BEAT_SCHEDULE["fabric-run-maintenance-windows"] = {
    "task": "fabric.tasks.run_maintenance_windows",
    "schedule": MAINTENANCE_WINDOW_CHECK_SECONDS,
    "options": {"expires": MAINTENANCE_WINDOW_CHECK_SECONDS},
}
# The "fabric" event carries every port's state and load up to this many ports (SAKURAONE:
# 2,164, about 40 kB); above it only per-switch summaries.
FABRIC_EVENT_MAX_PORTS = env_int(ENV, "FABRIC_EVENT_MAX_PORTS", 5000)
# Readiness (fabric/health.py): a switch whose last answered poll is older than this is stale;
# three polls missed by default, so one slow poll does not flap the health check.
FABRIC_READINESS_STALE_SECONDS = env_float(
    ENV, "FABRIC_READINESS_STALE_SECONDS", 3 * FABRIC_POLL_INTERVAL
)
# --- end fabric-monitor ------------------------------------------------------------------------

# --- Actions (DESIGN.md section 3) --------------------------------------------------------------
ACTION_RETRY_BASE_SECONDS = env_float(ENV, "ACTION_RETRY_BASE_SECONDS", 5.0)
ACTION_RETRY_MAX_SECONDS = env_float(ENV, "ACTION_RETRY_MAX_SECONDS", 300.0)
# A queued Action whose message has not been picked up after this long is sent again.
ACTION_REQUEUE_AFTER_SECONDS = env_float(ENV, "ACTION_REQUEUE_AFTER_SECONDS", 120.0)
# Threads of each process that queues Actions (web, worker) carrying out the quick ones it
# queued (a drain, a resume) right after their commit, without the broker hop; 0: every Action
# goes through the broker to a worker. Only with a broker: in-process mode runs them anyway.
ACTION_RUNNER_THREADS = env_int(ENV, "ACTION_RUNNER_THREADS", 2)
if ACTION_RUNNER_THREADS < 0:
    raise ConfigurationError("ACTION_RUNNER_THREADS must be 0 (off) or more")
# Extra handler modules to import (tests use it to register their own handlers in a worker).
ACTION_HANDLER_MODULES = env_list(ENV, "ACTION_HANDLER_MODULES", [])

# --- Drivers (DESIGN.md section 4) -------------------------------------------------------------
# The embedded default is the simulator; a real cluster sets jobs.drivers.cli.ScontrolDriver or
# jobs.drivers.slurmrestd.SlurmrestdDriver.
SLURM_DRIVER = ENV.get("SLURM_DRIVER", "jobs.drivers.simulator.SimulatorDriver")

# --- Slurm drivers: how the real drivers reach the controller (jobs/drivers/cli.py, slurmrestd.py)
# CLI driver: directory of sinfo/squeue/scontrol/sacct (empty: found on PATH), the slurm.conf they
# read (empty: Slurm's own default), and the seconds one command may take before the controller
# counts as unavailable (an unreachable controller makes each command retry for ~10 s itself).
SLURM_BIN_DIR = ENV.get("SLURM_BIN_DIR", "")
SLURM_CONF = ENV.get("SLURM_CONF", "")
SLURM_COMMAND_TIMEOUT = env_float(ENV, "SLURM_COMMAND_TIMEOUT", 30.0)
# A drain or resume of several nodes first checks that slurmctld knows each (an update naming an
# unknown one still changes the others); a node it confirmed this recently is not checked again.
SLURM_KNOWN_NODE_SECONDS = env_float(ENV, "SLURM_KNOWN_NODE_SECONDS", 60.0)
# A reboot through Slurm (scontrol reboot ASAP) waits for the nodes' jobs, then for slurmd to
# register with a new boot time: the Action checks every SLURM_REBOOT_CHECK_SECONDS and fails
# SLURM_REBOOT_DEADLINE_SECONDS after the request (Slurm's own ResumeTimeout usually ends a
# reboot that does not come back sooner, "reboot timed out").
SLURM_REBOOT_CHECK_SECONDS = env_float(ENV, "SLURM_REBOOT_CHECK_SECONDS", 5.0)
SLURM_REBOOT_DEADLINE_SECONDS = env_float(ENV, "SLURM_REBOOT_DEADLINE_SECONDS", 4 * 3600.0)
# slurmrestd driver: base URL, the JWT user, and the token itself or a file holding it (read on
# every request, so a rotated token is picked up without a restart).
SLURM_REST_URL = ENV.get("SLURM_REST_URL", "http://127.0.0.1:6820")
SLURM_REST_USER = ENV.get("SLURM_REST_USER", "")
SLURM_REST_TOKEN = ENV.get("SLURM_REST_TOKEN", "")
SLURM_REST_TOKEN_FILE = ENV.get("SLURM_REST_TOKEN_FILE", "")
SLURM_REST_TIMEOUT = env_float(ENV, "SLURM_REST_TIMEOUT", 30.0)
for _name in ("SLURM_COMMAND_TIMEOUT", "SLURM_REST_TIMEOUT"):
    if globals()[_name] <= 0:
        raise ConfigurationError(f"{_name} must be a positive number of seconds")
# SONiC over SSH is the one real driver; tests may use fabric.drivers.emulated.EmulatedDriver.
FABRIC_DRIVER = ENV.get("FABRIC_DRIVER", "fabric.drivers.ssh.SonicSshDriver")

# --- Fabric driver: SONiC over SSH (fabric/drivers/ssh.py, fabric/credentials.py) -------------
# JSON or YAML file mapping Switch.credentials_ref -> {username, password | key_file}; it stays
# on the server and nothing in the portal ever returns its contents.
FABRIC_CREDENTIALS_FILE = ENV.get(
    "FABRIC_CREDENTIALS_FILE", str(VAR_DIR / "fabric-credentials.yaml")
)
# OpenSSH known_hosts checked on every connection; trust-on-first-use switches append to it.
FABRIC_KNOWN_HOSTS_FILE = ENV.get(
    "FABRIC_KNOWN_HOSTS_FILE", str(VAR_DIR / "fabric-known-hosts")
)
FABRIC_SSH_CONNECT_TIMEOUT = env_float(ENV, "FABRIC_SSH_CONNECT_TIMEOUT", 10.0)
FABRIC_SSH_COMMAND_TIMEOUT = env_float(ENV, "FABRIC_SSH_COMMAND_TIMEOUT", 60.0)
FABRIC_SSH_PORT = env_int(ENV, "FABRIC_SSH_PORT", 22)
# Where to reach a switch when it is not <management_address>:FABRIC_SSH_PORT, as JSON
# {"leaf01": "127.0.0.1:2201"} (the emulator serves every switch on 127.0.0.1, one port each).
try:
    FABRIC_SWITCH_ENDPOINTS = json.loads(ENV.get("FABRIC_SWITCH_ENDPOINTS") or "{}")
except ValueError:
    raise ConfigurationError("FABRIC_SWITCH_ENDPOINTS must be a JSON object") from None
if not isinstance(FABRIC_SWITCH_ENDPOINTS, dict):
    raise ConfigurationError("FABRIC_SWITCH_ENDPOINTS must be a JSON object")
# Hostnames of lab switches whose host key is trusted on first use and then recorded.
FABRIC_TRUST_ON_FIRST_USE = env_list(ENV, "FABRIC_TRUST_ON_FIRST_USE", [])
# The WRED profile bound to the lossless queues (SONiC's default templates call it so).
FABRIC_WRED_PROFILE = ENV.get("FABRIC_WRED_PROFILE", "AZURE_LOSSLESS")
# Queues whose ECN-marked counters are read (the lossless ones).
FABRIC_COUNTER_QUEUES = env_list(ENV, "FABRIC_COUNTER_QUEUES", ["3", "4"])

# --- BMC driver: Redfish to the nodes' BMCs (inventory/bmc/) -----------------------------------
# The demo simulates the BMCs; a real cluster sets inventory.bmc.drivers.redfish.RedfishDriver.
BMC_DRIVER = ENV.get("BMC_DRIVER", "inventory.bmc.drivers.simulated.SimulatedDriver")
# JSON or YAML file mapping Node.bmc_credentials_ref -> {username, password}; it stays on the
# server and nothing in the portal ever returns its contents.
BMC_CREDENTIALS_FILE = ENV.get("BMC_CREDENTIALS_FILE", str(VAR_DIR / "bmc-credentials.yaml"))
# Where to reach a node's BMC when it is not BMC_SCHEME://<bmc_address>, as JSON
# {"gpu001": "http://127.0.0.1:8610"} (sushy-emulator serves every node behind one address).
try:
    BMC_ENDPOINTS = json.loads(ENV.get("BMC_ENDPOINTS") or "{}")
except ValueError:
    raise ConfigurationError("BMC_ENDPOINTS must be a JSON object") from None
if not isinstance(BMC_ENDPOINTS, dict):
    raise ConfigurationError("BMC_ENDPOINTS must be a JSON object")
BMC_SCHEME = ENV.get("BMC_SCHEME", "https")
if BMC_SCHEME not in ("https", "http"):
    raise ConfigurationError("BMC_SCHEME must be https or http")
BMC_VERIFY_TLS = env_bool(ENV, "BMC_VERIFY_TLS", True)
# Seconds one Redfish request may take (connect and read) in an Action.
BMC_TIMEOUT = env_float(ENV, "BMC_TIMEOUT", 20.0)
# Seconds a page waits for a live read of the power state before saying "unknown".
BMC_PAGE_TIMEOUT = env_float(ENV, "BMC_PAGE_TIMEOUT", 3.0)
# A power Action succeeds only when the BMC reports the target state within this many seconds,
# read every BMC_POLL_SECONDS.
BMC_POWER_DEADLINE_SECONDS = env_float(ENV, "BMC_POWER_DEADLINE_SECONDS", 120.0)
BMC_POLL_SECONDS = env_float(ENV, "BMC_POLL_SECONDS", 1.0)
# The simulated BMCs: where their state lives (shared by web and worker) and how long a power
# change takes to land, like sushy-emulator's 1-11 s.
BMC_SIMULATOR_STATE_FILE = ENV.get("BMC_SIMULATOR_STATE_FILE", str(VAR_DIR / "bmc-simulator.json"))
BMC_SIMULATOR_POWER_DELAY_SECONDS = env_float(ENV, "BMC_SIMULATOR_POWER_DELAY_SECONDS", 3.0)
for _name in ("BMC_TIMEOUT", "BMC_PAGE_TIMEOUT", "BMC_POWER_DEADLINE_SECONDS", "BMC_POLL_SECONDS"):
    if globals()[_name] <= 0:
        raise ConfigurationError(f"{_name} must be a positive number of seconds")
# BMC events as tickets (faults/services/bmc_events.py): how often every node's event log and
# health are read, how many nodes one run reads (longest unread first) and how many entries of
# each, and how far back a node's first poll still tickets entries (older ones are history).
BMC_EVENT_POLL_INTERVAL = env_float(ENV, "BMC_EVENT_POLL_INTERVAL", 60.0)
BMC_EVENT_POLL_NODES_PER_RUN = env_int(ENV, "BMC_EVENT_POLL_NODES_PER_RUN", 50)
BMC_EVENT_POLL_ENTRIES = env_int(ENV, "BMC_EVENT_POLL_ENTRIES", 200)
BMC_EVENT_FIRST_POLL_HOURS = env_float(ENV, "BMC_EVENT_FIRST_POLL_HOURS", 24.0)
if BMC_EVENT_POLL_INTERVAL <= 0:
    raise ConfigurationError("BMC_EVENT_POLL_INTERVAL must be a positive number of seconds")
if BMC_EVENT_POLL_NODES_PER_RUN < 1 or BMC_EVENT_POLL_ENTRIES < 1:
    raise ConfigurationError("BMC_EVENT_POLL_NODES_PER_RUN and BMC_EVENT_POLL_ENTRIES must be >= 1")
CELERY_TASK_ROUTES["faults.tasks.poll_bmc_events"] = {"queue": "periodic"}
CELERY_BEAT_SCHEDULE["faults-poll-bmc-events"] = {
    "task": "faults.tasks.poll_bmc_events",
    "schedule": BMC_EVENT_POLL_INTERVAL,
    "options": {"expires": BMC_EVENT_POLL_INTERVAL},
}

# --- REST API -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "portal.permissions.RolePermission",
        # Last, so that 401 and 403 come first: an API query parameter the schema refuses
        # (0.5 for an integer, an empty date, a scalar given twice) is a 400 naming it, before
        # the view reads it its own way. It refuses with 400, never 403.
        "portal.api.query_parameters.QueryParametersAsDocumented",
    ],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.SearchFilter",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "portal.pagination.StandardPagination",
    "PAGE_SIZE": 100,
    # The schema documents every error status (portal/api/schema.py).
    "DEFAULT_SCHEMA_CLASS": "portal.api.schema.PortalAutoSchema",
    "EXCEPTION_HANDLER": "portal.api.exceptions.exception_handler",
    "DEFAULT_RENDERER_CLASSES": [
        "portal.api.renderers.JSONRenderer",  # DRF's, plus lists handed over already encoded
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    # NUL characters, which PostgreSQL cannot store, are a 400 naming the field wherever text
    # comes in.
    "DEFAULT_PARSER_CLASSES": [
        "portal.api.parsers.JSONParser",
        "portal.api.parsers.FormParser",
        "portal.api.parsers.MultiPartParser",
    ],
    # API throttling (portal/throttling.py): budgets per client address for requests without
    # credentials and for failed token authentication; authenticated use only if a rate is set.
    "DEFAULT_THROTTLE_CLASSES": [
        "portal.throttling.AnonymousRateThrottle",
        "portal.throttling.AuthenticatedRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_rate(ENV, "API_THROTTLE_ANON_RATE", "60/min"),
        "failed_auth": env_rate(ENV, "API_THROTTLE_FAILED_AUTH_RATE", "20/min"),
        "user": env_rate(ENV, "API_THROTTLE_USER_RATE", None),
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "GPU operations portal API",
    "DESCRIPTION": (
        "Inventory, Slurm, fabric and fault operations for a GPU supercomputer. "
        "Authenticate with `Authorization: Token <key>`. Changes to the outside world return "
        "202 with the Action that carries them out."
    ),
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/",
    # The API is JSON (a topology spec YAML too). Form and multipart bodies are parsed only for
    # the browsable API's HTML forms: not advertised, since they cannot say null or a nesting.
    "PARSER_WHITELIST": [
        "portal.api.parsers.JSONParser",
        "inventory.api.parsers.YAMLParser",
        "inventory.api.parsers.TextYAMLParser",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Choice sets that share a field name across models (status, role) get a name each.
    "ENUM_NAME_OVERRIDES": {
        "LifecycleStatusEnum": "inventory.models.topology.LifecycleStatus",
        "CableStatusEnum": "inventory.models.network.CableStatus",
        "LinkStatusEnum": "inventory.models.network.SwitchPort.LinkStatus",
        "NicRoleEnum": "inventory.models.compute.NIC.Role",
        "SwitchRoleEnum": "inventory.models.network.Switch.Role",
        "ActionStatusEnum": "portal.models.actions.ActionStatus",
        # The fault enums get names so they do not collide with the Actions' "status".
        "FaultStatusEnum": "faults.workflow.Status",
        "FaultSourceEnum": "faults.models.Source",
        "FaultSeverityEnum": "faults.models.Severity",
        # Table 13's categories, also the statistics' fault "component": one name for both.
        "CategoryEnum": "faults.models.Category",
        "JobSourceEnum": "jobs.models.Job.Source",
        # What a BMC said of each part of a node (inventory.bmc.reading).
        "BmcSectionStatusEnum": "inventory.bmc.reading.SECTION_STATUSES",
        "BmcGpuStateEnum": "inventory.bmc.reading.GPU_STATES",
        # A repair case's steps and the part kinds both a case and a swap name.
        "RepairStatusEnum": "faults.repair_workflow.RepairStatus",
        "ComponentKindEnum": "inventory.models.history.ComponentKind",
        "ViolationSeverityEnum": [("error", "error"), ("warning", "warning")],
    },
}

# --- faults: tickets, intake, triage, recovery (faults/) -----------------------------------------
# Hours after resolution during which a ticket may be reopened (a new ticket linked to it), and
# an event with the same fingerprint is linked as a recurrence.
FAULTS_REOPEN_WINDOW_HOURS = env_float(ENV, "FAULTS_REOPEN_WINDOW_HOURS", 72.0)
# Per event kind, fields replacing the built-in policy rules (faults/policies.py), e.g.
# {"xid:63": {"auto": ["drain"]}}; and how many earlier tickets make a repeat offender.
FAULTS_POLICY_OVERRIDES: dict = {}
FAULTS_REPEAT_THRESHOLD = 2
# Extra Alertmanager alertname -> event kind mappings (faults/parsing.py has the defaults).
FAULTS_ALERTNAME_KINDS: dict = {}
# "Validate, then resume" (jobs/validation_run.py): the command the validation job runs on the
# node (`sbatch --wrap`; a site sets e.g. "dcgmi diag -r 2"; the default is the repository's
# stand-in), the Slurm account its maintenance reservation and job use, and its time limit.
FAULTS_VALIDATION_COMMAND = ENV.get(
    "FAULTS_VALIDATION_COMMAND", str(BASE_DIR / "scripts" / "validation" / "gpu-check")
)
FAULTS_VALIDATION_ACCOUNT = ENV.get("FAULTS_VALIDATION_ACCOUNT", "root")
FAULTS_VALIDATION_MINUTES = env_int(ENV, "FAULTS_VALIDATION_MINUTES", 30)
# A directory the validation job writes its output to that the portal can read too (shared
# storage, or the test cluster's one host): the ticket shows the output's tail. Empty: Slurm's
# default place, and the ticket records the result without the tail.
FAULTS_VALIDATION_OUTPUT_DIR = ENV.get("FAULTS_VALIDATION_OUTPUT_DIR", "")

# --- telemetry: GPU telemetry read from the site's Prometheus (telemetry/) -----------
# Empty: no telemetry; the pages say so instead of showing zeros.
PROMETHEUS_URL = ENV.get("PROMETHEUS_URL", "").strip()
TELEMETRY_DRIVER = ENV.get("TELEMETRY_DRIVER", "telemetry.drivers.prometheus.PrometheusDriver")
# Pages wait at most this long for Prometheus before saying it is unreachable.
PROMETHEUS_TIMEOUT = env_float(ENV, "PROMETHEUS_TIMEOUT", 3.0)
# Resolution of the share-below-20% subquery: the site's scrape interval or coarser.
TELEMETRY_STEP_SECONDS = env_float(ENV, "TELEMETRY_STEP_SECONDS", 60.0)
# "Idle GPU in a running job": mean utilisation under 20% over this window.
TELEMETRY_IDLE_WINDOW_SECONDS = env_float(ENV, "TELEMETRY_IDLE_WINDOW_SECONDS", 300.0)
# Each finished GPU job's utilisation is asked once and kept (telemetry/services.py), so that
# Observation 3 is one aggregate in the database: how often, how many jobs a run asks, and how
# long after a job's end its last samples are surely scraped (asked again until then).
TELEMETRY_SUMMARY_INTERVAL = env_float(ENV, "TELEMETRY_SUMMARY_INTERVAL", 60.0)
TELEMETRY_SUMMARY_BATCH = env_int(ENV, "TELEMETRY_SUMMARY_BATCH", 5000)
TELEMETRY_SUMMARY_SETTLE_SECONDS = env_float(
    ENV, "TELEMETRY_SUMMARY_SETTLE_SECONDS", 2 * TELEMETRY_STEP_SECONDS
)
# A request for Observation 3 summarises at most this many pending jobs itself (the jobs that
# ended since the last run); past it, the answer counts them as not summarised yet.
TELEMETRY_SUMMARY_ON_REQUEST = env_int(ENV, "TELEMETRY_SUMMARY_ON_REQUEST", 2000)
CELERY_BEAT_SCHEDULE["telemetry-summarise-finished-jobs"] = {
    "task": "telemetry.tasks.summarise_finished_jobs",
    "schedule": TELEMETRY_SUMMARY_INTERVAL,
    "options": {"expires": TELEMETRY_SUMMARY_INTERVAL},
}
# --- end of telemetry ----------------------------------------------------------------------------

# --- Request bodies: how much of one is read ------------------------------------------------------
# A topology spec posted as YAML is read no further than this: the SAKURAONE spec is 5 kB, and
# its templates keep a 12,500-node fleet's spec as small (inventory/api/parsers.py).
TOPOLOGY_SPEC_MAX_BYTES = 1024 * 1024

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # A 4xx is one line: Django logs every 403 (PermissionDenied) with a full traceback.
    "filters": {"client_errors_on_one_line": {"()": "portal.log_filters.ClientErrorsOnOneLine"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["client_errors_on_one_line"],
        }
    },
    "root": {"handlers": ["console"], "level": ENV.get("LOG_LEVEL", "INFO")},
    # asyncssh logs five INFO lines per SSH command: 2,600 per poll of a 520-switch fabric.
    "loggers": {"django.db.backends": {"level": "WARNING"}, "asyncssh": {"level": "WARNING"}},
}

# --- Brakes and production security: login lock-out, API throttling, token lifetime,
# HTTPS, Content-Security-Policy. README.md "Brakes and production security" documents them.
# How many reverse proxies in front of the portal append X-Forwarded-For; 0 trusts no such header
# (right when daphne runs with --proxy-headers, which already puts the client in REMOTE_ADDR).
TRUSTED_PROXY_COUNT = env_int(ENV, "TRUSTED_PROXY_COUNT", 0)

# Login lock-out (django-axes): after LOGIN_FAILURE_LIMIT failed logins a username (from that
# address, by default) is refused for LOGIN_COOLOFF_MINUTES, even with the right password;
# portal/lockout.py answers the login page with 429 and records the lock-out in the audit log.
AUTHENTICATION_BACKENDS = [
    "portal.lockout.LoginLockoutBackend",  # first: refuses locked-out logins before any check
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int(ENV, "LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_float(ENV, "LOGIN_COOLOFF_MINUTES", 15.0))
LOGIN_LOCKOUT_PARAMETERS = {
    # Username and address together: a guesser cannot lock a colleague out from elsewhere.
    "username_and_address": [["username", "ip_address"]],
    "username": ["username"],
    "address": ["ip_address"],
    "username_or_address": ["username", "ip_address"],
}
_lockout_by = ENV.get("LOGIN_LOCKOUT_BY", "username_and_address").strip()
if _lockout_by not in LOGIN_LOCKOUT_PARAMETERS:
    raise ConfigurationError(
        f"LOGIN_LOCKOUT_BY={_lockout_by!r}: use one of {', '.join(LOGIN_LOCKOUT_PARAMETERS)}"
    )
AXES_LOCKOUT_PARAMETERS = LOGIN_LOCKOUT_PARAMETERS[_lockout_by]
if AXES_FAILURE_LIMIT < 1 or AXES_COOLOFF_TIME.total_seconds() <= 0:
    raise ConfigurationError("LOGIN_FAILURE_LIMIT and LOGIN_COOLOFF_MINUTES must be positive")
AXES_RESET_ON_SUCCESS = True
# The cool-down runs from the lock-out; more tries while locked do not push it further away.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_CLIENT_IP_CALLABLE = "portal.throttling.login_client_address"
AXES_LOCKOUT_CALLABLE = "portal.lockout.lockout_response"
# A username naming no user (often a password typed in the wrong field) is kept as a digest.
AXES_USERNAME_CALLABLE = "portal.lockout.lockout_username"

# API throttling: the budgets are REST_FRAMEWORK's DEFAULT_THROTTLE_RATES above.

# API tokens: none lives longer than this; a token created without an expiry gets the maximum.
API_TOKEN_MAX_LIFETIME_DAYS = env_int(ENV, "API_TOKEN_MAX_LIFETIME_DAYS", 365)
if API_TOKEN_MAX_LIFETIME_DAYS < 1:
    raise ConfigurationError("API_TOKEN_MAX_LIFETIME_DAYS must be at least 1")

# HTTPS. Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER to the header it sets
# (X-Forwarded-Proto: https) so Django knows the request was secure.
SECURE_SSL_REDIRECT = env_bool(ENV, "SECURE_SSL_REDIRECT", False)
# Health checks and Prometheus reach the process directly over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int(ENV, "SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool(ENV, "SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool(ENV, "SECURE_HSTS_PRELOAD", False)
_proxy_ssl_header = ENV.get("SECURE_PROXY_SSL_HEADER", "").strip()
if _proxy_ssl_header:
    if not all(char.isalnum() or char == "-" for char in _proxy_ssl_header):
        raise ConfigurationError(
            f"SECURE_PROXY_SSL_HEADER={_proxy_ssl_header!r} must be a header name such as "
            "X-Forwarded-Proto"
        )
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https")

# Content-Security-Policy (django-csp): the pages load only our own static files (htmx, uPlot
# and our scripts are vendored) and have no inline script or style; live.js opens /ws/ on the
# same origin, which 'self' covers for ws:/wss: too.
_content_security_policy = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
        **({"report-uri": [ENV["CSP_REPORT_URI"]]} if ENV.get("CSP_REPORT_URI") else {}),
    }
}
if env_bool(ENV, "CSP_REPORT_ONLY", False):
    CONTENT_SECURITY_POLICY_REPORT_ONLY = _content_security_policy
    CONTENT_SECURITY_POLICY = None
else:
    CONTENT_SECURITY_POLICY = _content_security_policy
# --- end of brakes and production security ------------------------------------------------------

# --- Signing in through the site's directory or a single sign-on proxy: LDAP when
# LDAP_SERVER_URI is set, the proxy's header when REMOTE_AUTH_ENABLED is on (portal/identity/,
# README.md "Signing in"). Local accounts keep working (ModelBackend stays last).
from portal.identity import config as _identity  # noqa: E402

globals().update(_identity.ldap_settings(ENV))
globals().update(_identity.remote_auth_settings(ENV))
if LDAP_ENABLED:  # noqa: F821 - set by ldap_settings
    AUTHENTICATION_BACKENDS.insert(-1, _identity.LDAP_BACKEND)
if REMOTE_AUTH_ENABLED:  # noqa: F821 - set by remote_auth_settings
    AUTHENTICATION_BACKENDS.insert(-1, _identity.REMOTE_USER_BACKEND)
# --- end of signing in ----------------------------------------------------------------------

# --- The request pipeline, in order: last in the file because the sign-on proxy, chosen above,
# adds a step to it.
MIDDLEWARE = [
    "portal.metrics.RequestMetricsMiddleware",  # first, so every response is counted and timed
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    # NUL characters, which PostgreSQL cannot store, are a 400 naming the field before any view.
    "portal.middleware.RejectNulCharactersMiddleware",
    # Before anything reads request.POST: a body Django cannot read is a JSON 4xx, not HTML.
    "portal.middleware.RequestBodyErrorsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    *([_identity.REMOTE_USER_MIDDLEWARE] if REMOTE_AUTH_ENABLED else []),  # noqa: F821
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # turns a lock-out into its response
]

# --- Deployment kind: DEPLOYMENT=production refuses simulated or emulated drivers and
# missing driver settings, naming each variable (portal/deployment.py); in the demo (the default)
# every page's header says what is simulated (portal/context_processors.py).
from portal import deployment as _deployment  # noqa: E402

DEPLOYMENT = ENV.get("DEPLOYMENT", _deployment.DEMO).strip() or _deployment.DEMO
if DEPLOYMENT not in _deployment.DEPLOYMENTS:
    raise ConfigurationError(
        f"DEPLOYMENT={DEPLOYMENT!r}: use one of {', '.join(_deployment.DEPLOYMENTS)}"
    )
if DEPLOYMENT == _deployment.PRODUCTION:
    _problems = _deployment.production_problems(ENV, globals())
    if _problems:
        raise ConfigurationError("DEPLOYMENT=production cannot start:\n  " + "\n  ".join(_problems))
TEMPLATES[0]["OPTIONS"]["context_processors"].append("portal.context_processors.deployment")
# --- end of deployment kind ---------------------------------------------------------------------
