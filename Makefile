# VLNVerse: `make demo` runs the main job, `make test` the tests, `make bench` the benchmarks.
# Each target creates .venv and installs the project (with EXTRAS) when needed.
PYTHON ?= python3
# The extras `make test` needs: dev (pytest, ruff, ray, mkdocs), hf (CPU torch, transformers), train (tensorboard),
# remote (websockets, msgpack).
EXTRAS ?= dev,hf,train,remote
# The extras accept a range of torch; the tests run on the version the goldens were made with.
TORCH ?= torch==2.13.0
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_OUT ?= demo_out

# Mesa's EGL and llvmpipe, for the CPU OpenGL renderer (vlnverse.sim.gl); installed when we
# are root with apt-get, else renderer "auto" falls back to PyBullet's TinyRenderer.
EGL_PACKAGES := libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri

.PHONY: demo test test-fast bench docs install clean egl browser

install: $(STAMP)

egl:
	@if ! ldconfig -p | grep -q libEGL_mesa && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = "0" ]; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(EGL_PACKAGES) >/dev/null; } \
		|| echo "Mesa EGL could not be installed; renderer 'auto' will use PyBullet's TinyRenderer" >&2; fi

# Headless Chromium, for the test that opens the HTML index in a browser (tests/eval/test_report_html.py);
# installed for `make test` when we are root with apt-get, else that test skips and says so.
browser:
	@if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = "0" ]; then \
		{ DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 \
		  || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }; } \
		|| echo "Chromium could not be installed; the browser check of the HTML index will skip" >&2; fi

$(STAMP): pyproject.toml Makefile
	@$(MAKE) --no-print-directory egl
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]' '$(TORCH)'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m vlnverse demo --out $(DEMO_OUT)

# Every test, then the 25 slowest; `make test-fast` leaves out those marked slow (3 s or more).
test: $(STAMP) browser
	$(BIN)/python -m pytest -q --durations=25

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" --durations=10

# The documentation site (MkDocs Material + mkdocstrings), built strictly into _build/site.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

bench: $(STAMP)
	@set -e; for script in benchmarks/*_bench.py; do \
		echo "== $$script"; $(BIN)/python $$script; done

clean:
	rm -rf $(VENV) $(DEMO_OUT) _build .pytest_cache
