# Quickstart: `make demo` (simulate and plot the paper's schedules) and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# pytest-xdist processes for `make test` (auto: one per CPU); work stealing keeps them all busy
# to the end (xdist's default hands out fixed batches: one worker idled for ~40 s on 2 cores)
TEST_WORKERS ?= auto
STAMP  := $(VENV)/.installed
# The interpreter that builds the venv, recorded in it: a venv another one made (say a failed
# `make demo PYTHON=python3.10`) is rebuilt from scratch rather than reused.
PYTHON_ID := $(shell $(PYTHON) -c 'import sys; print(sys.executable, *sys.version_info[:3])' 2>/dev/null)
BUILT_BY  := $(shell cat $(VENV)/.python 2>/dev/null)

.PHONY: demo test venv clean

ifneq ($(PYTHON_ID),$(BUILT_BY))
.PHONY: $(STAMP)
endif

$(STAMP): pyproject.toml
	@test -n "$(PYTHON_ID)" || { echo "make: $(PYTHON) is not a Python interpreter (set PYTHON=python3.11 or later)" >&2; exit 2; }
	$(PYTHON) -m venv --clear $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,gpu]"
	echo "$(PYTHON_ID)" > $(VENV)/.python
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m streamk demo --out out/demo

test: $(STAMP)
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
