# The README's two commands: `make demo` and `make test`. Each does the whole set-up on a
# fresh machine (a .venv, the CPU build of torch first, the package with its extras, the
# Debian libraries Open3D needs and Chromium for the browser viewer's tests, when running as
# root; the compiled kernels) and skips it when it is already done.

PYTHON ?= python3
TORCH ?= torch==2.13.0
VENV ?= .venv
PY := $(VENV)/bin/python
# one stamp per torch spec: `make test TORCH=torch==2.9.1` re-runs the set-up
STAMP := $(VENV)/.setup-$(shell printf '%s' '$(TORCH)' | md5sum | cut -c1-8)
APT_PACKAGES := libusb-1.0-0 libgl1 libgomp1 libegl1 libegl-mesa0 mesa-vulkan-drivers xvfb
# the browser viewer's tests open its pages in a headless Chromium (tests/viz/test_html_browser.py);
# where it cannot be installed they are skipped, saying so, and the set-up goes on
BROWSER_PACKAGES := chromium

.PHONY: setup system-deps demo demo-data demo-classify demo-capsules demo-floor demo-parts test test-all lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@$(MAKE) --no-print-directory system-deps
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check "$(TORCH)"
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[all,dev]"
	OMP_WAIT_POLICY=PASSIVE $(PY) -m pointabstract.ops.kernels.warm
	@rm -f $(VENV)/.setup-*
	@touch $@

system-deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian packages for Open3D: $$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q $$missing >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null && apt-get install -y -q $$missing >/dev/null; }; \
	  else \
	    echo "note: Debian packages missing ($$missing): Open3D may not import; install them as root"; \
	  fi; \
	fi
	@missing=$$(for p in $(BROWSER_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian packages for the browser viewer's tests: $$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q $$missing >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null && apt-get install -y -q $$missing >/dev/null 2>&1; } || \
	      echo "note: could not install $$missing: the browser tests will be skipped"; \
	  else \
	    echo "note: $$missing not installed: the browser viewer's tests are skipped; install it as root"; \
	  fi; \
	fi

SYNTH := datasets/synthetic
CLI := $(PY) -m pointabstract.cli

# the main job on the built-in data, in three stages that can also be run alone
# (`make demo-classify`, `make demo-capsules`, `make demo-parts`); everything lands in runs/demo/,
# each stage replacing its own earlier run (--overwrite says what it removes)
demo: setup demo-data
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory demo-classify demo-capsules demo-parts && \
	echo "make demo: $$(( $$(date +%s) - start )) s after set-up; reports under runs/demo/; open in a browser:" && \
	ls runs/demo/eval_last/viewer.html runs/demo/*/eval_last/viewer.html

# a complete generated set carries its manifest (written last, the set swapped in whole); without
# it, --overwrite replaces only a set that proves it is data synth's own (an earlier version's
# default set, its first shape redrawn bit for bit) and says so; anything else in $(SYNTH), such
# as a dataset of yours with the same file and class names, is refused and never touched
demo-data: setup
	@test -f $(SYNTH)/.pointabstract-synth.json || $(CLI) data synth --out $(SYNTH) --overwrite

# every eval also writes viewer.html beside its report.md: the browser viewer, one offline page
# classification: the demo-sized centroid transformer, evaluated, with what it groups together
demo-classify: setup demo-data
	$(CLI) train demo --overwrite
	$(CLI) eval runs/demo/last.pt --neighbourhoods

# reconstruction: demo-sized capsule autoencoders with dynamic routing and centroid attention,
# evaluated, and the two side by side on the same shapes (the Centroid Transformers Fig. 5)
demo-capsules: setup demo-data
	$(CLI) train capsules_demo_dr --overwrite
	$(CLI) train capsules_demo_ca --overwrite
	$(CLI) eval runs/demo/capsules_dr/last.pt
	$(CLI) eval runs/demo/capsules_ca/last.pt
	$(CLI) view runs/demo/capsules_dr/last.pt --compare runs/demo/capsules_ca/last.pt \
	  --figure runs/demo/capsules.png

# the capsule stage's floor: a plain autoencoder (no capsules) trained exactly as the two capsule
# models, evaluated with the same scores (not in `make demo`: about 2.5 more minutes on 2 cores)
demo-floor: setup demo-data
	$(CLI) train capsules_demo_floor --overwrite
	$(CLI) eval runs/demo/autoencoder/last.pt

# part segmentation: the demo-sized Sequoia segmenter, evaluated (predicted vs true parts)
demo-parts: setup demo-data
	$(CLI) train parts_demo --overwrite
	$(CLI) eval runs/demo/parts/last.pt

test: setup
	$(PY) -m pytest -q -m "not slow"

test-all: setup
	$(PY) -m pytest -q

lint: setup
	$(PY) -m ruff check pointabstract tests tools

bench: setup
	$(PY) tools/benchmark_ops.py --out runs/bench/ops_benchmark.md

clean:
	rm -rf runs .pytest_cache .hypothesis
	find . -name __pycache__ -prune -exec rm -rf {} +
