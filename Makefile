# VLNVerse: `make demo` runs the main job, `make test` the tests, `make bench` the benchmarks.
# Each target creates .venv and installs the project (with the dev extra) when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_OUT ?= demo_out

.PHONY: demo test bench install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,train]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m vlnverse demo --out $(DEMO_OUT)

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	@set -e; for script in benchmarks/*_bench.py; do \
		echo "== $$script"; $(BIN)/python $$script; done

clean:
	rm -rf $(VENV) $(DEMO_OUT) _build .pytest_cache
