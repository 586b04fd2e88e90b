# make compare:   the cross-framework comparison on the default model (the main job).
# make demo:      both models on a real signal (Japanese Vowels) in every installed backend:
#                 held-out SNR, closed-loop rate–distortion, SNR through lost packets,
#                 plots in reports/demo/.
# make test:      the conformance kit (parity_tests/) over every installed backend and the
#                 project's own tests (tests/): what CI runs.
# make test-fast: the same without the tests that rerun the kit or the main job in a
#                 subprocess (marked `nested`), start data-parallel workers (`processes`) or
#                 take ten seconds or more of their own (`slow`: the random configs among
#                 them), the kit on two of its cases (FAST_CASES), one hypothesis draw:
#                 the edit loop.
# make parity BACKEND=NAME_OR_PATH [ARGS=...]: the conformance kit alone (parity_tests/) for
#                 the backends named (a registered name or package.module:attribute; several,
#                 space-separated); ARGS go to pytest.
# make lint:      ruff check and format, and mypy over frae (strict), impls, bench and apps
#                 (pyproject.toml's [tool.mypy]).
# Each creates .venv with the Python the pinned stack needs (PYTHON_VERSION; found on PATH,
# under pyenv or in the usual folders, or given as PYTHON=...) and installs the project into
# it through constraints.txt; the install reruns when either file changes.

PYTHON_VERSION := 3.13
CANDIDATES := python$(PYTHON_VERSION) python3 python \
	$(wildcard $(HOME)/.pyenv/versions/$(PYTHON_VERSION)*/bin/python$(PYTHON_VERSION)) \
	$(wildcard /usr/local/bin/python$(PYTHON_VERSION) /usr/bin/python$(PYTHON_VERSION))
IS_WANTED := import sys; sys.exit(sys.version_info[:2] != tuple(map(int, "$(PYTHON_VERSION)".split("."))))
ifndef PYTHON
PYTHON := $(firstword $(foreach p,$(CANDIDATES),$(shell $(p) -c '$(IS_WANTED)' >/dev/null 2>&1 && echo $(p))))
endif
VENV := .venv
BIN := $(VENV)/bin
EXTRAS ?= all
STAMP := $(VENV)/.installed-$(EXTRAS)

.PHONY: test test-fast parity compare demo lint install clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -n "$(PYTHON)" || { echo "make: the pinned stack needs Python $(PYTHON_VERSION), and none was found \
	(tried: $(CANDIDATES)). Install it (pyenv install $(PYTHON_VERSION), or your system's \
	python$(PYTHON_VERSION) package) or name it: make PYTHON=/path/to/python$(PYTHON_VERSION)" >&2; exit 1; }
	@$(BIN)/python -c '$(IS_WANTED)' 2>/dev/null || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	@echo "installing into $(VENV) with $$($(BIN)/python --version) (log: $(VENV)/install.log)"
	set -o pipefail; PIP_CONSTRAINT=$(CURDIR)/constraints.txt $(BIN)/python -m pip install \
		--progress-bar off --no-compile -e ".[$(EXTRAS)]" 2>&1 | tee $(VENV)/install.log \
		| { grep --line-buffered -E '^(Collecting|Installing collected|Successfully installed)' || true; } \
		|| { tail -n 40 $(VENV)/install.log; exit 1; }
	$(BIN)/python -m compileall -q -j 0 $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("platlib"))') \
		>> $(VENV)/install.log 2>&1 || echo "make: some modules were left to compile on first import ($(VENV)/install.log)"
	touch $@

# pipefail: pip's exit status, not that of the filter that shows its progress. The bytecode of
# every installed module compiled after pip, on every core (pip compiles on one); without it,
# every process of a test run compiles the frameworks' modules it imports, again and again.
$(STAMP): SHELL := bash

# a pytest worker per core, up to four (each holds every framework: some 3 GiB); a worker
# more than the cores costs more in the compiles it slows than it gains while others wait
WORKERS := $(shell $(PYTHON) -c 'import os; print(min(len(os.sched_getaffinity(0)), 4))')
PARALLEL := -n $(WORKERS) --dist loadgroup --no-loadscope-reorder

test: $(STAMP)
	$(BIN)/python -m pytest $(PARALLEL) --durations=15

# output feedback and state feedback (the weights' transfer and round trip run on wide and
# state_deep: make test's); --case=NAME, not --case NAME: pytest reads the kit's options
# after it has found the kit
FAST_CASES := default state

test-fast: $(STAMP)
	FRAE_HYPOTHESIS_EXAMPLES=1 $(BIN)/python -m pytest $(PARALLEL) -m "not nested and not processes and not slow" \
		$(addprefix --case=,$(FAST_CASES))

# one process: with --backend, every test is the named backends', which -n would keep on one
# worker anyway (their compiled functions are cached there)
parity: $(STAMP)
	@test -n "$(BACKEND)" || { echo "make parity: BACKEND must name the backend to test, a \
	registered name or package.module:attribute (e.g. BACKEND=examples.plain_jax:PlainJaxFRAE); \
	got nothing" >&2; exit 2; }
	$(BIN)/python -m pytest parity_tests $(addprefix --backend ,$(BACKEND)) $(ARGS)

compare: $(STAMP)
	$(BIN)/frae compare

demo: $(STAMP)
	$(BIN)/frae demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) reports .cache .pytest_cache .ruff_cache .mypy_cache .hypothesis
