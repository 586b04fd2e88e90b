# make compare: the cross-framework comparison on the default model (the main job).
# make test:    the parity suite over every installed backend.
# Both need nothing but python3: they create .venv and install the project into it, through
# constraints.txt, with the extras they need; the install reruns when either file changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXTRAS ?= all
STAMP := $(VENV)/.installed-$(EXTRAS)

.PHONY: test compare lint install clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	PIP_CONSTRAINT=$(CURDIR)/constraints.txt $(BIN)/python -m pip install --progress-bar off \
		-e ".[$(EXTRAS)]" > $(VENV)/install.log 2>&1 \
		|| { tail -n 40 $(VENV)/install.log; exit 1; }
	touch $@

test: $(STAMP)
	$(BIN)/python -m pytest

compare: $(STAMP)
	$(BIN)/frae compare

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) reports .pytest_cache .ruff_cache .mypy_cache .hypothesis
