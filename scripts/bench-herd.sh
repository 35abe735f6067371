#!/usr/bin/env bash
# The simulator's outage with real processes (herd-bench, docs/HERD.md): a
# fleet of real belay-client clients per reconnect policy against `belay
# serve` with an injected per-handshake CPU cost on one worker thread; the
# server is killed (SIGKILL), stays down, and a new one comes back on the
# same port. One JSON line per policy, then a table.
#
#   scripts/bench-herd.sh                                  # the four policies, about 8 minutes
#   POLICIES=fixed,belay-default CLIENTS=2000 scripts/bench-herd.sh
#
# On a 2-core machine the server is pinned to CPU 0 (--worker-threads 1) and
# herd-bench (every client) to CPU 1, so the server's CPU budget is one core
# and the load generator does not take from it.
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-5000}
ACCEPT_RATE=${ACCEPT_RATE:-250}          # N / C = 20 s
DOWN=${DOWN:-10s}
HORIZON=${HORIZON:-90s}
HANDSHAKE_COST_US=${HANDSHAKE_COST_US:-1000}   # 1 ms: capacity 1,000 handshakes/s on the one worker
SESSION_COST_US=${SESSION_COST_US:-0}
WORKERS=${WORKERS:-1}
POLICIES=${POLICIES:-fixed,exponential,full_jitter,belay-default}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
SEED=${SEED:-1}

# One descriptor per client in herd-bench, one per connection in the server.
ulimit -n "$(ulimit -Hn)"
echo "RLIMIT_NOFILE: $(ulimit -n)"
cargo build --release -p belay-cli --bin belay -p belay-load --bin herd-bench
bin=${CARGO_TARGET_DIR:-target}/release

echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet -- crates || echo ' + local changes in crates/')"
nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2; uname -r; rustc --version
echo "before: $(uptime)"

pin=()
if [[ -n $LOAD_CPUS ]]; then pin=(taskset -c "$LOAD_CPUS"); fi
server_pin=()
if [[ -n $SERVER_CPUS ]]; then server_pin=(--server-cpus "$SERVER_CPUS"); fi

set -x
"${pin[@]}" "$bin/herd-bench" --belay "$bin/belay" \
  --policy "$POLICIES" --clients "$CLIENTS" --accept-rate "$ACCEPT_RATE" \
  --down "$DOWN" --horizon "$HORIZON" \
  --handshake-cost-us "$HANDSHAKE_COST_US" --session-cost-us "$SESSION_COST_US" \
  --worker-threads "$WORKERS" "${server_pin[@]}" --seed "$SEED" "$@"
set +x
echo "after: $(uptime)"
