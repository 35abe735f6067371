#!/usr/bin/env bash
# Server benchmarks: Belay vs the bare tokio-websockets floor, same run.
# Raises the descriptor limit as far as this machine allows, builds
# server-bench in release mode, and runs the idle, echo and broadcast
# benchmarks. Output: markdown rows plus MEDIAN lines (see docs/BENCHMARKS.md).
#
#   scripts/bench-server.sh                 # everything, defaults below
#   IDLE_COUNTS=10000 RUNS=1 scripts/bench-server.sh
#   HTTP_PUBLISH=only scripts/bench-server.sh   # only the HTTP API vs Server::publish pair
#   HTTP_PUBLISH=0 scripts/bench-server.sh      # everything but that pair
set -euo pipefail
cd "$(dirname "$0")/.."

# Each process holds one descriptor per connection (the load client in this
# process, the server in its child), so the soft limit bounds the count.
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "RLIMIT_NOFILE: $(ulimit -n)"
limit=$(ulimit -n)
max_conns=$(( limit - 200 ))

RUNS=${RUNS:-3}
IDLE_COUNTS=${IDLE_COUNTS:-"10000,50000,$max_conns"}
# Drop counts the descriptor limit cannot hold.
counts=""
for n in ${IDLE_COUNTS//,/ }; do
  if (( n <= max_conns )); then counts="${counts:+$counts,}$n"; else echo "skipping $n idle connections: RLIMIT_NOFILE is $limit"; fi
done

cargo build --release -p belay-load --bin server-bench
HTTP_PUBLISH=${HTTP_PUBLISH:-1}
bin=${CARGO_TARGET_DIR:-target}/release/server-bench
nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2

# Publishing through the HTTP API (POST /api/publish from the load process,
# keep-alive connections) against Server::publish, same server, same
# subscribers, same run; MEDIAN lines give HTTP / Rust.
http_publish() {
  echo "== broadcast published through the HTTP API vs Server::publish (25 msg/s) =="
  $bin http-publish --subscribers 10000 --messages 250 --rate 25 --runs "$RUNS"
  echo "== broadcast published through the HTTP API vs Server::publish (as fast as possible) =="
  $bin http-publish --subscribers 10000 --messages 200 --rate 1000 --runs "$RUNS"
}
if [[ $HTTP_PUBLISH == only ]]; then http_publish; exit 0; fi

echo "== idle =="
$bin idle --counts "$counts" --hold-secs "${HOLD_SECS:-30}" --runs "$RUNS"
echo "== echo =="
$bin echo --connections "${ECHO_CONNECTIONS:-100}" --requests "${ECHO_REQUESTS:-2000}" --runs "$RUNS"
echo "== broadcast (25 msg/s: 250k deliveries/s offered) =="
$bin broadcast --subscribers 10000 --messages 250 --rate 25 --runs "$RUNS"
echo "== broadcast (as fast as possible) =="
$bin broadcast --subscribers 10000 --messages 200 --rate 1000 --runs "$RUNS"
if [[ $HTTP_PUBLISH != 0 ]]; then http_publish; fi
