"""Settings come from the environment, with an embedded default when nothing is set."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from portal.environment import (
    ConfigurationError,
    database_config,
    env_bool,
    env_float,
    env_int,
    env_list,
    local_secret_key,
)

REPO = Path(__file__).resolve().parents[2]


def test_booleans_accept_the_usual_words_and_reject_others():
    assert env_bool({"DEBUG": "true"}, "DEBUG", False) is True
    assert env_bool({"DEBUG": "0"}, "DEBUG", True) is False
    assert env_bool({}, "DEBUG", False) is False
    with pytest.raises(ConfigurationError, match="DEBUG='maybe'"):
        env_bool({"DEBUG": "maybe"}, "DEBUG", False)


def test_numbers_and_lists():
    assert env_int({"N": "12"}, "N", 1) == 12
    assert env_int({}, "N", 7) == 7
    assert env_float({"F": "0.25"}, "F", 1.0) == 0.25
    with pytest.raises(ConfigurationError, match="N='twelve' is not an integer"):
        env_int({"N": "twelve"}, "N", 1)
    hosts = env_list({"ALLOWED_HOSTS": "a.example, b.example,,"}, "ALLOWED_HOSTS", [])
    assert hosts == ["a.example", "b.example"]


def test_database_url_selects_postgresql_with_psycopg_and_a_test_database():
    config = database_config(
        {"DATABASE_URL": "postgresql://portal:secret@db.internal:5433/ops"}, "/tmp/x.sqlite3"
    )
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["HOST"], config["PORT"], config["NAME"]) == ("db.internal", 5433, "ops")
    assert config["USER"] == "portal" and config["PASSWORD"] == "secret"
    assert config["TEST"]["NAME"] == "test_ops"


def test_no_database_url_means_the_embedded_sqlite_file():
    config = database_config({}, "/tmp/portal.sqlite3")
    assert config["ENGINE"] == "django.db.backends.sqlite3"
    assert config["NAME"] == "/tmp/portal.sqlite3"


def test_unsupported_database_scheme_is_named():
    with pytest.raises(ConfigurationError, match="'mysql'"):
        database_config({"DATABASE_URL": "mysql://x@y/z"}, "/tmp/x")


def settings_in_fresh_process(environ: dict[str, str]) -> dict:
    """Load the settings module in a new interpreter with exactly this environment."""
    script = (
        "import json, django; from django.conf import settings; django.setup();"
        "print(json.dumps({'debug': settings.DEBUG, 'engine': settings.DATABASES['default']"
        "['ENGINE'], 'eager': settings.CELERY_TASK_ALWAYS_EAGER, 'layer': settings."
        "CHANNEL_LAYERS['default']['BACKEND'], 'cache': settings.CACHES['default']['BACKEND'],"
        "'broker': settings.CELERY_BROKER_URL, 'hosts': settings.ALLOWED_HOSTS,"
        "'secret_len': len(settings.SECRET_KEY)}))"
    )
    env = {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "portal.settings", **environ}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        return {"error": done.stderr}
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_embedded_default_when_nothing_is_set():
    loaded = settings_in_fresh_process({})
    assert loaded["debug"] is False
    assert loaded["engine"] == "django.db.backends.sqlite3"
    assert loaded["eager"] is True
    assert loaded["layer"] == "channels.layers.InMemoryChannelLayer"
    assert loaded["cache"].endswith("LocMemCache")
    assert loaded["secret_len"] >= 50  # generated on this machine, never one from the repo


def test_redis_url_switches_broker_channel_layer_and_cache():
    loaded = settings_in_fresh_process(
        {"REDIS_URL": "redis://127.0.0.1:6379/3", "ALLOWED_HOSTS": "portal.internal"}
    )
    assert loaded["eager"] is False
    assert loaded["broker"] == "redis://127.0.0.1:6379/3"
    assert loaded["layer"] == "channels_redis.pubsub.RedisPubSubChannelLayer"
    assert loaded["cache"].endswith("RedisCache")
    assert loaded["hosts"] == ["portal.internal"]


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"REDIS_URL": "http://cache:6379"}, "REDIS_URL"),
        ({"DEBUG": "perhaps"}, "DEBUG"),
        ({"REQUIRE_SECRET_KEY": "1"}, "SECRET_KEY must be set"),
        ({"ACTION_RETRY_BASE_SECONDS": "soon"}, "ACTION_RETRY_BASE_SECONDS"),
        ({"ACTION_RUNNER_THREADS": "-1"}, "ACTION_RUNNER_THREADS"),
    ],
)
def test_bad_settings_stop_the_process_naming_the_variable(environ, named):
    loaded = settings_in_fresh_process(environ)
    assert "error" in loaded
    assert "ConfigurationError" in loaded["error"]
    assert named in loaded["error"]


def test_the_embedded_secret_key_is_made_once_and_kept_private(tmp_path):
    path = tmp_path / "var" / "secret-key"
    first = local_secret_key(path)
    assert len(first) >= 50
    assert local_secret_key(path) == first  # a restart keeps sessions valid
    assert path.stat().st_mode & 0o777 == 0o600


def test_database_pool_size_turns_on_psycopg_pooling_instead_of_persistent_connections():
    url = "postgresql://portal@db.internal:5432/ops"
    assert "pool" not in database_config({"DATABASE_URL": url}, "/tmp/x").get("OPTIONS", {})
    config = database_config({"DATABASE_URL": url, "DATABASE_POOL_SIZE": "8"}, "/tmp/x")
    assert config["OPTIONS"]["pool"]["max_size"] == 8
    assert config["CONN_MAX_AGE"] == 0  # Django refuses pooling with persistent connections
    with pytest.raises(ConfigurationError, match="DATABASE_POOL_SIZE"):
        database_config({"DATABASE_URL": url, "DATABASE_POOL_SIZE": "-1"}, "/tmp/x")


def test_postgresql_connections_turn_jit_off_unless_the_url_says_otherwise():
    url = "postgresql://portal@db.internal:5432/ops"
    assert database_config({"DATABASE_URL": url}, "/tmp/x")["OPTIONS"]["options"] == "-c jit=off"
    own = database_config({"DATABASE_URL": url + "?options=-c%20work_mem%3D64MB"}, "/tmp/x")
    assert own["OPTIONS"]["options"] == "-c work_mem=64MB"


def test_a_connection_made_from_the_config_has_jit_off():
    # The test machine's PostgreSQL, whichever database the suite itself runs on (the embedded
    # default's run uses SQLite, which has no JIT).
    import psycopg

    config = database_config({"DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/postgres"},
                             "/tmp/x")
    with psycopg.connect(host=config["HOST"], port=config["PORT"], user=config["USER"],
                         dbname=config["NAME"], options=config["OPTIONS"]["options"]) as db:
        assert db.execute("SHOW jit").fetchone()[0] == "off"
