#!/usr/bin/env bash
# Cluster benchmarks: Belay nodes on the Redis broker (cluster-bench,
# crates/belay-load/src/suites/cluster; results in docs/BENCHMARKS.md, "Cluster on
# Redis"). Each benchmark starts its own redis-server on a free loopback port
# in a temporary directory (--save "" --appendonly no) and stops it at the end;
# nodes and load-client groups are child processes, read through /proc.
#
#   scripts/bench-cluster.sh                       # everything (about an hour on 2 cores)
#   ONLY=publish RUNS=1 scripts/bench-cluster.sh   # one part: publish | shards | capacity | recovery
#   PUB_REPLICATED=1 PUB_NODES=1 ONLY=publish scripts/bench-cluster.sh   # + a primary with a replica, wait_replicas 0 and 1
#   ONLY=shards RUNS=3 scripts/bench-cluster.sh    # one Redis vs Redis Clusters of 1 and 3 shards (SHARDS=1,3)
#   CAP_NODES=4 CAP_CLIENTS=2 CAP_PER_CLIENT=5000 ONLY=capacity scripts/bench-cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# One descriptor per connection in each process; 20,000 is this machine's
# hard limit, which is why capacity splits the load clients over processes.
ulimit -n "$(ulimit -Hn)"
echo "RLIMIT_NOFILE: $(ulimit -n)"
for tool in redis-server redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (Debian: apt-get install redis-server redis-tools)"; exit 1; }
done

RUNS=${RUNS:-3}
ONLY=${ONLY:-all}
cargo build --release -p belay-load --bin cluster-bench
bin=${CARGO_TARGET_DIR:-target}/release/cluster-bench

echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet -- crates/belay-load || echo ' + local changes in crates/belay-load')"
nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2; uname -r; rustc --version; redis-server --version
echo "before: $(uptime)"

if [[ $ONLY == all || $ONLY == publish ]]; then
  echo "== publish through Redis: 1, 2, 4 nodes vs the memory broker vs redis-benchmark =="
  $bin publish --nodes "${PUB_NODES:-1,2,4}" --runs "$RUNS" \
    --throughput-subscribers "${PUB_TPUT_SUBSCRIBERS:-8}" --throughput-messages "${PUB_TPUT_MESSAGES:-20000}" \
    --concurrency "${PUB_CONCURRENCY:-1,16}" \
    --latency-subscribers "${PUB_LAT_SUBSCRIBERS:-1000}" --latency-messages "${PUB_LAT_MESSAGES:-1000}" \
    --latency-rate "${PUB_LAT_RATE:-100}" --floor-requests "${PUB_FLOOR_REQUESTS:-100000}" \
    ${PUB_REPLICATED:+--replicated}
  echo "after publish: $(uptime)"
fi

if [[ $ONLY == all || $ONLY == shards ]]; then
  echo "== publishing over ${SHARD_CHANNELS:-256} channels: one Redis vs Redis Clusters of ${SHARDS:-1,3} shards =="
  $bin shards --shards "${SHARDS:-1,3}" --nodes "${SHARD_NODES:-2}" --channels "${SHARD_CHANNELS:-256}" \
    --messages "${SHARD_MESSAGES:-40000}" --concurrency "${SHARD_CONCURRENCY:-32}" --runs "$RUNS"
  echo "after shards: $(uptime)"
fi

if [[ $ONLY == all || $ONLY == capacity ]]; then
  echo "== capacity: nodes sharing one port (SO_REUSEPORT), load clients in several processes =="
  $bin capacity --nodes "${CAP_NODES:-10}" --clients "${CAP_CLIENTS:-8}" --per-client "${CAP_PER_CLIENT:-19000}" \
    --hold-secs "${HOLD_SECS:-30}" --messages "${CAP_MESSAGES:-10}" --rate "${CAP_RATE:-1}" --runs "$RUNS" \
    --subscribes-in-flight "${CAP_SUBSCRIBES_IN_FLIGHT:-256}"
  echo "after capacity: $(uptime)"
fi

if [[ $ONLY == all || $ONLY == recovery ]]; then
  echo "== recovery: kill -9 of node A under ${REC_CLIENTS:-10000} subscribed clients =="
  $bin recovery --clients "${REC_CLIENTS:-10000}" --rate "${REC_RATE:-5}" \
    --reconnect-window-ms "${REC_WINDOWS:-0,1000}" --publish-secs "${REC_PUBLISH_SECS:-40}" \
    --bound-secs "${REC_BOUND_SECS:-60}" --runs "$RUNS"
  if [[ -n ${REC_STRESS_RATE-25} ]]; then
    echo "== recovery under a heavier stream: B publishing ${REC_STRESS_RATE:-25}/s =="
    $bin recovery --clients "${REC_CLIENTS:-10000}" --rate "${REC_STRESS_RATE:-25}" \
      --reconnect-window-ms "${REC_STRESS_WINDOWS:-1000}" --publish-secs 30 \
      --bound-secs "${REC_BOUND_SECS:-60}" --runs "$RUNS"
  fi
  echo "after recovery: $(uptime)"
fi
echo "after: $(uptime)"
