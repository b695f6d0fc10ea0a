# The README's two commands are `make run` and `make test`; everything else is optional.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint bench profile soak conformance clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed-run

# In a terminal group of its own: make turns a Ctrl-C it receives into exit 130
# (scripts/terminal_foreground.py says how this keeps Ctrl-C a clean stop).
run: $(VENV)/.installed-run
	$(BIN)/python scripts/terminal_foreground.py scripts/run.sh

test: $(VENV)/.installed-dev
	scripts/test.sh $(ARGS)

# Style, the app layers (import-linter contracts in pyproject.toml) and types.
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy

clean:
	rm -rf var .pytest_cache

bench: $(VENV)/.installed-dev
	scripts/bench.sh

profile: $(VENV)/.installed-dev
	scripts/bench.sh --profile

# Not part of `make test`: about 2 minutes (SOAK_SECONDS of load, then reconciliation).
soak: $(VENV)/.installed-dev
	scripts/soak.sh

# Not part of `make test`: every OpenAPI document of a folder (default ../shared/realworld/openapi)
# imported, called tool by tool, and each request checked against the document; a few minutes.
# ARGS="--docs DIR --only stripe --min 98" (docs/conformance.md).
conformance: $(VENV)/.installed-dev
	scripts/conformance.sh $(ARGS)
