# The two commands of the README: `make demo` and `make test`. Both build .venv from nothing.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: demo cluster-demo test lint fuzz soak bench bench-hms clean

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

# The demo on a Spark standalone cluster of this machine (a master and two workers started from the pyspark package,
# stopped by process group at the end) with a PostgreSQL metastore; the tables go to ./warehouse/cluster.
cluster-demo: $(VENV)/.installed-test
	bash scripts/postgres.sh run -- bash -c \
	  '$(PY) -m sargable.spark.cluster demo --metastore "$$SARGABLE_TEST_POSTGRES_URL" --warehouse ./warehouse/cluster'

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check src tests benchmarks

# pytest's own exit code is the result: 5 (no tests collected) fails the target like any other failure.
# Beside PostgreSQL: the s3a connector's jars (fetched once into ~/.cache/sargable/s3a-jars), and an S3 server on
# 127.0.0.1 (moto, behind a request-counting front: scripts/s3_server.py) that the tests' session fixture
# (tests/s3_fixtures.py) starts once and stops with the run.
test: lint
	bash scripts/s3a-jars.sh >/dev/null
	bash scripts/postgres.sh run -- $(PY) -m pytest $(PYTEST_ARGS)

# Longer fuzzing: the hypothesis fuzz targets at 20x their `make test` budget, then each coverage-guided atheris
# harness for FUZZ_SECONDS (corpus and any crash-*/timeout-* inputs under .hypothesis/atheris/). Where atheris does
# not install, the hypothesis run is the whole budget.
FUZZ_SECONDS ?= 120
fuzz: $(VENV)/.installed-test
	SARGABLE_FUZZ_SCALE=20 bash scripts/postgres.sh run -- $(PY) -m pytest tests/test_fuzz.py tests/test_hms_validation.py tests/test_evolution_soundness.py -q $(PYTEST_ARGS)
	@if $(PY) -m pip install -q atheris; then \
	  for target in parse loads keys partitions; do \
	    dir=.hypothesis/atheris/$$target; mkdir -p $$dir; echo "fuzz: atheris $$target for $(FUZZ_SECONDS) s"; \
	    $(PY) tests/soak/fuzz_atheris.py $$target $$dir -max_total_time=$(FUZZ_SECONDS) -timeout=2 \
	      -artifact_prefix=$$dir- -print_final_stats=1 || exit 1; \
	  done; \
	else echo "fuzz: atheris does not install on this Python; the hypothesis run above is the fuzz budget"; fi

# Soak, on both backends: 4 writers x SOAK_SECONDS with 2 readers, 30 random SIGKILLs of a committing writer and 3
# of a Spark write, the HMS server's mixed clients and its readers under ingest (a partition added every 100 ms, 4
# clients filtering, every read checked to see every acknowledged partition); then the resource-bounds benchmark at full size (1,000,000-value IN, 10 MB of text, ...).
SOAK_SECONDS ?= 60
soak: $(VENV)/.installed-test
	SARGABLE_SOAK=1 SARGABLE_SOAK_SECONDS=$(SOAK_SECONDS) SARGABLE_CRASH_ROUNDS=30 SARGABLE_SPARK_CRASH_ROUNDS=3 \
	  bash scripts/postgres.sh run -- $(PY) -m pytest tests/soak tests/test_crash.py -q -s $(PYTEST_ARGS)
	bash scripts/postgres.sh run -- $(PY) benchmarks/resource_bounds.py

# Benchmarks and their plots: each benchmark prints its table (kept in benchmarks/results/*.txt) and the plotted ones
# write JSON there too; benchmarks/plots.py then draws docs/img/*.png. The default sizes take about 10 minutes on
# 2 cores (partition filtering at 10,000 and 100,000 partitions against deltalake, pyiceberg and brute force);
# BENCH_SCALE=full runs the sizes docs/benchmarks.md reports (1,000,000 partitions on SQLite and PostgreSQL, Spark's
# Hive metastore at 10,000, 20,000-partition Spark scans, TPC-DS SF1): an hour or more.
BENCH_SCALE ?= quick
BENCH_OUT ?= benchmarks/results
BENCH_IMG ?= docs/img
ifeq ($(BENCH_SCALE),full)
BENCH_PF := bash scripts/postgres.sh run -- $(PY) benchmarks/partition_filter.py --sizes 10000,100000,1000000
BENCH_SKIP_ARGS := --sample 100000
BENCH_FILES := --sizes 20000,100000,1000000 --peer-budget 60
else
BENCH_PF := $(PY) benchmarks/partition_filter.py --sizes 10000,100000 --peers brute,pyiceberg,deltalake --postgres none
BENCH_SKIP_ARGS := --sample 20000
BENCH_FILES := --sizes 20000 --postgres none
endif
bench: $(VENV)/.installed-bench
	@mkdir -p $(BENCH_OUT)
	set -o pipefail; $(PY) benchmarks/parse.py --repeat 3 --clock cpu --json $(BENCH_OUT)/parse.json \
	  | tee $(BENCH_OUT)/parse.txt
	set -o pipefail; $(PY) benchmarks/plan.py --json $(BENCH_OUT)/plan.json | tee $(BENCH_OUT)/plan.txt
	set -o pipefail; $(PY) benchmarks/skipping.py $(BENCH_SKIP_ARGS) --json $(BENCH_OUT)/skipping.json \
	  | tee $(BENCH_OUT)/skipping.txt
	set -o pipefail; $(BENCH_PF) --json $(BENCH_OUT)/partition_filter.json | tee $(BENCH_OUT)/partition_filter.txt
	set -o pipefail; $(PY) benchmarks/file_planning.py $(BENCH_FILES) --json $(BENCH_OUT)/file_planning.json \
	  | tee $(BENCH_OUT)/file_planning.txt
ifeq ($(BENCH_SCALE),full)
	set -o pipefail; bash scripts/postgres.sh run -- $(PY) benchmarks/store.py | tee $(BENCH_OUT)/store.txt
	set -o pipefail; $(PY) benchmarks/spark_scan.py --partitions 20000 --repeat 3 | tee $(BENCH_OUT)/spark_scan.txt
	set -o pipefail; $(PY) benchmarks/tpcds.py --scale 1 --repeat 3 --json $(BENCH_OUT)/tpcds.json \
	  | tee $(BENCH_OUT)/tpcds.txt
	set -o pipefail; $(PY) benchmarks/optimize.py --full --json $(BENCH_OUT)/optimize.json | tee $(BENCH_OUT)/optimize.txt
	set -o pipefail; $(PY) benchmarks/write.py --repeat 3 --json $(BENCH_OUT)/write.json | tee $(BENCH_OUT)/write.txt
	set -o pipefail; $(PY) benchmarks/s3.py --partitions 10000 --delay 0.02 --repeat 3 --json $(BENCH_OUT)/s3.json \
	  | tee $(BENCH_OUT)/s3.txt
	set -o pipefail; $(PY) benchmarks/readers.py --partitions 20000 100000 --min-rounds 2 \
	  --json $(BENCH_OUT)/readers.json | tee $(BENCH_OUT)/readers.txt
endif
	$(PY) benchmarks/plots.py --results $(BENCH_OUT) --out $(BENCH_IMG)

# The Hive metastore benchmarks of issue 32 in one command (hours; Hive's metastore from the pyspark jars on
# PostgreSQL, whose JDBC driver jar HMS_JDBC_JAR names): the API side by side with readers under ingest, the cold calls
# interleaved up to 1,000,000 partitions (Hive's loaded by SQL and checked), and Spark SQL end to end at 100,000 and
# 1,000,000 partitions; then the plots.
HMS_JDBC_JAR ?=
bench-hms: $(VENV)/.installed-bench
	@test -n "$(HMS_JDBC_JAR)" || { echo "make bench-hms needs HMS_JDBC_JAR=PATH/postgresql-<version>.jar"; exit 2; }
	@mkdir -p $(BENCH_OUT)
	set -o pipefail; bash scripts/postgres.sh run -- $(PY) benchmarks/hms.py --spark-repeat 3 --ingest 60 \
	  --jdbc-jar $(HMS_JDBC_JAR) --json $(BENCH_OUT)/hms.json | tee $(BENCH_OUT)/hms.txt
	set -o pipefail; bash scripts/postgres.sh run -- $(PY) benchmarks/hms_cold.py --sizes 10000,100000,1000000 \
	  --repeat 7 --hive-heap 2g --jdbc-jar $(HMS_JDBC_JAR) --json $(BENCH_OUT)/hms-cold.json | tee $(BENCH_OUT)/hms-cold.txt
	set -o pipefail; bash scripts/postgres.sh run -- $(PY) benchmarks/hms_e2e.py --sizes 100000 --rounds 2 --repeat 2 \
	  --jdbc-jar $(HMS_JDBC_JAR) --json $(BENCH_OUT)/hms-e2e.json | tee $(BENCH_OUT)/hms-e2e.txt
	set -o pipefail; bash scripts/postgres.sh run -- $(PY) benchmarks/hms_e2e.py --sizes 1000000 --rounds 2 --repeat 2 \
	  --leave-out star,hr --hive-heap 4g --driver-memory 3g --jdbc-jar $(HMS_JDBC_JAR) \
	  --json $(BENCH_OUT)/hms-e2e-1m.json | tee $(BENCH_OUT)/hms-e2e-1m.txt
	$(PY) benchmarks/plots.py --results $(BENCH_OUT) --out $(BENCH_IMG)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
