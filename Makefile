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

.PHONY: setup system-deps demo demo-data demo-classify demo-capsules demo-capsules-dr demo-capsules-ca demo-floor demo-parts test test-all lint bench clean

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

# recipes run in bash, and a pipeline fails when any of its commands fails (the stage tags below)
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

# $(call stage,command): runs a demo stage's command. Under `make demo`, which runs two stages at
# a time (DEMO_LANES=1), the command and every line it prints start with the stage's name.
stage = @echo "$(if $(DEMO_LANES),[$@] )$(1)"; $(1)$(if $(DEMO_LANES), 2>&1 | sed -u 's/^/[$@] /')

# the main job on the built-in data, in three stages that can also be run alone
# (`make demo-classify`, `make demo-capsules`, `make demo-parts`); everything lands in runs/demo/,
# each stage replacing its own earlier run (--overwrite says what it removes). `make demo` runs two
# stages at a time, each on half of the cores (one each on 2 cores: together about a third faster
# than one after the other on both, README "Time"); a stage run alone uses every core.
demo: setup demo-data
	@start=$$(date +%s); threads=$$(( $$(nproc) / 2 > 0 ? $$(nproc) / 2 : 1 )); \
	echo "make demo: two stages at a time, $$threads CPU thread(s) each; every line starts with its stage's name"; \
	OMP_NUM_THREADS=$$threads NUMBA_NUM_THREADS=$$threads PYTHONUNBUFFERED=1 \
	  $(MAKE) --no-print-directory -j2 DEMO_LANES=1 demo-classify demo-capsules demo-parts && \
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
	$(call stage,$(CLI) train demo --overwrite)
	$(call stage,$(CLI) eval runs/demo/last.pt --neighbourhoods)

# reconstruction: demo-sized capsule autoencoders with dynamic routing and centroid attention,
# each trained and evaluated, then the two side by side on the same shapes (the Centroid
# Transformers Fig. 5)
demo-capsules: demo-capsules-dr demo-capsules-ca
	$(call stage,$(CLI) view runs/demo/capsules_dr/last.pt --compare runs/demo/capsules_ca/last.pt --figure runs/demo/capsules.png)

demo-capsules-dr: setup demo-data
	$(call stage,$(CLI) train capsules_demo_dr --overwrite)
	$(call stage,$(CLI) eval runs/demo/capsules_dr/last.pt)

demo-capsules-ca: setup demo-data
	$(call stage,$(CLI) train capsules_demo_ca --overwrite)
	$(call stage,$(CLI) eval runs/demo/capsules_ca/last.pt)

# the capsule stage's floor: a plain autoencoder (no capsules) trained exactly as the two capsule
# models, evaluated with the same scores (not in `make demo`: about 2.5 more minutes on 2 cores)
demo-floor: setup demo-data
	$(call stage,$(CLI) train capsules_demo_floor --overwrite)
	$(call stage,$(CLI) eval runs/demo/autoencoder/last.pt)

# part segmentation: the demo-sized Sequoia segmenter, evaluated (predicted vs true parts)
demo-parts: setup demo-data
	$(call stage,$(CLI) train parts_demo --overwrite)
	$(call stage,$(CLI) eval runs/demo/parts/last.pt)

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
