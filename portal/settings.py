"""The portal's one settings module: every deployment-specific value comes from the environment.

Embedded default (nothing set): SQLite, tasks run in process, in-memory channel layer and cache.
With DATABASE_URL / REDIS_URL: PostgreSQL via psycopg 3, Celery over Redis, channels-redis.
"""

import os
from pathlib import Path

from portal.environment import (
    ConfigurationError,
    database_config,
    env_bool,
    env_float,
    env_int,
    env_list,
    local_secret_key,
)

BASE_DIR = Path(__file__).resolve().parent.parent
ENV = os.environ

DEBUG = env_bool(ENV, "DEBUG", False)
SECRET_KEY = ENV.get("SECRET_KEY", "")
if not SECRET_KEY:
    if env_bool(ENV, "REQUIRE_SECRET_KEY", False):
        raise ConfigurationError("SECRET_KEY must be set in production")
    # Embedded mode: a key generated once and kept in var/, so logins survive a restart of the
    # demo server and every local process (web, worker, tests) signs with the same key.
    SECRET_KEY = local_secret_key(BASE_DIR / "var" / "secret-key")

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
]

MIDDLEWARE = [
    "portal.metrics.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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

DATABASES = {"default": database_config(ENV, str(BASE_DIR / "var" / "portal.sqlite3"))}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    (BASE_DIR / "var").mkdir(exist_ok=True)
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
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "capacity": 1500, "expiry": 30},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # A message whose worker died unacknowledged goes back to the queue after this long.
    "visibility_timeout": env_int(ENV, "CELERY_VISIBILITY_TIMEOUT", 3600),
    "socket_connect_timeout": 3,
}
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    "portal.tasks.run_action": {"queue": "actions"},
    "portal.tasks.sweep_stuck_actions": {"queue": "periodic"},
}
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-actions": {
        "task": "portal.tasks.sweep_stuck_actions",
        "schedule": env_float(ENV, "ACTION_SWEEP_INTERVAL", 30.0),
    },
}

# --- fabric-monitor: counter polling and LLDP reconciliation (fabric/polling.py, lldp.py) ------
CELERY_TASK_ROUTES |= {
    "fabric.tasks.poll_fabric_counters": {"queue": "periodic"},
    "fabric.tasks.reconcile_fabric_lldp": {"queue": "periodic"},
}
CELERY_BEAT_SCHEDULE |= {
    "fabric-poll-counters": {
        "task": "fabric.tasks.poll_fabric_counters",
        "schedule": env_float(ENV, "FABRIC_POLL_INTERVAL", 60.0),
        # A poll that waited longer than one interval is stale: the next one is due anyway.
        "options": {"expires": env_float(ENV, "FABRIC_POLL_INTERVAL", 60.0)},
    },
    "fabric-reconcile-lldp": {
        "task": "fabric.tasks.reconcile_fabric_lldp",
        "schedule": env_float(ENV, "FABRIC_LLDP_INTERVAL", 300.0),
    },
}
# Switches read at once by one poll (threads; each waits on SSH, not on the CPU).
FABRIC_POLL_CONCURRENCY = env_int(ENV, "FABRIC_POLL_CONCURRENCY", 16)
# History: one row per port per resolution slot, kept as a ring of this many seconds.
FABRIC_HISTORY_SECONDS = env_int(ENV, "FABRIC_HISTORY_SECONDS", 86400)
FABRIC_HISTORY_RESOLUTION_SECONDS = env_int(ENV, "FABRIC_HISTORY_RESOLUTION_SECONDS", 60)
# Rail imbalance (paper Observation 7): a rail under RATIO x the median of the other rails
# for SAMPLES consecutive history samples.
FABRIC_RAIL_IMBALANCE_RATIO = env_float(ENV, "FABRIC_RAIL_IMBALANCE_RATIO", 0.5)
FABRIC_RAIL_IMBALANCE_SAMPLES = env_int(ENV, "FABRIC_RAIL_IMBALANCE_SAMPLES", 3)
# The "fabric" event carries every port's state and load up to this many ports (SAKURAONE:
# 2,164, about 40 kB); above it only per-switch summaries.
FABRIC_EVENT_MAX_PORTS = env_int(ENV, "FABRIC_EVENT_MAX_PORTS", 5000)
# --- end fabric-monitor ------------------------------------------------------------------------

# --- Actions (DESIGN.md section 3) --------------------------------------------------------------
ACTION_RETRY_BASE_SECONDS = env_float(ENV, "ACTION_RETRY_BASE_SECONDS", 5.0)
ACTION_RETRY_MAX_SECONDS = env_float(ENV, "ACTION_RETRY_MAX_SECONDS", 300.0)
# A queued Action whose message has not been picked up after this long is sent again.
ACTION_REQUEUE_AFTER_SECONDS = env_float(ENV, "ACTION_REQUEUE_AFTER_SECONDS", 120.0)
# Extra handler modules to import (tests use it to register their own handlers in a worker).
ACTION_HANDLER_MODULES = env_list(ENV, "ACTION_HANDLER_MODULES", [])

# --- Drivers (DESIGN.md section 4) -------------------------------------------------------------
# The embedded default is the simulator; a real cluster sets jobs.drivers.cli.ScontrolDriver or
# jobs.drivers.slurmrestd.SlurmrestdDriver.
SLURM_DRIVER = ENV.get("SLURM_DRIVER", "jobs.drivers.simulator.SimulatorDriver")
# SONiC over SSH is the one real driver; tests may use fabric.drivers.emulated.EmulatedDriver.
FABRIC_DRIVER = ENV.get("FABRIC_DRIVER", "fabric.drivers.ssh.SonicSshDriver")

# --- REST API -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["portal.permissions.RolePermission"],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.SearchFilter",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "portal.pagination.StandardPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "portal.api.exceptions.exception_handler",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
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
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": ENV.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
