# Two commands matter: `make run` and `make test`. Everything else is a helper.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test venv lint bench browser-deps clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[hardware,mqtt,test]'
	touch $@

venv: $(VENV)/.installed

run: venv
	$(BIN)/shotclock serve --host $(HOST) --port $(PORT)

# Browser tests need Debian's chromium; install it when it is missing (CI runs as root).
browser-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium missing: sudo apt-get install chromium (browser tests will fail without it)"; fi; \
	fi

test: venv browser-deps
	$(BIN)/ruff check .
	$(BIN)/mypy clock_service firmware_bridge web_ui
	$(BIN)/python -m pytest -q

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy clock_service firmware_bridge web_ui

bench: venv
	$(BIN)/python bench/bench.py

clean:
	rm -rf $(VENV) var build *.egg-info
