# Two commands matter: `make demo` and `make test` (see README.md).
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# pip reports every missing mirror directory of this machine's config as a warning: noise.
QUIET_PIP := 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
VENV := .venv
PYTHON := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
TEST_DATABASE_URL ?= postgresql://postgres@127.0.0.1:5432/portal
TEST_REDIS_URL ?= redis://127.0.0.1:6379/1
PYTEST_ARGS ?=
# Three workers on a two-core machine: much of the suite waits on real services (a 90 s
# websocket hold, slurmctld's 60 s ResumeTimeout, a demo starting, Prometheus scraping), and a
# third worker fills that wait. Measured on the CI machine, the suite minus chaos: 19:52 with
# two, 15:46 with three (CPU 95% busy). Tests sharing slurmctld run in one (tests/conftest.py).
PYTEST_WORKERS ?= 3

.PHONY: demo test lint install install-test services browser image clean

$(VENV)/.created:
	python3 -m venv $(VENV)
	touch $@

# Re-install when pyproject.toml changes.
# python-ldap (for django-auth-ldap) builds against the LDAP and SASL headers: install them
# (Debian packages, as root) or say which are missing, before pip needs them.
$(VENV)/.installed: pyproject.toml scripts/requirements.py | $(VENV)/.created
	scripts/ldap-up --packages
	$(PYTHON) scripts/requirements.py > $(VENV)/requirements.txt
	$(PYTHON) -m pip install -q -r $(VENV)/requirements.txt $(QUIET_PIP)
	touch $@

$(VENV)/.installed-test: pyproject.toml scripts/requirements.py | $(VENV)/.created
	scripts/ldap-up --packages
	$(PYTHON) scripts/requirements.py test > $(VENV)/requirements-test.txt
	$(PYTHON) -m pip install -q -r $(VENV)/requirements-test.txt $(QUIET_PIP)
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

services:
	scripts/services-up

browser:
	scripts/browser-up

# The production image (Dockerfile), with Docker or podman, whichever is present (as root with
# apt-get and neither, Debian's podman is installed); the base is made from Debian's packages.
# `make image BUILD_CA_BUNDLE=/path/ca.pem`: the CA bundle pip trusts during the build, behind a
# TLS-inspecting proxy (default: this machine's). scripts/image-build lists the other settings.
image:
	scripts/image-build

demo: install
	$(PYTHON) manage.py migrate --no-input
	$(PYTHON) manage.py import_topology inventory/fixtures/sakuraone.yaml
	$(PYTHON) manage.py seed_demo
	$(PYTHON) manage.py seed_demo_allocations
	$(PYTHON) manage.py seed_fault_history
	scripts/demo-run $(HOST) $(PORT)

lint: install-test
	$(VENV)/bin/ruff check .

# The chaos tests (tests/chaos/) end PostgreSQL sessions and stop real services under the test
# process itself: they run after the rest, in a process of their own. No chaos test among
# PYTEST_ARGS' selection (pytest's exit status 5) is not a failure.
test: install-test services browser lint
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
		$(PYTHON) -m pytest -p tests.xdist_env -n $(PYTEST_WORKERS) --dist loadgroup \
		-m "not chaos" $(PYTEST_ARGS)
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
		$(PYTHON) -m pytest -m chaos $(PYTEST_ARGS) || [ $$? -eq 5 ]

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache test-artifacts
