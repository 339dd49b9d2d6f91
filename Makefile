# The two commands of the README: `make demo` and `make test`. Both build .venv from nothing.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: demo test lint fuzz soak bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.installed-demo: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[spark]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[spark,postgres,dev]'
	touch $@

$(VENV)/.installed-bench: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[spark,postgres,dev,bench]'
	touch $@

demo: $(VENV)/.installed-demo
	$(VENV)/bin/sargable demo

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check src tests benchmarks

# pytest's own exit code is the result: 5 (no tests collected) fails the target like any other failure.
test: lint
	bash scripts/postgres.sh run -- $(PY) -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
