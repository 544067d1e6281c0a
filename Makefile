# Two commands matter: `make run` and `make test`. Everything else is a helper.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-fast venv lint bench test-deps browser-deps node-deps clean lock bundle

# Every dependency at one version, on every machine: requirements.lock (made by uv from
# pyproject.toml, for every platform and Python >= 3.11 at once: --universal) constrains
# make venv, deploy/install-pi.sh and the offline bundle. `make lock` refreshes it.
LOCK := requirements.lock
UV_VERSION := 0.13.8
LOCK_EXTRAS := --extra hardware --extra mqtt --extra camera --extra test

# The venv is filled by uv (from PyPI, into the venv itself): on a clean 2-core machine it
# installs everything in 26 s where pip took 52 s, which counts against the 6 minutes of a
# clean-clone `make test`. --compile-bytecode, as pip does: where PYTHONDONTWRITEBYTECODE is
# set, a venv without .pyc files compiles its libraries again in every process (a
# clean-clone suite took 502 s instead of 365). pip stays in the venv for deploy/bundle.py
# and the install test.
$(BIN)/python:
	$(PY) -m venv $(VENV)

$(BIN)/uv: | $(BIN)/python
	$(BIN)/pip install -q 'uv==$(UV_VERSION)'

$(VENV)/.installed: pyproject.toml $(LOCK) | $(BIN)/uv
	UV_LINK_MODE=copy $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python \
	  -c $(LOCK) -e '.[hardware,mqtt,camera,test]'
	touch $@

lock: | $(BIN)/uv
	$(BIN)/uv pip compile -q --universal --python-version 3.11 $(LOCK_EXTRAS) \
	  --custom-compile-command 'make lock' --upgrade pyproject.toml -o $(LOCK)

venv: $(VENV)/.installed

# The offline bundle for the venue (deploy/bundle.py; install-pi.sh --offline installs it).
bundle: venv
	$(BIN)/python deploy/bundle.py --out dist

run: venv
	$(BIN)/shotclock serve --host $(HOST) --port $(PORT) --db var/shotclock.db

# What the tests need from Debian (chromium, mosquitto, ...): only the missing packages are
# installed, as root (harness/test-deps.sh says which and why).
test-deps:
	@sh harness/test-deps.sh

browser-deps: test-deps  # the old name

# The node dependencies, exactly as in their package-lock.json files: the Companion module's
# (its tests run from pytest: tests/broadcast/test_companion.py; without npm they are
# skipped) and axe-core, which the accessibility tests load into every page
# (tests/browser/axe; tests/browser/test_accessible.py fails without it).
node-deps: test-deps
	@if command -v npm >/dev/null 2>&1; then \
	  (cd integrations/companion && npm ci --prefer-offline --no-audit --no-fund --loglevel=error) && \
	  (cd tests/browser/axe && npm ci --prefer-offline --no-audit --no-fund --loglevel=error); \
	else echo "missing: node and npm (apt-get install nodejs npm): the Companion module's tests are skipped, the accessibility tests fail"; fi

# The venv is made while apt-get and npm fetch what the tests need from Debian and npm (a
# fresh machine downloads Chromium then): -j2, node-deps after test-deps (which brings npm).
# mypy (a cold run takes a while) checks beside the tests; the run fails if either fails.
test:
	@$(MAKE) --no-print-directory -j2 venv node-deps
	$(BIN)/ruff check .
	@$(BIN)/mypy clock_service firmware_bridge web_ui > .mypy.out 2>&1 & mypy=$$!; \
	  $(BIN)/python -m harness.suite; tests=$$?; \
	  wait $$mypy; typed=$$?; echo "mypy clock_service firmware_bridge web_ui:"; cat .mypy.out; \
	  rm -f .mypy.out; [ $$tests = 0 ] && [ $$typed = 0 ]

# The inner loop: the pure cores and the unit tests, no servers, no browser, no broker
# (pytest --fast, tests/conftest.py); under 30 s. `make test` runs everything. Bytecode is
# written whatever PYTHONDONTWRITEBYTECODE says: pytest keeps each test module's rewritten
# asserts, instead of rewriting them in each worker every time (harness/suite.py).
test-fast: venv
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q --fast -n 2

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy clock_service firmware_bridge web_ui

bench: venv
	$(BIN)/python bench/bench.py
	$(BIN)/python bench/camera_bench.py
	$(BIN)/python bench/clip_bench.py
	$(BIN)/python bench/pi_budget.py
	$(BIN)/python bench/reports_bench.py
	$(BIN)/python bench/feeds_bench.py
	$(BIN)/python bench/hardware_faults.py -n 5
	$(BIN)/python bench/store_bench.py
	$(BIN)/python bench/store_soak.py

clean:
	rm -rf $(VENV) var build dist *.egg-info
