#!/usr/bin/env bash
# Builds the native module (python/ccgym/_sim*.so) with profile-guided optimisation (PGO).
#
#   scripts/build_native.sh                 rebuild the module when the Rust sources changed
#   scripts/build_native.sh install [ARGS]  also install the package and its dependencies
#                                           (ARGS go to `maturin develop`, e.g. --extras test)
#
# Uses the venv `make` made (.venv, or $VIRTUAL_ENV when set) and its maturin.
#
# A simulator's hot loop branches on the simulated state; laid out by a profile of real runs,
# the core spends about 10% fewer nanoseconds per packet-hop (4-21% over the `ccgym perf` runs;
# docs/architecture.md, "Built with a profile"). The steps: build an instrumented module
# (target/pgo-instrumented), run scripts/pgo_train.py through it, merge the counts with
# llvm-profdata, and build the module used from then on (target/pgo-optimised) with them. A
# profile changes code layout and inlining, never results.
#
# CCGYM_PGO=0 builds without a profile (into target/, one build instead of two); so does a
# toolchain without llvm-profdata where rustup cannot add it (a note says so). Nothing is rebuilt
# when the Rust sources, the training script and the compiler are those of the last build and
# the module on disk is the one it made.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export VIRTUAL_ENV=${VIRTUAL_ENV:-$PWD/.venv}
if [ ! -x "$VIRTUAL_ENV/bin/maturin" ]; then
  echo "no maturin in $VIRTUAL_ENV: run \`make run\` or \`make test\` first (they create the venv)" >&2
  exit 2
fi
export PYO3_PYTHON=${PYO3_PYTHON:-$VIRTUAL_ENV/bin/python}
export PATH=$VIRTUAL_ENV/bin:$PATH
mode=${1:-build}
[ $# -gt 0 ] && shift
case $mode in
  build) develop_args=(--skip-install) ;;
  install) develop_args=("$@") ;;
  *) echo "usage: $0 [build | install [maturin develop args]]" >&2; exit 2 ;;
esac

plain() {
  maturin develop --release "${develop_args[@]}"
}

module() {
  ls python/ccgym/_sim*.so 2>/dev/null | head -n 1
}

if [ "${CCGYM_PGO:-1}" = 0 ]; then
  plain
  exit 0
fi

# llvm-profdata reads only the profile format of its own LLVM: rustup's llvm-tools component
# for this toolchain, or a system llvm-profdata-N of rustc's LLVM major version N.
sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
llvm_major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
profdata_tool="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata_tool" ] && command -v "llvm-profdata-$llvm_major" >/dev/null 2>&1; then
  profdata_tool=$(command -v "llvm-profdata-$llvm_major")
fi
if [ ! -x "$profdata_tool" ] && command -v rustup >/dev/null 2>&1; then
  echo "adding rustup's llvm-tools component (llvm-profdata, for the profile-guided build)"
  timeout 180 rustup component add llvm-tools >/dev/null 2>&1 || true
fi
if [ ! -x "$profdata_tool" ]; then
  echo "note: no llvm-profdata of LLVM $llvm_major for this rustc (rustup component add" \
    "llvm-tools); building without a profile (about 10% slower per packet-hop)"
  plain
  exit 0
fi

pgo=target/pgo
mkdir -p "$pgo"
# What the optimised module depends on: the Rust sources, the training runs, the compiler.
key=$({
  rustc -vV
  echo "RUSTFLAGS=${RUSTFLAGS:-}"
  find crates Cargo.toml Cargo.lock scripts/pgo_train.py -type f \
    \( -name '*.rs' -o -name '*.toml' -o -name '*.lock' -o -name '*.py' \) | LC_ALL=C sort \
    | xargs sha256sum
} | sha256sum | cut -d' ' -f1)

optimised() {
  CARGO_TARGET_DIR=target/pgo-optimised \
    RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$PWD/$pgo/ccgym.profdata" \
    maturin develop --release --skip-install
  sha256sum "$(module)" | cut -d' ' -f1 >"$pgo/module.sha256"
}

if [ "$(cat "$pgo/key" 2>/dev/null)" = "$key" ] && [ -f "$pgo/ccgym.profdata" ]; then
  if [ "$mode" = install ]; then
    # The profile is current: install what was asked (the instrumented build is already
    # compiled, so this only installs), then put the optimised module back.
    CARGO_TARGET_DIR=target/pgo-instrumented \
      RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$PWD/$pgo/raw" \
      maturin develop --release "${develop_args[@]}"
    optimised
  elif [ -z "$(module)" ] || [ "$(sha256sum "$(module)" | cut -d' ' -f1)" != \
    "$(cat "$pgo/module.sha256" 2>/dev/null)" ]; then
    optimised
  fi
  exit 0
fi

echo "profile-guided build: instrumented module, training runs, optimised module"
CARGO_TARGET_DIR=target/pgo-instrumented \
  RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$PWD/$pgo/raw" \
  maturin develop --release "${develop_args[@]}"
rm -rf "$pgo/raw"
python scripts/pgo_train.py
"$profdata_tool" merge -o "$pgo/ccgym.profdata" "$pgo/raw"
rm -rf "$pgo/raw"
optimised
echo "$key" >"$pgo/key"
