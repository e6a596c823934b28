# mxnb — set-up contract: `make lab` and `make test` work on a fresh Debian machine.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
JS_TEST := tests/widgets/js
JS_STAMP := $(JS_TEST)/node_modules/.installed

.PHONY: lab test test-fast bench setup test-setup dot node chromium clean

setup: $(STAMP) dot

# What only the tests need on top (make lab does not install a browser).
test-setup: setup node chromium $(JS_STAMP)

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install --upgrade --quiet pip
	$(PIP) install --quiet -e '.[dev,lab]'
	touch $(STAMP)

# Install Debian packages $(2) with apt-get (options $(3)) when any command of $(1) is missing.
define apt_ensure
	@for cmd in $(1); do command -v $$cmd >/dev/null 2>&1 || missing=1; done; \
	[ -z "$$missing" ] || { \
	  echo "installing $(2) with apt-get"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq $(3) $(2) >/dev/null; }
endef

# graphviz's `dot` renders the DAG views.
dot:
	$(call apt_ensure,dot,graphviz)

# The canvas widget's ES module is tested in headless Chromium (tests/widgets/js/): node and
# npm run that test, Debian's chromium is the browser.
node:
	$(call apt_ensure,node npm,nodejs npm)

chromium:
	$(call apt_ensure,chromium,chromium,--no-install-recommends)

# playwright-core, as pinned in package-lock.json; installed again when the lock file changes.
$(JS_STAMP): $(JS_TEST)/package-lock.json | node
	@echo "installing playwright-core with npm ci in $(JS_TEST)"
	@cd $(JS_TEST) && npm ci --no-audit --no-fund --loglevel=error >/dev/null
	@touch $@

lab: setup
	$(VENV)/bin/jupyter lab notebooks/

# The whole suite, notebooks and the tests marked `slow` included.
test: test-setup
	$(PY) -m pytest -q tests

# Everything but the tests marked slow, for a quick loop while editing.
test-fast: test-setup
	$(PY) -m pytest -q -m "not slow" tests

# mxnet_reference.py is not here: it runs under real MXNet, by hand (see its docstring).
BENCHMARKS := engine ndarray operators memory_plan widgets io train dist_kvstore

bench: setup
	$(PIP) install --quiet -e '.[bench]'  # PyTorch (CPU) is the peer of the operator benchmark
	for b in $(BENCHMARKS); do echo "== benchmarks/$$b.py"; $(PY) benchmarks/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info $(JS_TEST)/node_modules
