# mxnb — set-up contract: `make lab` and `make test` work on a fresh Debian machine.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
JS_TEST := tests/widgets/js
JS_STAMP := $(JS_TEST)/node_modules/.installed
LAB_TEST := tests/lab
LAB_STAMP := $(LAB_TEST)/node_modules/.installed
EXT := extension
EXT_NPM := $(EXT)/node_modules/.installed
EXT_OUT := mxnb/labextension
EXT_STAMP := $(EXT_OUT)/.built
EXT_SOURCES := $(EXT)/package.json $(EXT)/tsconfig.json $(wildcard $(EXT)/src/*.ts $(EXT)/style/*) \
	mxnb/widgets/static/canvas.js mxnb/widgets/static/canvas.css
LABEXT_LINK := $(VENV)/share/jupyter/labextensions/mxnb

.PHONY: lab test test-gpu test-fast bench setup test-setup dot node chromium labextension clean

setup: $(STAMP) dot

# What only the tests need on top (make lab does not install a browser).
test-setup: setup node chromium $(JS_STAMP) $(LAB_STAMP) labextension

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

# Galata (@jupyterlab/galata on @playwright/test, pinned in tests/lab/package-lock.json) runs
# the real-JupyterLab tests on Debian's chromium: no browser is downloaded.
$(LAB_STAMP): $(LAB_TEST)/package-lock.json | node
	@echo "installing Galata with npm ci in $(LAB_TEST)"
	@cd $(LAB_TEST) && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >/dev/null
	@touch $@

# The JupyterLab extension (extension/README.md): TypeScript built with @jupyterlab/builder
# into mxnb/labextension/ (shipped in the wheel as share/jupyter/labextensions/mxnb), linked
# into the venv's Jupyter data dir. Rebuilt only when a source changes (stamp file).
labextension: $(EXT_STAMP) $(LABEXT_LINK)

$(EXT_NPM): $(EXT)/package-lock.json | node
	@echo "installing the extension's build tools with npm ci in $(EXT)"
	@cd $(EXT) && npm ci --no-audit --no-fund --loglevel=error >/dev/null
	@touch $@

$(EXT_STAMP): $(EXT_NPM) $(EXT_SOURCES) $(STAMP)
	@echo "building the JupyterLab extension into $(EXT_OUT)"
	@cd $(EXT) && rm -rf lib ../$(EXT_OUT) && node_modules/.bin/tsc && \
	  node node_modules/@jupyterlab/builder/lib/build-labextension.js \
	    --core-path "$$(../$(PY) -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))')" \
	    . >/dev/null
	@touch $@

$(LABEXT_LINK): | $(STAMP)
	mkdir -p $(dir $@)
	ln -sfn $(abspath $(EXT_OUT)) $@

# Jupyter refuses to start as root (containers, CI machines) unless told it may.
# LAB_ARGS: more options for jupyter lab (e.g. LAB_ARGS="--no-browser --port=8899").
lab: setup labextension
	$(VENV)/bin/jupyter lab $$( [ "$$(id -u)" = 0 ] && echo --allow-root ) $(LAB_ARGS) notebooks/

# The whole suite, notebooks and the tests marked `slow` included.
test: test-setup
	$(PY) -m pytest -q tests

# Everything but the tests marked slow, for a quick loop while editing.
test-fast: test-setup
	$(PY) -m pytest -q -m "not slow" tests

# The GPU tests on a real GPU (tests/gpu, marked `gpu`), with a Python that has cupy: GPU
# machines here install nothing, so this uses their python3 and this checkout. Without a
# GPU every test is skipped and says why; `make test` runs the same tests on strict virtual
# GPUs (numpy through cupy's names and signatures, mxnb/testing/cupy_strict.py).
GPU_PY ?= python3
test-gpu:
	PYTHONPATH=$(CURDIR) $(GPU_PY) -m pytest -q -m gpu -p no:cacheprovider -W ignore::pytest.PytestConfigWarning tests/gpu

# mxnet_reference.py is not here: it runs under real MXNet, by hand (see its docstring).
BENCHMARKS := engine ndarray operators split updates memory_plan widgets extension io train bulk bucketing dist_kvstore exercises debugger

bench: setup
	$(PIP) install --quiet -e '.[bench]'  # PyTorch (CPU) is the peer of the operator benchmark
	for b in $(BENCHMARKS); do echo "== benchmarks/$$b.py"; $(PY) benchmarks/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info $(JS_TEST)/node_modules $(LAB_TEST)/node_modules \
	  $(EXT)/node_modules $(EXT)/lib $(EXT_OUT)
