#!/usr/bin/env bash
# Server benchmarks against the peers: Belay, the bare tokio-websockets floor,
# a plain Node `ws` server and socket.io, same loads, same run
# (`server-bench peers`; docs/BENCHMARKS.md, "Against socket.io and ws").
# Installs the Node servers' pinned packages (peers/bench, npm ci), raises the
# descriptor limit as far as this machine allows, builds server-bench in
# release mode and runs the idle, echo and broadcast loads RUNS times, every
# server once per load per run. Output: markdown rows plus MEDIAN lines with
# each server's ratio to Belay. Loopback only; every load is bounded.
#
#   scripts/bench-peers.sh                           # everything, defaults below
#   RUNS=1 HOLD_SECS=10 scripts/bench-peers.sh       # a quick pass
#   ONLY=echo PEERS=belay,socketio scripts/bench-peers.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# Each process holds one descriptor per connection (the load client in this
# process, the server in its child).
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "RLIMIT_NOFILE: $(ulimit -n)"
max_conns=$(( $(ulimit -n) - 200 ))
CONNECTIONS=${CONNECTIONS:-10000}
if (( CONNECTIONS > max_conns )); then
  echo "CONNECTIONS=$CONNECTIONS is more than RLIMIT_NOFILE allows; using $max_conns"
  CONNECTIONS=$max_conns
fi

(cd peers/bench && npm ci --no-audit --no-fund >/dev/null)
cargo build --release -p belay-load --bin server-bench
bin=${CARGO_TARGET_DIR:-target}/release/server-bench

nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2; uname -r
echo "node $(node --version); socket.io $(node -p 'require("./peers/bench/node_modules/socket.io/package.json").version');" \
  "engine.io $(node -p 'require("./peers/bench/node_modules/engine.io/package.json").version');" \
  "ws $(node -p 'require("./peers/bench/node_modules/ws/package.json").version')"
git rev-parse --short HEAD

"$bin" peers \
  --peers "${PEERS:-belay,floor,ws,socketio}" \
  --only "${ONLY:-idle,echo,broadcast}" \
  --connections "$CONNECTIONS" \
  --hold-secs "${HOLD_SECS:-30}" \
  --ping-interval-ms "${PING_INTERVAL_MS:-10000}" \
  --echo-connections "${ECHO_CONNECTIONS:-100}" \
  --echo-requests "${ECHO_REQUESTS:-2000}" \
  --subscribers "${SUBSCRIBERS:-10000}" \
  --messages "${MESSAGES:-250}" \
  --rate "${RATE:-25}" \
  --runs "${RUNS:-3}" \
  --node-server peers/bench/server.mjs
