# Quickstart: `make demo` (simulate and plot the paper's schedules) and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,gpu]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m streamk demo --out out/demo

test: $(STAMP)
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(PY) -m pytest -q

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
