#!/usr/bin/env bash
# The Python SDK's overhead (docs/BENCHMARKS.md, "Python SDK"): requests/s and
# publications/s one Python client handles, against the `websockets`
# library's bare echo and push in the same run. Builds the wheel optimised
# and `belay` in release, into a venv of their own (target/python-bench).
#
#   RUNS=5 SECONDS_EACH=3 scripts/bench-python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${CARGO_TARGET_DIR:-target}"
[[ $TARGET == /* ]] || TARGET="$PWD/$TARGET"
WORK="$TARGET/python-bench"

cargo build --release -q -p belay-cli --features tools
rm -rf "$WORK"
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check "maturin==1.16.0" "websockets==17.4"
"$WORK/venv/bin/maturin" build -q --release -m crates/belay-python/Cargo.toml -o "$WORK/wheels"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check "$WORK"/wheels/belay-*.whl
echo "commit $(git rev-parse --short HEAD), $(nproc) cores"
"$WORK/venv/bin/python" crates/belay-python/bench/bench.py --belay "$TARGET/release/belay" \
  --runs "${RUNS:-5}" --seconds "${SECONDS_EACH:-3}" --in-flight "${IN_FLIGHT:-64}"
