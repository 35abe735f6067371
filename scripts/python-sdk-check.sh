#!/usr/bin/env bash
# The Python SDK (crates/belay-python) as a user gets it, in two parts:
#
#   scripts/python-sdk-check.sh build   its wheel built by maturin (from PyPI,
#       in a venv of its own), installed into a fresh venv
#       (target/python-sdk/venv, which `belay lab --clients python` and the
#       lab_python test use), the package and the native extension's stubs
#       type-checked (mypy --strict; mypy's stubtest against the built
#       extension);
#   scripts/python-sdk-check.sh test    its pytest suite against real
#       `belay serve` processes: the binary the tests built ($BELAY_BIN,
#       default target/debug/belay).
#
# Without an argument, both. SDK_RELEASE=1 builds the wheel optimised (for
# measurements: the lab's 10 repetitions, the benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${CARGO_TARGET_DIR:-target}"
[[ $TARGET == /* ]] || TARGET="$PWD/$TARGET"
WORK="$TARGET/python-sdk"
PART="${1:-all}"

if [[ $PART == build || $PART == all ]]; then
  rm -rf "$WORK"
  python3 -m venv "$WORK/build"
  "$WORK/build/bin/pip" install -q --disable-pip-version-check "maturin==1.16.0"
  "$WORK/build/bin/maturin" build -q ${SDK_RELEASE:+--release} -m crates/belay-python/Cargo.toml -o "$WORK/wheels"
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q --disable-pip-version-check "$WORK"/wheels/belay-*.whl "pytest==9.2.0" "mypy==2.4.1"
  (cd crates/belay-python && "$WORK/venv/bin/mypy" --strict --cache-dir "$WORK/mypy-cache" python/belay)
  (cd "$WORK" && "$WORK/venv/bin/python" -m mypy.stubtest belay._native)
fi

if [[ $PART == test || $PART == all ]]; then
  export BELAY_BIN="${BELAY_BIN:-$TARGET/debug/belay}"
  [ -x "$BELAY_BIN" ] || { echo "no belay binary at $BELAY_BIN (cargo build -p belay-cli)" >&2; exit 1; }
  [ -x "$WORK/venv/bin/python" ] || { echo "no SDK venv at $WORK/venv: run $0 build first" >&2; exit 1; }
  "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider crates/belay-python/tests
fi
