#!/usr/bin/env bash
# The server against an earlier build of itself: idle bytes and CPU per
# connection, echo and broadcast, interleaved runs in one go (this machine's
# run-to-run noise is large; only same-run medians count).
#
#   scripts/bench-regression.sh BASE_REV          # e.g. the commit before a refactor
#   RUNS=5 IDLE_COUNTS=10000 scripts/bench-regression.sh 961d409
#
# Builds server-bench at BASE_REV in a temporary worktree (its own target
# directory, kept under target/bench-baseline for reuse) and at the working
# tree, then runs each benchmark with the baseline's Belay server in the
# floor's place. Output: the markdown rows and MEDIAN lines of
# scripts/bench-server.sh, with "baseline" for "floor".
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: scripts/bench-regression.sh BASE_REV}

ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "RLIMIT_NOFILE: $(ulimit -n)"
RUNS=${RUNS:-5}
IDLE_COUNTS=${IDLE_COUNTS:-10000}

target=${CARGO_TARGET_DIR:-$PWD/target}
base_target="$target/bench-baseline"
worktree=$(mktemp -d)
trap 'git worktree remove --force "$worktree" >/dev/null 2>&1 || true' EXIT
git worktree add --detach "$worktree" "$base" >/dev/null
(cd "$worktree" && CARGO_TARGET_DIR="$base_target" cargo build --release -p belay-load --bin server-bench)
cargo build --release -p belay-load --bin server-bench
baseline="$base_target/release/server-bench"
bin="$target/release/server-bench"
echo "baseline: $(git rev-parse --short "$base"), new: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ' + uncommitted changes')"
nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2

echo "== idle =="
$bin --baseline-exe "$baseline" idle --counts "$IDLE_COUNTS" --hold-secs "${HOLD_SECS:-20}" --runs "$RUNS"
echo "== echo =="
$bin --baseline-exe "$baseline" echo --connections "${ECHO_CONNECTIONS:-100}" --requests "${ECHO_REQUESTS:-2000}" --runs "$RUNS"
echo "== broadcast (25 msg/s: 250k deliveries/s offered) =="
$bin --baseline-exe "$baseline" broadcast --subscribers 10000 --messages 250 --rate 25 --runs "$RUNS"
