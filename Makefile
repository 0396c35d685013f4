# `make demo` and `make test` work on a fresh machine with only Python (and the image's Node).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
NODE_INSTALLED := node_modules/.installed

.PHONY: demo test lint typecheck unit reliability bench clean

demo: $(INSTALLED)
	$(BIN)/ralphctl demo

test: $(INSTALLED) $(NODE_INSTALLED)
	bash scripts/ensure-postgres
	bash scripts/ensure-browser
	$(MAKE) --no-print-directory lint typecheck unit

lint: $(INSTALLED)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/lint-imports

typecheck: $(INSTALLED)
	$(BIN)/mypy

unit: $(INSTALLED)
	$(BIN)/pytest

# The longer variants of the reliability tests (kill -9 matrix, hook fuzz, parallel Stops,
# schemathesis): only the tests marked `reliability`, their counts scaled up.
reliability: $(INSTALLED) $(NODE_INSTALLED)
	bash scripts/ensure-postgres
	RALPHCTL_RELIABILITY=long $(BIN)/pytest -m reliability

bench: $(INSTALLED)
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/parse_throughput.py
	$(BIN)/python bench/hook_latency.py
	$(BIN)/python bench/manager_scale.py
	$(BIN)/python bench/server_events.py

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The real Claude Code CLI (pinned in package.json + package-lock.json) for end-to-end tests.
$(NODE_INSTALLED): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

clean:
	rm -rf $(VENV) node_modules .mypy_cache .ruff_cache .pytest_cache
