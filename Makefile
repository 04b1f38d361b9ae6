# olake-cow: `make help` lists the targets. Every target installs what it needs into .venv.
PY ?= python3
# SPARK=3 (default): Spark 3.5 + Iceberg 1.10 as on EMR 7.x; SPARK=4: Spark 4.1 + Iceberg 1.12, beside
# it in .venv-spark4 (EMR emr-spark-8.1.0 runs Spark 4.1). Both take Iceberg's jars by their Maven
# coordinates (tools/jars.py).
SPARK ?= 3
ifeq ($(SPARK),4)
VENV := .venv-spark4
else ifeq ($(SPARK),3)
VENV := .venv
else
$(error SPARK must be 3 (Spark 3.5) or 4 (Spark 4.1), got '$(SPARK)')
endif
REQS := requirements-spark$(SPARK).txt
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEPLOY_VENV ?= .venv-deploy
DEPLOY_PY = $(abspath $(DEPLOY_VENV))/bin/python
DEPLOY_STAMP := $(DEPLOY_VENV)/.installed
JARS := $(VENV)/jars/.installed
REST_FIXTURE := $(VENV)/jars/rest-fixture/.installed
NESSIE := $(VENV)/jars/nessie/nessie-quarkus-0.99.0-runner.jar
TEST_FS := $(VENV)/jars/test-fs/hadoop-bare-naked-local-fs-0.1.0.jar
STACK ?= olake-cow
TEST_WORKERS ?= 2  # pytest processes (each with its own Spark session, 2 GB)
export STACK
export PYTHONPATH := $(CURDIR)/emr_job:$(CURDIR)/lambda:$(CURDIR)

.PHONY: help setup java deploy-tools check-template secret bucket-events deploy run-now destroy try-local demo test \
	test-fast test-stack test-spark4 stack-parity \
	lint typecheck bench bench-engines bench-lane bench-warm soak clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(STAMP): requirements-dev.txt $(REQS) pyproject.toml
	@echo "creating $(VENV) (Spark $(SPARK)): the pinned Python packages of $(REQS), a few minutes the first time"
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r $(REQS)
	$(BIN)/pip install -q --no-deps -e .  # the job, trigger, infra, testkit and bench packages (pyproject.toml)
	@touch $(STAMP)

# Iceberg's Spark runtime and AWS bundle by their Maven coordinates, pinned (EMR ships its own).
$(JARS): tools/jars.py infra/iceberg_jars.py | $(STAMP)
	bash tools/system-deps.sh java  # Ivy runs on Java: installed first where it is missing (as root)
	$(BIN)/python tools/jars.py $(VENV)/jars --spark $(SPARK)

# The Iceberg REST reference server the tests start (tests/spark/test_rest.py), by Maven coordinates.
$(REST_FIXTURE): tools/jars.py tools/rest-fixture.sha256 | $(STAMP)
	bash tools/system-deps.sh java
	$(BIN)/python tools/jars.py $(VENV)/jars --rest-fixture

# Nessie's server, which the tests show the job refusing (tests/spark/test_rest.py), by Maven coordinates.
$(NESSIE): tools/jars.py | $(STAMP)
	bash tools/system-deps.sh java
	$(BIN)/python tools/jars.py $(VENV)/jars --nessie

# The local file system the tests' Spark session writes through without a `chmod` fork per file
# (testkit/servers.py, BARE_LOCAL_FS), by Maven coordinates.
$(TEST_FS): tools/jars.py testkit/servers.py | $(STAMP)
	bash tools/system-deps.sh java
	$(BIN)/python tools/jars.py $(VENV)/jars --test-fs

setup: $(STAMP) $(JARS) ## create .venv (SPARK=4: .venv-spark4) with the pinned toolchain and Iceberg's jars

java: ## check that Java 17 is there (Spark needs it; `make test` installs it as root)
	@command -v java >/dev/null || { echo "Java 17 is required (apt-get install openjdk-17-jre-headless)"; exit 1; }

$(DEPLOY_STAMP): requirements-deploy.txt
	@echo "creating $(DEPLOY_VENV): SAM CLI, cfn-lint and boto3 of requirements-deploy.txt (about 40 s the first time)"
	$(PY) -m venv $(DEPLOY_VENV)
	$(DEPLOY_VENV)/bin/pip install -q --upgrade pip
	$(DEPLOY_VENV)/bin/pip install -q -r requirements-deploy.txt
	@touch $(DEPLOY_STAMP)

deploy-tools: $(DEPLOY_STAMP) ## create .venv-deploy with SAM CLI and cfn-lint (kept apart: their pins clash)

check-template: $(DEPLOY_STAMP) ## cfn-lint and sam build of template.yaml
	$(DEPLOY_VENV)/bin/cfn-lint template.yaml
	PYTHON=$(DEPLOY_PY) SAM_CLI_TELEMETRY=0 $(DEPLOY_VENV)/bin/sam build --build-in-source --template template.yaml

secret: $(DEPLOY_STAMP) ## store OLake's destination.json in Secrets Manager (FILE=destination.json [NAME=olake/destination])
	@[ -n "$(FILE)" ] || { echo "make secret: error: set FILE=path/to/destination.json" >&2; exit 2; }
	$(DEPLOY_PY) -m infra.put_destination_secret --file "$(FILE)" --name "$(or $(NAME),olake/destination)"

bucket-events: $(DEPLOY_STAMP) ## once per bucket: S3 -> EventBridge notifications (BUCKET=my-olake-bucket)
	@[ -n "$(BUCKET)" ] || { echo "make bucket-events: error: set BUCKET=<the warehouse bucket>" >&2; exit 2; }
	$(DEPLOY_PY) -m infra.enable_bucket_events "$(BUCKET)"

deploy: $(DEPLOY_STAMP) ## package the job, build and deploy the stack (README, Deploy); no Java or pyspark needed
	PY=$(DEPLOY_PY) SAM=$(DEPLOY_VENV)/bin/sam bash infra/deploy.sh

run-now: $(DEPLOY_STAMP) ## start a run through the deployed trigger and wait (STACK=olake-cow NAMESPACE=sales RUN_ARGS="--force")
	@[ -n "$(NAMESPACE)" ] || { echo "make run-now: error: set NAMESPACE=<source namespace>" >&2; exit 2; }
	$(DEPLOY_PY) -m infra.run_now --stack "$(STACK)" --namespace "$(NAMESPACE)" $(RUN_ARGS)

destroy: $(DEPLOY_STAMP) ## delete the stack; data only when asked (STACK=olake-cow DESTROY_ARGS="--remove-artifacts --yes")
	$(DEPLOY_PY) -m infra.destroy --stack "$(STACK)" --sam $(DEPLOY_VENV)/bin/sam $(DESTROY_ARGS)

try-local: $(STAMP) $(JARS) $(DEPLOY_STAMP) ## deploy -> run-now -> destroy on a local moto server: no AWS account (README)
	$(BIN)/python tools/try_local.py $(TRY_ARGS)

demo: $(STAMP) $(JARS) ## run the job on a sample OLake-like table in a local warehouse; installs Java as root if missing
	bash tools/system-deps.sh  # Java; PostgreSQL and its JDBC driver for the python engine's part
	$(BIN)/python demo/demo.py

# What the tests need besides the Debian packages; `make SPARK=4 test-stack` fetches Spark 4's alone
# (.ci/run does so while the Spark 3.5 tests run: nothing there is shared with them).
TEST_STACK := $(STAMP) $(JARS) $(REST_FIXTURE) $(NESSIE) $(TEST_FS)
test-stack: $(TEST_STACK) ## install what `make test` needs into .venv (SPARK=4: .venv-spark4): packages, jars, test servers

test: $(TEST_STACK) $(DEPLOY_STAMP) ## run every test (unit, moto, Spark, catalogs, readers); installs Debian deps as root
	bash tools/system-deps.sh
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25 $(PYTEST_ARGS)

# The Spark scenarios that cover every reader and writer path, in both source modes x both mirror
# formats (partitioned mirrors included: test_mirror has bucket and identity specs), on Glue + S3 too:
# what the Spark 4 leg runs (the whole suite runs on Spark 3.5).
SPARK4_TESTS ?= tests/spark/test_mirror.py tests/spark/test_delete_modes.py tests/spark/test_dv.py \
	tests/spark/test_glue.py tests/spark/test_own.py tests/spark/test_engines.py tests/spark/test_writer.py

# The longest of them test the planner over long histories, which is pure Python and the same on both
# stacks; the mid-life switch of delete mode reads what the three delete modes' test reads, and of
# that test the equality and position sources are read by test_mirror too (OLake's commits and a
# user's DELETE): they run on Spark 3.5 and on the REST reference server; deletion-vector sources here.
# Glue + S3 runs its cow mirror here (test_dv writes dv mirrors on Spark 4).
# The scenarios below test what the planner decides more than how Spark reads or writes (the planner
# is pure Python, the same on both stacks, and `make stack-parity` compares whole mirrors): they run
# on Spark 3.5 only.
SPARK4_PLANNER := without_tombstone or keys_outside_the_change_sets or duplicate_visible or column_the_source_dropped \
	or renamed_source_column or nested_schema or its_formats_write_mode or idle_run or only_a_table_with_work \
	or dry_run or deleted_several_ways or backlog_in_hard
# Of test_mirror.py's four (mode, format) variants it runs two that cover both modes and both formats
# (readonly-cow, truncate-dv): the reader follows the mode, the writer the format; test_dv and
# test_delete_modes run dv in both modes. The python engine's variant (readonly-cow-python) runs no
# Spark of its own: the Spark 3.5 suite runs it.
# Of test_engines.py it runs the engines taking over each other's mirror: the express lane's python
# engine and EMR's Spark 4.1 on one mirror.
# Of test_own.py the Spark 4 leg runs what a user's edit of the mirror's schema and properties does
# (Spark and Iceberg read and write them), on the file-system catalog; the rest there is the planner's
# and the command line's (and its python-engine variants run no Spark of their own). Of the identity
# scenarios parametrised by what was edited it runs one edit each (a user's delete then Spark's
# compaction; data-snapshot): the others differ only in what the planner reads.
# test_writer.py: the tests' OLake-like writer writes data files through Iceberg's Java API, which
# each Iceberg line spells its own way.
SPARK4_OWN := carrying_only_the_made_by or second_job_truncating or another_job_truncates or remembers_another or expired_before_it_ran or expired_resumes or summary_inside \
	or decide_alike or ending_in_cow or given_as_a_source or (own and jdbc) or first_truncate_build or dropped_truncate_mirror \
	or set_back_by_the_next_run or rollback_onto_the_rewrite
SPARK4_SKIP ?= not ($(SPARK4_OWN)) and not backlog_of_many_commits and not checkpoint_found_in_a_long_history and not switch_from_equality \
	and not (olakes_delete_modes and (equality or position)) and not (glue and dv) and not ($(SPARK4_PLANNER)) \
	and not (test_engines and not (take_over or makes_the_mirror)) and not (test_mirror and (readonly-dv or truncate-cow)) \
	and not readonly-cow-python and not (test_own and python) \
	and not (expiry_took_every_snapshot and not then-compacted) and not (one_record_of and not data-snapshot)

test-spark4: ## the Spark 4.1 leg (EMR emr-spark-8.1.0) in .venv-spark4: SPARK4_TESTS
	$(MAKE) SPARK=4 test PYTEST_ARGS="$(SPARK4_TESTS) -k '$(SPARK4_SKIP)' $(PYTEST_ARGS)"

stack-parity: ## the same scenario on Spark 3.5 and Spark 4.1: identical mirrors (tools/stack_parity.py)
	$(MAKE) SPARK=3 setup
	$(MAKE) SPARK=4 setup
	bash tools/system-deps.sh java
	.venv/bin/python tools/stack_parity.py --out build/parity-spark3.json
	.venv-spark4/bin/python tools/stack_parity.py --out build/parity-spark4.json
	.venv/bin/python tools/stack_parity.py --compare build/parity-spark3.json build/parity-spark4.json

test-fast: $(STAMP) ## unit and moto tests only (no JVM, no Java needed)
	$(BIN)/python -m pytest -m "unit or aws" $(PYTEST_ARGS)

bench: $(STAMP) $(JARS) java ## cold benchmark, a process per run as on EMR (BENCH_ARGS="--tiers single --script PATH"); docs/BENCHMARKS.md
	$(BIN)/python bench/cold.py $(BENCH_ARGS)

bench-engines: $(STAMP) $(JARS) java ## a small sync on the python and the Spark engine, whole processes (BENCH_ARGS="--quick"); docs/bench-engines.json
	bash tools/system-deps.sh  # PostgreSQL for the jdbc catalog
	$(BIN)/python bench/engines.py $(BENCH_ARGS)

bench-lane: $(STAMP) $(JARS) java ## the express lane's freshness: commit event -> mirror commit, cold processes (BENCH_ARGS="--quick"); docs/bench-lane.json
	$(BIN)/python -m bench.lane $(BENCH_ARGS)

bench-warm: $(STAMP) $(JARS) java ## the same systems in one warm Spark session (BENCH_ARGS="--quick"); docs/bench.json
	$(BIN)/python bench/warm.py $(BENCH_ARGS)

soak: $(STAMP) $(JARS) ## fault/concurrency soak on a PostgreSQL JDBC catalog (SOAK_ARGS="--kills 60 --concurrent 24")
	bash tools/system-deps.sh
	$(BIN)/python tools/soak.py $(SOAK_ARGS)

lint: $(STAMP) ## ruff, no class over 150 lines and no function rated D or worse by radon in the product code
	$(BIN)/ruff check emr_job lambda infra testkit tests demo tools bench
	$(BIN)/python tools/class_size.py emr_job lambda infra
	@graded="$$($(BIN)/radon cc --min D --show-complexity emr_job lambda infra)"; \
	if [ -n "$$graded" ]; then echo "$$graded"; echo "radon: split the functions above (rated D or worse)"; exit 1; fi

typecheck: $(STAMP) ## mypy on the job, trigger and infra packages
	$(BIN)/mypy

clean: ## remove local warehouses and caches (keeps .venv)
	rm -rf .demo .pytest_cache spark-warehouse metastore_db derby.log build/merge-deps-*
