# the-loop — every entry point a newcomer or CI needs. `make run` and `make test` install what
# is missing first (Python environment, npm packages, system packages when running as root):
# `make run` only what running needs, `make test` also the test suite's own system packages.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
PYTEST_WORKERS ?= 3
ASSETS := src/the_loop/web/static/vendor/.copied

.PHONY: help setup system-deps test-deps bytecode run test check fmt lint typecheck docs bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

setup: system-deps $(VENV)/.installed node_modules/.installed $(ASSETS) bytecode ## install everything that is missing (idempotent)

system-deps: ## install tmux, git, node/npm when missing (as root), else print the command
	@scripts/system-deps.sh run

test-deps: ## also the test suite's system packages: strace, postgresql, chromium
	@scripts/system-deps.sh test

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/.installed: $(UV) requirements.lock pyproject.toml
	@test -x $(PY) || $(UV) venv --quiet --python $(PYTHON) $(VENV)
	$(UV) pip sync --quiet --python $(PY) --require-hashes --compile-bytecode requirements.lock
	$(UV) pip install --quiet --python $(PY) --no-deps -e .
	@touch $@
	@$(MAKE) --no-print-directory bytecode

# Byte-compile our sources: with PYTHONDONTWRITEBYTECODE set (as on these machines) Python would
# otherwise compile every module again on every start, and the CLI would start ten times slower.
bytecode:
	@$(PY) -m compileall -q -j 0 src

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The dashboard's front-end files, copied from the npm packages into the Python package (git-ignored).
$(ASSETS): node_modules/.installed scripts/vendor-assets.sh
	@scripts/vendor-assets.sh

lock: $(UV) ## re-resolve requirements.lock from pyproject.toml
	$(UV) pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11 \
		--no-header --quiet -o requirements.lock

run: setup ## start the-loop in the foreground on its embedded defaults (dashboard on 127.0.0.1)
	@$(BIN)/the-loop serve

test: setup test-deps ## run the whole test suite
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup

fmt: setup ## format the code
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

lint: setup ## format check, lint and the wings' import contracts
	$(BIN)/ruff format --check src tests bench
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports

typecheck: setup
	$(BIN)/mypy

docs: setup ## regenerate the generated docs (config reference, CLI reference, schema)
	$(PY) -m the_loop.cli.docgen

check: lint typecheck test ## format check, lint, import contracts, strict type check, tests

bench: setup ## run every benchmark and print the figures
	$(PY) bench/run_all.py

clean: ## remove the environments
	rm -rf $(VENV) $(TOOLS) node_modules src/the_loop/web/static/vendor
