"""docker-compose.yml cannot run here (no Docker engine), so check it as a document."""

import importlib
import shutil
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def load_compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_has_the_services_of_a_real_deployment():
    services = load_compose()["services"]
    assert {"postgres", "redis", "web", "worker", "beat"} <= set(services)
    for name in ("postgres", "redis", "web", "worker", "beat"):
        assert "healthcheck" in services[name], f"{name} has no health check"
    assert load_compose()["volumes"].keys() >= {"postgres-data", "redis-data"}
    assert "postgres-data:/var/lib/postgresql/data" in services["postgres"]["volumes"]


def test_compose_commands_point_at_code_that_exists():
    services = load_compose()["services"]
    web = services["web"]["command"]
    assert web[0] == "daphne"
    module_name, attribute = web[-1].split(":")
    assert hasattr(importlib.import_module(module_name), attribute)
    for name in ("worker", "beat"):
        command = services[name]["command"]
        assert command[:3] == ["celery", "-A", "portal"]
        assert shutil.which("celery", path=str(REPO / ".venv" / "bin")) or shutil.which("celery")
    queues = services["worker"]["command"][services["worker"]["command"].index("-Q") + 1]
    from django.conf import settings

    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    assert routed <= set(queues.split(","))
    migrate = services["migrate"]["command"]
    assert migrate[:2] == ["python", "manage.py"] and (REPO / "manage.py").exists()


def test_compose_takes_secrets_from_the_environment_not_the_file():
    text = (REPO / "docker-compose.yml").read_text()
    environment = load_compose()["services"]["web"]["environment"]
    assert environment["SECRET_KEY"].startswith("${SECRET_KEY:?")
    assert "${POSTGRES_PASSWORD:?" in environment["DATABASE_URL"]
    assert "REQUIRE_SECRET_KEY" in environment
    assert "password:" not in text.lower().replace("postgres_password:", "")
