#!/usr/bin/env bash
# Real network cut (issue 6, docs/NETCUT.md): `belay serve --demo` in one
# network namespace, `belay connect` in another, joined by a veth pair. The
# link is cut without any FIN or RST, the server reaps the dead connection,
# the link returns, and the client must be ready again. Three times are
# measured against their bounds:
#   1. cut -> the client reports the loss     <= 2 x ping interval + 2 s
#   2. cut -> the server reaps the connection <= ping interval + pong timeout + 2 s
#   3. restore -> READY and a new publication <= the reconnect policy's bound
# Needs root and `ip netns` (CI runs as root). Where namespaces are refused
# the test fails loudly: it never passes silently. Bounded in time: every
# wait has a deadline (about 60 s in all after the build).
#
# Environment: NETCUT_METHOD=auto|linkdown|nft (default auto: nft if the
# `nft` binary exists, else link down), NETCUT_PING_MS (default 1000),
# NETCUT_PORT (default 18080; the namespaces are private, so no clash).
set -euo pipefail
cd "$(dirname "$0")/.."

PING_MS=${NETCUT_PING_MS:-1000}
PORT=${NETCUT_PORT:-18080}
METHOD=${NETCUT_METHOD:-auto}
# How long the server waits for any frame after a ping (--pong-timeout-ms).
PONG_TIMEOUT_MS=${NETCUT_PONG_TIMEOUT_MS:-10000}
# belay_proto::Config::default(): connect_timeout and the unreachable_retry cap.
CONNECT_TIMEOUT_MS=10000
UNREACHABLE_RETRY_CAP_MS=2000

SERVER_IP=10.201.0.1
CLIENT_IP=10.201.0.2
NS_A=belay-netcut-a-$$
NS_B=belay-netcut-b-$$
VETH_A=bnc-a-$$
VETH_B=bnc-b-$$
URL=ws://$SERVER_IP:$PORT/ws
METRICS=http://$SERVER_IP:$PORT/metrics

loud() {
  {
    echo "################################################################"
    echo "netcut: FAIL: $*"
    echo "################################################################"
  } >&2
}
die() {
  loud "$@"
  exit 1
}

case "$METHOD" in
  auto) if command -v nft >/dev/null 2>&1; then METHOD=nft; else METHOD=linkdown; fi ;;
  linkdown | nft) ;;
  *) die "NETCUT_METHOD must be auto, linkdown or nft (got '$METHOD')" ;;
esac

[ "$(id -u)" = 0 ] || die "must run as root (network namespaces); this test does not skip"
if ! command -v ip >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
  echo "installing iproute2 and curl (Debian packages)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 curl >/dev/null || true
fi
command -v ip >/dev/null 2>&1 || die "the 'ip' command (iproute2) is missing"
command -v curl >/dev/null 2>&1 || die "curl is missing"
if [ "$METHOD" = nft ] && ! command -v nft >/dev/null 2>&1; then
  die "NETCUT_METHOD=nft but the nft binary is missing"
fi

cargo build -q -p belay-cli
BIN=$PWD/target/debug/belay

work=$(mktemp -d)
server_pid=""
client_pid=""
failed=1

cleanup() {
  set +e
  exec 3>&-
  for pid in $client_pid $server_pid; do
    kill "$pid" 2>/dev/null
  done
  for pid in $client_pid $server_pid; do
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if [ "$failed" = 1 ]; then
    for f in server.log client.err client.out; do
      [ -s "$work/$f" ] && { echo "--- $f (last 30 lines)"; tail -n 30 "$work/$f"; } >&2
    done
  fi
  # Deleting a namespace destroys its end of the veth pair, and with it the pair.
  ip netns del "$NS_A" 2>/dev/null
  ip netns del "$NS_B" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Microseconds since the epoch.
now_us() { echo "${EPOCHREALTIME/./}"; }
# Prefix each line with now_us.
stamp() { trap - EXIT INT TERM; while IFS= read -r line; do printf '%s %s\n' "${EPOCHREALTIME/./}" "$line"; done; }
# First timestamp in FILE after AFTER_US on a line matching the awk regex RE.
first_after() { awk -v t="$2" -v re="$3" '$1 > t && $0 ~ re { print $1; exit }' "$1" 2>/dev/null; }
# Poll CMD every 50 ms until it succeeds or TIMEOUT_S pass; then fail with WHAT.
wait_until() {
  local timeout_s=$1 what=$2
  shift 2
  local deadline=$(($(now_us) + timeout_s * 1000000))
  until "$@"; do
    [ "$(now_us)" -lt "$deadline" ] || die "timed out after ${timeout_s} s waiting for: $what"
    sleep 0.05
  done
}
metric() { # NAME -> value (empty if the server does not answer)
  ip netns exec "$NS_A" curl -s --max-time 1 "$METRICS" 2>/dev/null |
    awk -v n="$1" '$1 == n { print $2; exit }' || true
}
ms() { echo $((($1 + 500) / 1000)); }

# ---- topology ------------------------------------------------------------
if ! ip netns add "$NS_A" 2>"$work/netns.err" || ! ip netns add "$NS_B" 2>>"$work/netns.err"; then
  die "the kernel refused network namespaces ($(tr '\n' ' ' <"$work/netns.err")); the real network cut test cannot run here"
fi
ip -n "$NS_A" link add "$VETH_A" type veth peer name "$VETH_B" netns "$NS_B"
ip -n "$NS_A" addr add "$SERVER_IP/24" dev "$VETH_A"
ip -n "$NS_B" addr add "$CLIENT_IP/24" dev "$VETH_B"
for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
ip -n "$NS_A" link set "$VETH_A" up
ip -n "$NS_B" link set "$VETH_B" up

# ---- server and client ---------------------------------------------------
ip netns exec "$NS_A" "$BIN" serve --demo --listen "$SERVER_IP:$PORT" --ping-interval-ms "$PING_MS" \
  --pong-timeout-ms "$PONG_TIMEOUT_MS" >"$work/server.log" 2>&1 &
server_pid=$!
server_up() { [ -n "$(metric belay_connections_open)" ]; }
wait_until 10 "the server in $NS_A to answer $METRICS" server_up

mkfifo "$work/in"
exec 3<>"$work/in" # read-write: opening never blocks, and we stay the only writer
ip netns exec "$NS_B" "$BIN" connect "$URL" <"$work/in" \
  > >(stamp >"$work/client.out") 2> >(stamp >"$work/client.err") &
client_pid=$!
echo "sub feed" >&3

t_start=$(now_us)
flowing_since() { # publications flowing after READY, both after $1
  local ready
  ready=$(first_after "$work/client.err" "$1" 'status: READY') || return 1
  [ -n "$ready" ] || return 1
  [ "$(awk -v t="$ready" '$1 > t && /"type":"publication"/' "$work/client.out" | wc -l)" -ge "$2" ]
}
wait_until 15 "the client to be READY with feed publications flowing" flowing_since "$t_start" 2
open_before=$(metric belay_connections_open)
[ "$open_before" = 1 ] || die "expected 1 open server connection before the cut, got '$open_before'"

# ---- cut -----------------------------------------------------------------
# Link down (default): the client's end goes down, its routes go with it, and
# nothing at all is sent on the wire: no FIN, no RST. The established socket
# only sees its retransmissions fail to route (a soft error TCP keeps to
# itself); new connects fail at once with "network unreachable".
# nft: a drop rule on the client's veth, both directions; nothing is sent
# either, and new connects hang until the connect timeout.
cut_link() {
  case "$METHOD" in
    linkdown) ip -n "$NS_B" link set "$VETH_B" down ;;
    nft)
      ip netns exec "$NS_B" nft -f - <<EOF
table inet belay_netcut {
  chain input { type filter hook input priority -300; policy accept; iifname "$VETH_B" drop; }
  chain output { type filter hook output priority -300; policy accept; oifname "$VETH_B" drop; }
}
EOF
      ;;
  esac
}
restore_link() {
  case "$METHOD" in
    linkdown) ip -n "$NS_B" link set "$VETH_B" up ;;
    nft) ip netns exec "$NS_B" nft delete table inet belay_netcut ;;
  esac
}

detect_bound=$((2 * PING_MS + 2000))
reap_bound=$((PING_MS + PONG_TIMEOUT_MS + 2000))
if [ "$METHOD" = linkdown ]; then
  # Connects fail at once as unreachable: retried on unreachable_retry
  # (equal jitter 1..2 s), plus connect, welcome, resubscribe, one 500 ms tick.
  recover_bound=$((UNREACHABLE_RETRY_CAP_MS + 3000))
else
  # A connect in flight may hang until its connect timeout, then the
  # server-paced backoff (fast path <= 1 s, then equal jitter from 1 s).
  recover_bound=$((CONNECT_TIMEOUT_MS + 2000 + 1000))
fi

t_cut=$(now_us)
cut_link

# The status line coalesces changes that come together (the loss, and the
# dial that fails at once as unreachable right after it), so the reason is
# read from `belay connect`'s own line for each lost connection.
lost() {
  [ -n "$(first_after "$work/client.err" "$t_cut" 'status: not-ready')" ] &&
    [ -n "$(first_after "$work/client.err" "$t_cut" ' disconnected: ')" ]
}
wait_until $((detect_bound / 1000 + 2)) "the client to report the loss" lost
t_lost=$(first_after "$work/client.err" "$t_cut" 'status: not-ready')
t_why=$(first_after "$work/client.err" "$t_cut" ' disconnected: ')
loss_line=$(awk -v t="$t_why" '$1 == t && / disconnected: /' "$work/client.err" | head -n 1 | cut -d' ' -f2-)

reaped_by=""
reaped() {
  local z o
  z=$(metric belay_zombies_reaped_total)
  o=$(metric belay_connections_open)
  if [ "${z:-0}" -ge 1 ]; then reaped_by="belay_zombies_reaped_total=$z"; return 0; fi
  if [ -n "$o" ] && [ "$o" -lt "$open_before" ]; then reaped_by="belay_connections_open=$o"; return 0; fi
  return 1
}
wait_until $((reap_bound / 1000 + 2)) "the server to reap the dead connection" reaped
t_reaped=$(now_us)

# The status line too: `last=` may by now be a failed redial, but `lost=`
# (Status::last_loss) keeps why the session was lost. Read from the last
# status line before the restore, after every redial so far.
status_loss=$(awk -v t="$t_cut" '$1 > t && /status: / && / lost=/' "$work/client.err" | tail -n 1 | sed 's/.* lost=//')
status_last=$(awk -v t="$t_cut" '$1 > t && /status: / && / last=/' "$work/client.err" | tail -n 1 | sed 's/.* last=//; s/ lost=.*//')

# ---- restore -------------------------------------------------------------
t_restore=$(now_us)
restore_link
recovered() { flowing_since "$t_restore" 1; }
wait_until $((recover_bound / 1000 + 2)) "the client to be READY with publications after the restore" recovered
t_ready=$(first_after "$work/client.err" "$t_restore" 'status: READY')
t_pub=$(awk -v t="$t_ready" '$1 > t && /"type":"publication"/ { print $1; exit }' "$work/client.out")
open_after=$(metric belay_connections_open)
zombies=$(metric belay_zombies_reaped_total)

detect_ms=$(ms $((t_lost - t_cut)))
reap_ms=$(ms $((t_reaped - t_cut)))
ready_ms=$(ms $((t_ready - t_restore)))
pub_ms=$(ms $((t_pub - t_restore)))

verdict() { if [ "$1" -le "$2" ]; then echo ok; else echo FAIL; fi; }
echo
echo "netcut: method=$METHOD ping_interval=${PING_MS}ms pong_timeout=${PONG_TIMEOUT_MS}ms setup=$(ms $((t_cut - t_start)))ms"
printf '%-44s %9s %9s  %s\n' "measure" "measured" "bound" "result"
printf '%-44s %7sms %7sms  %s\n' \
  "cut -> client reports the loss" "$detect_ms" "$detect_bound" "$(verdict "$detect_ms" "$detect_bound")" \
  "cut -> server reaps the connection" "$reap_ms" "$reap_bound" "$(verdict "$reap_ms" "$reap_bound")" \
  "restore -> client READY" "$ready_ms" "$recover_bound" "$(verdict "$ready_ms" "$recover_bound")" \
  "restore -> first publication after READY" "$pub_ms" "$recover_bound" "$(verdict "$pub_ms" "$recover_bound")"
echo "client loss: $loss_line"
echo "client status before the restore: lost=$status_loss last=$status_last"
echo "server reap seen as: $reaped_by; after recovery: belay_connections_open=$open_after belay_zombies_reaped_total=$zombies"

ok=1
[ "$detect_ms" -le "$detect_bound" ] || { loud "the client took ${detect_ms} ms to report the loss (bound ${detect_bound} ms)"; ok=0; }
[ "$reap_ms" -le "$reap_bound" ] || { loud "the server took ${reap_ms} ms to reap (bound ${reap_bound} ms)"; ok=0; }
[ "$pub_ms" -le "$recover_bound" ] || { loud "the client took ${pub_ms} ms to recover (bound ${recover_bound} ms)"; ok=0; }
# No FIN, no RST: the loss must come from the heartbeat, not from a socket event.
case "$loss_line" in
  *heartbeat_timeout*) ;;
  *) loud "the client's loss was not a heartbeat timeout (a socket event leaked through the cut?): $loss_line"; ok=0 ;;
esac
case "$status_loss" in
  *heartbeat_timeout*) ;;
  *) loud "the status's last_loss was not the heartbeat timeout: lost=$status_loss (last=$status_last)"; ok=0 ;;
esac
[ "$open_after" = 1 ] || { loud "expected 1 server connection after recovery, got '$open_after'"; ok=0; }
[ "$ok" = 1 ] || exit 1
failed=0
echo "netcut: PASS"
