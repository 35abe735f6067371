#!/usr/bin/env bash
# What the liveness defaults cost against the earlier ones (ping 25 s),
# same run, servers interleaved: server-bench liveness (docs/BENCHMARKS.md,
# "Liveness defaults"). About 8 minutes on 2 cores with the defaults.
#
#   scripts/bench-liveness.sh                          # 10,000 sessions, 60 s holds, 3 runs
#   CONNECTIONS=2000 HOLD_SECS=20 RUNS=1 scripts/bench-liveness.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n "$(ulimit -Hn)"
cargo build --release -p belay-load --bin server-bench
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + local changes')"
nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2
"${CARGO_TARGET_DIR:-target}/release/server-bench" liveness \
  --connections "${CONNECTIONS:-10000}" --hold-secs "${HOLD_SECS:-60}" --runs "${RUNS:-3}"
