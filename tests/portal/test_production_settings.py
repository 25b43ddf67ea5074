"""HTTPS, HSTS, the proxy header and the Content-Security-Policy, from the environment the README
documents for production; `check --deploy` is clean under it."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from portal.models import Role

REPO = Path(__file__).resolve().parents[2]
PRODUCTION_HEADING = "**Production**"


def documented_production_environment() -> dict[str, str]:
    """The `sh` block after README's **Production** paragraph, with `<...>` filled in."""
    readme = (REPO / "README.md").read_text()
    assert PRODUCTION_HEADING in readme, "README.md documents no production environment"
    after = readme.split(PRODUCTION_HEADING, 1)[1]
    block = re.search(r"```sh\n(.*?)```", after, re.S)
    assert block, "no ```sh block after the production paragraph"
    environment = {}
    for line in block.group(1).splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            environment[name] = re.sub(r"<[^>]*>", lambda _: secrets.token_urlsafe(50), value)
    return environment


def run_with(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    base = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env={**base, **environment},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_under_the_documented_production_environment():
    environment = documented_production_environment()
    result = run_with(environment, "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
    # And it is the environment that matters: without it the same check warns.
    bare = {"SECRET_KEY": environment["SECRET_KEY"], "ALLOWED_HOSTS": "portal.example.org"}
    warned = run_with(bare, "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert warned.returncode != 0
    assert "security.W004" in warned.stderr and "security.W008" in warned.stderr


def test_the_production_environment_becomes_these_settings():
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'portal.settings'; "
        "django.setup(); from django.conf import settings as s; "
        "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_INCLUDE_SUBDOMAINS, "
        "s.SECURE_HSTS_PRELOAD, s.SECURE_PROXY_SSL_HEADER, s.TRUSTED_PROXY_COUNT, "
        "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE)"
    )
    result = run_with(documented_production_environment(), "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == (
        "True 31536000 True True ('HTTP_X_FORWARDED_PROTO', 'https') 1 True True"
    )
    bad = run_with({"SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto: https"}, "-c", code)
    assert bad.returncode != 0 and "SECURE_PROXY_SSL_HEADER" in bad.stderr


@pytest.fixture
def behind_a_tls_proxy(settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.ALLOWED_HOSTS = ["portal.example.org"]
    return Client(HTTP_HOST="portal.example.org")


def test_plain_http_is_redirected_and_https_gets_hsts(behind_a_tls_proxy, db):
    client = behind_a_tls_proxy
    plain = client.get("/login/")
    assert plain.status_code == 301
    assert plain["Location"] == "https://portal.example.org/login/"
    proxied = client.get("/login/", HTTP_X_FORWARDED_PROTO="https")
    assert proxied.status_code == 200
    assert proxied["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"


def test_health_checks_and_metrics_answer_over_plain_http(behind_a_tls_proxy, db):
    for path in ("/healthz", "/metrics"):
        assert behind_a_tls_proxy.get(path).status_code == 200, path


def content_security_policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy_without_inline_code(make_user):
    browser = Client()
    browser.force_login(make_user(Role.OPERATOR))
    for client, path in ((Client(), "/login/"), (browser, "/"), (browser, "/api/docs/")):
        response = client.get(path)
        assert response.status_code == 200, path
        policy = content_security_policy(response)
        assert policy["script-src"] == ["'self'"], path
        assert policy["style-src"] == ["'self'"], path
        assert policy["frame-ancestors"] == ["'none'"] and policy["object-src"] == ["'none'"]
        assert "'unsafe-inline'" not in response["Content-Security-Policy"]


def test_csp_can_report_only(tmp_path):
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'portal.settings'; "
        "django.setup(); from django.conf import settings as s; "
        "print(s.CONTENT_SECURITY_POLICY, s.CONTENT_SECURITY_POLICY_REPORT_ONLY['DIRECTIVES']"
        "['report-uri'])"
    )
    result = run_with({"CSP_REPORT_ONLY": "1", "CSP_REPORT_URI": "/csp-reports/"}, "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "None ['/csp-reports/']"


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
INLINE_STYLE = re.compile(r"<style\b|\sstyle=\"|\son[a-z]+=\"|javascript:", re.I)


def test_no_template_carries_inline_script_or_style():
    """The policy allows neither; a template that did would break in the browser."""
    offenders = []
    for template in sorted((REPO / "templates").rglob("*.html")):
        text = template.read_text()
        for pattern in (INLINE_SCRIPT, INLINE_STYLE):
            for match in pattern.finditer(text):
                offenders.append(f"{template.relative_to(REPO)}: {match.group(0).strip()}")
    assert not offenders, "\n".join(offenders)
