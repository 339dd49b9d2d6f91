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

# Longer fuzzing: the hypothesis fuzz targets at 20x their `make test` budget, then each coverage-guided atheris
# harness for FUZZ_SECONDS (corpus and any crash-*/timeout-* inputs under .hypothesis/atheris/). Where atheris does
# not install, the hypothesis run is the whole budget.
FUZZ_SECONDS ?= 120
fuzz: $(VENV)/.installed-test
	SARGABLE_FUZZ_SCALE=20 bash scripts/postgres.sh run -- $(PY) -m pytest tests/test_fuzz.py -q $(PYTEST_ARGS)
	@if $(PY) -m pip install -q atheris; then \
	  for target in parse loads keys partitions; do \
	    dir=.hypothesis/atheris/$$target; mkdir -p $$dir; echo "fuzz: atheris $$target for $(FUZZ_SECONDS) s"; \
	    $(PY) tests/soak/fuzz_atheris.py $$target $$dir -max_total_time=$(FUZZ_SECONDS) -timeout=2 \
	      -artifact_prefix=$$dir- -print_final_stats=1 || exit 1; \
	  done; \
	else echo "fuzz: atheris does not install on this Python; the hypothesis run above is the fuzz budget"; fi

# Soak, on both backends: 4 writers x SOAK_SECONDS with 2 readers, 30 random SIGKILLs of a committing writer and 3
# of a Spark write; then the resource-bounds benchmark at full size (1,000,000-value IN, 10 MB of text, ...).
SOAK_SECONDS ?= 60
soak: $(VENV)/.installed-test
	SARGABLE_SOAK=1 SARGABLE_SOAK_SECONDS=$(SOAK_SECONDS) SARGABLE_CRASH_ROUNDS=30 SARGABLE_SPARK_CRASH_ROUNDS=3 \
	  bash scripts/postgres.sh run -- $(PY) -m pytest tests/soak tests/test_crash.py -q -s $(PYTEST_ARGS)
	bash scripts/postgres.sh run -- $(PY) benchmarks/resource_bounds.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
