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
	bash scripts/ensure-bwrap
	bash scripts/ensure-aider
	bash scripts/ensure-amp
	bash scripts/ensure-opencode
	bash scripts/ensure-systemd
	$(MAKE) --no-print-directory lint typecheck unit

lint: $(INSTALLED)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/lint-imports

typecheck: $(INSTALLED)
	$(BIN)/mypy

# Two pytest-xdist workers (PYTEST_WORKERS=0 runs in one process); a test file stays on one
# worker, so a module's fixtures (a mock API, a real CLI's homes) are set up once.
PYTEST_WORKERS ?= 2

unit: $(INSTALLED)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile

# The longer variants of the reliability tests (kill -9 matrix, hook fuzz, parallel Stops,
# schemathesis): only the tests marked `reliability`, their counts scaled up.
reliability: $(INSTALLED) $(NODE_INSTALLED)
	bash scripts/ensure-postgres
	RALPHCTL_RELIABILITY=long $(BIN)/pytest -m reliability

bench: $(INSTALLED)
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/overhead.py --all-agents
	$(BIN)/python bench/parse_throughput.py
	$(BIN)/python bench/hook_latency.py
	$(BIN)/python bench/manager_scale.py
	$(BIN)/python bench/server_events.py
	$(BIN)/python bench/fleet.py

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The real agent CLIs from npm (pinned in package.json + package-lock.json) for end-to-end
# tests; Aider (PyPI), Amp and OpenCode get their own prefix under .agents/ (scripts/ensure-*:
# a lock file cannot list the platform packages of the last two that this registry lacks).
$(NODE_INSTALLED): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

clean:
	rm -rf $(VENV) node_modules .agents .mypy_cache .ruff_cache .pytest_cache
