#!/usr/bin/env bash
# The Python SDK (crates/belay-python) as a user gets it: its wheel built by
# maturin (from PyPI, in a venv of its own), installed into a fresh venv,
# the package and the native extension's stubs type-checked (mypy --strict,
# mypy's stubtest against the built extension), and its pytest suite run
# against real `belay serve` processes: the binary the tests built
# ($BELAY_BIN, default target/debug/belay).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${CARGO_TARGET_DIR:-target}"
[[ $TARGET == /* ]] || TARGET="$PWD/$TARGET"
WORK="$TARGET/python-sdk"
export BELAY_BIN="${BELAY_BIN:-$TARGET/debug/belay}"
[ -x "$BELAY_BIN" ] || { echo "no belay binary at $BELAY_BIN (cargo build -p belay-cli)" >&2; exit 1; }

rm -rf "$WORK"
python3 -m venv "$WORK/build"
"$WORK/build/bin/pip" install -q --disable-pip-version-check "maturin==1.16.0"
"$WORK/build/bin/maturin" build -q -m crates/belay-python/Cargo.toml -o "$WORK/wheels"

python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check "$WORK"/wheels/belay-*.whl "pytest==9.2.0" "mypy==2.4.1"
(cd crates/belay-python && "$WORK/venv/bin/mypy" --strict --cache-dir "$WORK/mypy-cache" python/belay)
(cd "$WORK" && "$WORK/venv/bin/python" -m mypy.stubtest belay._native)
"$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider crates/belay-python/tests
