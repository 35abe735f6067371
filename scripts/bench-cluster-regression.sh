#!/usr/bin/env bash
# Publishing through Redis (cluster-bench publish, 1 node) at BASE and at
# the working tree, runs alternating, each run with its own redis-server;
# the working tree also runs 1 node on a primary with one replica, without
# and with wait_replicas 1 (what durability costs). MEDIAN lines of both
# builds at the end (docs/BENCHMARKS.md).
#
#   RUNS=3 scripts/bench-cluster-regression.sh e5282fe
#   RUNS=5 LAT_SUBSCRIBERS=100 LAT_MESSAGES=200 REPLICATED=0 scripts/bench-cluster-regression.sh e5282fe
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: scripts/bench-cluster-regression.sh BASE_COMMIT}
RUNS=${RUNS:-3}
base_dir=${BASE_DIR:-/tmp/belay-bench-base-$base}
if [[ ! -d $base_dir ]]; then
  git worktree add -q "$base_dir" "$base"
fi
(cd "$base_dir" && CARGO_TARGET_DIR="$base_dir/target" cargo build --release -q -p belay-load --bin cluster-bench)
cargo build --release -q -p belay-load --bin cluster-bench
new_bin=${CARGO_TARGET_DIR:-target}/release/cluster-bench
base_bin=$base_dir/target/release/cluster-bench
echo "baseline: $base, new: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + local changes')"
nproc; grep -m1 'model name' /proc/cpuinfo; redis-server --version
args=(publish --nodes 1 --runs 1 --throughput-subscribers 8 --throughput-messages 20000
      --concurrency 1,16 --latency-subscribers "${LAT_SUBSCRIBERS:-1000}"
      --latency-messages "${LAT_MESSAGES:-1000}" --latency-rate 100 --floor-requests 100000)
new_args=("${args[@]}")
if [[ ${REPLICATED:-1} == 1 ]]; then new_args+=(--replicated); fi
out=$(mktemp -d)
for run in $(seq 1 "$RUNS"); do
  echo "== run $run: baseline"; "$base_bin" "${args[@]}" | tee -a "$out/base.txt" | grep MEDIAN
  echo "== run $run: new"; "$new_bin" "${new_args[@]}" | tee -a "$out/new.txt" | grep MEDIAN
done
echo "== all MEDIAN lines (one per run): baseline"; grep MEDIAN "$out/base.txt"
echo "== all MEDIAN lines (one per run): new"; grep MEDIAN "$out/new.txt"
