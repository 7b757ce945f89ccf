# ccgym developer tasks. Needs only a Rust toolchain and Python >= 3.10 (`python3`) on PATH;
# everything else goes into .venv on first use.
#
#   make run           build (incrementally), run the quick bench suite, write its HTML report
#   make run-scenario  run one scenario and print its summary (SCENARIO=incast-16)
#   make test          Rust tests, rustfmt, clippy, ruff, parallel pytest (installs chromium if missing)
#   make perf          the standard incast benchmark (ccgym perf)
#   make fuzz          the fuzzer's long profile: thousands of generated scenarios and bridge calls
#   make lint          rustfmt --check, clippy, ruff
#
# run, run-scenario and perf install only the package's own dependencies; test and lint also
# install the extras (test tools, Gymnasium/PettingZoo, PyTorch/TensorBoard, Ray).
#   make clean         remove .venv, target/ and build outputs

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
CARGO ?= cargo
VENV ?= .venv
# The PyO3 crate builds a cdylib that links against Python; it is tested through pytest.
PY_CRATE ?= ccgym-py
SCENARIO ?= incast-16

VENV_DIR := $(abspath $(VENV))
BIN := $(VENV_DIR)/bin
# Re-made only when pyproject.toml changes. BASE: the venv, maturin and the package's own
# dependencies (what simulating, benchmarking and native policies need). FULL: also the extras
# test,rl,train,ray (PyTorch alone is a large download), for the tests and the linters.
BASE_STAMP := $(VENV_DIR)/.ccgym-base.stamp
FULL_STAMP := $(VENV_DIR)/.ccgym-full.stamp
EXTRAS := test,rl,train,ray

# maturin, cargo and PyO3 all use the venv's interpreter (PyO3 rebuilds when it changes).
export VIRTUAL_ENV := $(VENV_DIR)
export PYO3_PYTHON := $(BIN)/python
export PATH := $(BIN):$(PATH)

.PHONY: help build run run-scenario chromium test perf lint clean fuzz

help:
	@sed -n 's/^#   //p' $(firstword $(MAKEFILE_LIST))

$(BASE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV_DIR)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check 'maturin>=1.5,<2'
	scripts/build_native.sh install
	touch $@

$(FULL_STAMP): $(BASE_STAMP)
	scripts/build_native.sh install --extras $(EXTRAS)
	touch $@

# Rebuilds the native module in place (python/ccgym/_sim*.so) when Rust sources changed, with
# profile-guided optimisation (scripts/build_native.sh; CCGYM_PGO=0 builds without a profile);
# a no-op otherwise. The package itself is installed in editable mode.
build: $(BASE_STAMP)
	scripts/build_native.sh

# The quick suite (classic CCs and the bundled policy:adpg-default, a few minutes on 2 cores);
# runs cached under results/bench/quick are reused. Prints the table and `report: PATH`.
run: build
	$(BIN)/ccgym bench --suite quick

run-scenario: build
	$(BIN)/ccgym run $(SCENARIO)

# tests/test_report.py renders the bench report in headless Chromium: Debian's package, installed
# once when missing. Without root (or apt) it only prints a note, and that test is skipped.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (Debian package) for the report test"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	      || echo "note: installing chromium failed; the report rendering test will be skipped"; \
	  else \
	    echo "note: chromium is missing and cannot be installed without root (apt-get); the report rendering test will be skipped"; \
	  fi; }

test: $(FULL_STAMP) build chromium
	$(CARGO) test --workspace --profile test-opt --exclude $(PY_CRATE)
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(BIN)/ruff check python tests scripts
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4 --dist loadgroup tests

perf: build
	$(BIN)/ccgym perf

# The property-based fuzzer of tests/test_fuzz.py with its long profile (random cases, 3000
# scenarios by default: CCGYM_FUZZ_EXAMPLES=N); `make test` runs its fixed profile. Prints the
# number of cases and their outcomes; docs/limits.md says what it checks.
fuzz: $(FULL_STAMP) build
	CCGYM_FUZZ=long $(BIN)/python -m pytest -q -s tests/test_fuzz.py

lint: $(FULL_STAMP)
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(BIN)/ruff check python tests scripts

clean:
	rm -rf $(VENV_DIR) target .pytest_cache .ruff_cache results
	rm -f python/ccgym/_sim*.so python/ccgym/_sim*.pyd
	find python tests -name __pycache__ -type d -prune -exec rm -rf {} +
