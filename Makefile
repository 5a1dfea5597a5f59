# Error knowledge base: the commands a developer and an operator need.
#   make run    set up, migrate, load the demo data into an empty database, serve on :8000
#               with the task worker beside it
#   make test   set up (dev tools, Debian chromium) and run the whole suite
# Tests that need the full dataset skip with their reason unless KB_DATASET_DIR (default:
# the full dataset directory beside the clone) holds it; CI lays it there.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV    ?= .venv
PY      := $(VENV)/bin/python
HOST    ?= 127.0.0.1
PORT    ?= 8000
PYTEST_ARGS ?=
# The suite's hypothesis profile (tests/hypothesis_profiles.py): derandomised, no example
# database, so a red run is reproducible; `make fuzz` uses the random `fuzz` profile.
HYPOTHESIS_PROFILE ?= ci
KB_DATASET_DIR ?= $(abspath ..)/shared/data
STAMP   := $(VENV)/.installed
DEVSTAMP:= $(VENV)/.installed-dev

# First interpreter >= 3.12 that really runs (pyenv shims exit non-zero when the version is
# not selected, so each candidate is tried, not just looked up).
find_python = for c in "$$PYTHON" python3.13 python3.12 python3 \
	  $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[3-9]*/bin/python3 \
	  $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.12*/bin/python3 \
	  /usr/bin/python3.1[2-9] /usr/local/bin/python3.1[2-9]; do \
	  [ -n "$$c" ] || continue; \
	  if "$$c" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then \
	    echo "$$c"; exit 0; fi; \
	done; exit 1

.PHONY: help setup setup-dev run serve load test test-fast lint format bench bench-1m fuzz chromium demo-data clean

help:
	@echo "make run | test | setup | bench | fuzz | serve | load | lint | clean"

$(STAMP): requirements.txt
	@py=$$($(find_python)) || { echo "error: Python >= 3.12 with venv is required; install python3.12 (apt-get install python3.12-venv, or pyenv install 3.12)" >&2; exit 1; }; \
	if [ ! -x $(PY) ] || ! $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then \
	  echo "Creating $(VENV) with $$py ($$($$py --version))"; rm -rf $(VENV); "$$py" -m venv $(VENV); fi
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

$(DEVSTAMP): $(STAMP) requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

setup: $(STAMP)

setup-dev: $(DEVSTAMP)

# Web server and task worker together, as the Procfile names them, under honcho: one
# Ctrl-C stops both. The venv's bin comes first on PATH so the Procfile's `python` is the
# venv's; honcho hands PORT to the first process (web), HOST passes through.
run: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	HOST=$(HOST) PYTHONUNBUFFERED=1 PATH="$(abspath $(VENV))/bin:$$PATH" \
	  $(VENV)/bin/honcho start -f Procfile -p $(PORT)

# Production-style server: gunicorn (kb/gunicorn_conf.py), DEBUG off (set SECRET_KEY and
# ALLOWED_HOSTS; WEB_CONCURRENCY workers). See docs/deployment.md.
serve: setup
	DEBUG=$${DEBUG:-0} $(PY) manage.py collectstatic --noinput -v0
	DEBUG=$${DEBUG:-0} $(PY) manage.py migrate --noinput
	DEBUG=$${DEBUG:-0} $(PY) manage.py warm_matcher
	DEBUG=$${DEBUG:-0} HOST=$(HOST) PORT=$(PORT) $(PY) manage.py run_with_worker -- \
	  $(VENV)/bin/gunicorn -c python:kb.gunicorn_conf kb.wsgi

# Load test on loopback (wrk; several phases, minutes long) on the full dataset when
# KB_DATASET_DIR holds it: results in benchmarks/results/load.json; with DATABASE_URL (a
# scratch PostgreSQL database: the test imports into it) in load-postgresql.json.
load: setup-dev
	@command -v wrk >/dev/null 2>&1 || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq wrk >/dev/null; }
	KB_DATASET_DIR="$(KB_DATASET_DIR)" $(PY) benchmarks/load/run_load.py \
	  $${DATABASE_URL:+--database-url "$$DATABASE_URL"} $(LOAD_ARGS)

# Debian's chromium for the browser tests (Playwright's own download cannot work here).
chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  echo "Installing Debian's chromium for the browser tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null \
	  || { echo "error: could not install chromium (apt-get install chromium)" >&2; exit 1; }; fi
	@chromium --version 2>/dev/null | head -n1

# axe-core for the accessibility browser tests (tests/browser/package.json, pinned by its
# lock file); injected into pages by the tests only, never served by the app.
.PHONY: axe
axe:
	@if [ ! -f tests/browser/node_modules/axe-core/axe.min.js ]; then \
	  if ! command -v npm >/dev/null 2>&1; then \
	    echo "Installing Debian's npm for the accessibility tests (axe-core)"; \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq npm >/dev/null; fi; \
	  npm ci --prefix tests/browser --no-audit --no-fund --silent; fi

test: setup-dev chromium axe
	$(PY) manage.py check --fail-level WARNING
	@out=$$($(PY) manage.py makemigrations --check --dry-run 2>&1) || { echo "$$out" >&2; \
	  echo "error: models and migrations differ (makemigrations --check)" >&2; exit 1; }
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(VENV)/bin/pytest $(PYTEST_ARGS)

# Everything but the browser and full-dataset tests, for a quick loop.
test-fast: setup-dev
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(VENV)/bin/pytest -m "not browser and not slow" $(PYTEST_ARGS)

lint: setup-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

format: setup-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: setup-dev
	@mkdir -p benchmarks/results
	$(PY) benchmarks/run_all.py $(BENCH_ARGS)

# Opt-in, long (hours at 10^6 on a small machine): SCALE_RECORDS records on PostgreSQL end
# to end against the real 16.7k (benchmarks/bench_scale.py), then the page re-rendered.
# Needs a scratch PostgreSQL database in DATABASE_URL or KB_BENCH_DATABASE_URL.
SCALE_RECORDS ?= 1000000
bench-1m: setup-dev
	@mkdir -p benchmarks/results
	$(PY) benchmarks/bench_scale.py --records $(SCALE_RECORDS)
	$(PY) benchmarks/report_md.py

# Nightly-style fuzzing with the random `fuzz` hypothesis profile: 10^5 examples IN TOTAL
# (FUZZ_EXAMPLES), split between the importer, Matcher.match and the normaliser in
# tests/fuzz_budget.py; then schemathesis on top (1,000 examples per API operation). Two
# runs: schemathesis's pytest plugin blanks the values in hypothesis's "Failing test case"
# report. Both always run; the target fails if either does.
fuzz: setup-dev
	@status=0; \
	set -x; \
	HYPOTHESIS_PROFILE=fuzz $(VENV)/bin/pytest -m "not browser" -k "prop or fuzz" -p no:randomly \
	  -p no:schemathesis --ignore=tests/test_api_schemathesis.py --hypothesis-show-statistics \
	  $(PYTEST_ARGS) || status=1; \
	HYPOTHESIS_PROFILE=fuzz $(VENV)/bin/pytest -m "not browser" -p no:randomly \
	  tests/test_api_schemathesis.py $(PYTEST_ARGS) || status=1; \
	exit $$status

# Rebuild the demo sample in fixtures/ from the full dataset (KB_DATASET_DIR).
demo-data: setup
	$(PY) manage.py sample_records $(KB_DATASET_DIR)/records-all.jsonl \
	  --enriched $(KB_DATASET_DIR)/records-enriched.jsonl --eval $(KB_DATASET_DIR)/eval-public.jsonl \
	  --per-repo 60 --output fixtures/demo-records.jsonl

clean:
	rm -rf $(VENV) .cache staticfiles .pytest_cache .ruff_cache .import_linter_cache
