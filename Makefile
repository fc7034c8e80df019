# adrank — every verb a user needs. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV_VERSION := $(shell sed -n 's/^uv==//p' requirements.lock)
CONFIG ?=
CONFIG_FLAG := $(if $(CONFIG),--config $(CONFIG),)
PYTEST_ARGS ?=
# `make test` processes (pytest-xdist); 0 runs the tests in this one process
TEST_WORKERS ?= 2
DAYS ?= 3

.DEFAULT_GOAL := help

help: ## list the verbs
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# --compile-bytecode: the libraries' .pyc are written once here, so no process compiles TensorFlow's or kfp's sources
# at import (with PYTHONDONTWRITEBYTECODE set, as on the CI host, Python never caches them itself: `import tensorflow`
# cost 9.7 s of CPU instead of 3.8 s, and every step of a local run and every test process paid it)
$(BIN)/.installed: requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "uv==$(UV_VERSION)"
	$(BIN)/uv pip install --python $(BIN)/python --compile-bytecode -r requirements.lock
	$(BIN)/uv pip install --python $(BIN)/python --no-deps -e .
	touch $@

install: $(BIN)/.installed ## create .venv and install the locked environment plus adrank

run: install ## run the whole DAG locally on the embedded default config (CONFIG=file to change)
	$(BIN)/adrank run $(CONFIG_FLAG)

retrain: install ## replay daily retraining for DAYS days (default 3) on configs/examples/daily.yaml (CONFIG=file to change)
	$(BIN)/adrank retrain --config $(or $(CONFIG),configs/examples/daily.yaml) --days $(DAYS)

typecheck: install ## mypy over foundation, configs, components, pipelines and ops (settings: pyproject.toml [tool.mypy])
	$(BIN)/python -m mypy

lint: install ## ruff over the whole tree (rules in pyproject.toml [tool.ruff]; `ruff check --fix` sorts imports)
	$(BIN)/ruff check .

test: install ## run the test suite (without the tests marked long) on TEST_WORKERS processes, a test file per process at a time
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

test-long: install ## run the tests marked long (whole-DAG runs: daily replay, kill and resume) on TEST_WORKERS processes
	$(BIN)/python -m pytest -m long -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

compile: install ## compile the Vertex pipeline spec (CONFIG=configs/vertex.yaml)
	$(BIN)/adrank compile --config $(or $(CONFIG),configs/vertex.yaml) --backend vertex --output build/ranking.yaml

bench: install ## print the benchmark figures
	@for script in benchmarks/*.py; do echo "== $$script"; PYTHONPATH=. $(BIN)/python $$script || exit 1; done

device-kit: install ## gather what the lent GPU machine lacks for the device check into build/device (docs/backends.md)
	$(BIN)/python benchmarks/device_check.py kit --out build/device

lock: ## re-resolve every lock: requirements.lock, requirements-gpu.lock, requirements-tpu.lock and the two JAX locks
	$(PYTHON) -m pip install --quiet "uv==$(UV_VERSION)"
	$(PYTHON) components/images/locks.py compile --uv "$(PYTHON) -m uv"

locks-check: install ## check each image's lock resolves on PyPI as pinned and agrees with requirements.lock
	$(BIN)/python components/images/locks.py check --uv "$(BIN)/python -m uv"

images: ## build and push the cpu/gpu/tpu container images with Cloud Build (CONFIG=configs/vertex.yaml)
	$(BIN)/adrank images build --config $(or $(CONFIG),configs/vertex.yaml)

clean: ## remove build outputs and local runs (keeps .venv)
	rm -rf build runs .pytest_cache

.PHONY: help install run retrain typecheck lint test test-long compile bench device-kit lock locks-check images clean
