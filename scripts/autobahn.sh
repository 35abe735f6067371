#!/usr/bin/env bash
# Autobahn conformance of belay-server's WebSocket layer, with the `kosoku`
# runner from PyPI (a native driver of the Autobahn TestSuite case files).
#
#   scripts/autobahn.sh
#
# 1. Installs kosoku into a venv under target/autobahn-venv (once; needs
#    Python >= 3.10, `PYTHON=...` to choose the interpreter).
# 2. Builds and starts crates/belay-server/examples/echo_server.rs on
#    127.0.0.1 with a port the OS picks. It serves the conformance echo route
#    (/echo: the same upgrade and codec as /ws, echoing every message) and a
#    default Belay server (/ws) on that port.
# 3. Runs Autobahn cases 1-10 against ws://ADDR/echo (12.* and 13.*, the
#    permessage-deflate cases, are not run: the server does not negotiate
#    compression). Reports (index.html, index.json, one file per case) go to
#    target/autobahn/echo/.
# 4. Runs the cases that need no echo (pings, reserved bits and opcodes,
#    close frames) against the Belay session route ws://ADDR/ws, reports in
#    target/autobahn/ws/. This confirms the upgrade every Belay session
#    goes through answers 101 for every case; the session's outcomes are
#    printed for information only (the Belay protocol closes a session whose
#    first message is not `connect`, so echo cases cannot apply there).
#
# How outcomes are classified (per case, from kosoku's `behavior` verdict on
# the message exchange and `behaviorClose` verdict on the closing handshake):
#   passed  behavior OK, NON-STRICT (diverges from a SHOULD) or INFORMATIONAL
#           (the spec leaves it open), and behaviorClose OK or INFORMATIONAL;
#           this is kosoku's own `passed`.
#   failed  anything else: behavior FAILED, ERROR or UNIMPLEMENTED (nothing in
#           cases 1-10 is optional), or behaviorClose FAILED, UNCLEAN,
#           WRONG CODE or FAILED BY CLIENT.
# The script exits non-zero if any case of the echo run failed (or kosoku
# itself reported a failure, or a /ws handshake was not answered with 101).
# Its last line is `autobahn: N passed, N failed`.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=target/autobahn
venv=target/autobahn-venv
python=${PYTHON:-python3}
start=$(date +%s)

if [ ! -x "$venv/bin/kosoku" ]; then
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
        echo "autobahn: kosoku needs Python >= 3.10 ($python is $("$python" --version 2>&1))" >&2
        exit 2
    }
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check kosoku==0.1.0
fi

cargo build --quiet -p belay-server --example echo_server
bin_dir=${CARGO_TARGET_DIR:-target}/debug/examples

rm -rf "$out"
mkdir -p "$out"
"$bin_dir"/echo_server 127.0.0.1:0 >"$out/server.out" 2>"$out/server.err" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT

addr=
for _ in $(seq 100); do
    addr=$(sed -n 's|^listening on ws://||p' "$out/server.out")
    [ -n "$addr" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$addr" ]; then
    echo "autobahn: the echo server did not start:" >&2
    cat "$out/server.err" >&2
    exit 1
fi
echo "autobahn: echo server on $addr (pid $server_pid)"

cases=()
# Autobahn numbers its groups 1-7, 9, 10, 12, 13 (there is no 8.* or 11.*).
for major in 1 2 3 4 5 6 7 9 10; do cases+=(-i "$major.*"); done
kosoku_status=0
"$venv/bin/kosoku" "ws://$addr/echo" "${cases[@]}" -x '12.*' -x '13.*' \
    -o "$out/echo" >"$out/echo.log" 2>&1 || kosoku_status=$?

ws_status=0
"$venv/bin/kosoku" "ws://$addr/ws" -i '2.*' -i '3.*' -i '4.*' -i '7.3.*' -i '7.5.1' \
    -i '7.7.*' -i '7.9.*' -o "$out/ws" >"$out/ws.log" 2>&1 || ws_status=$?

kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
trap - EXIT

"$venv/bin/python" - "$out" "$kosoku_status" "$(($(date +%s) - start))" <<'EOF'
import collections
import glob
import json
import os
import sys

out, kosoku_status, elapsed = sys.argv[1], int(sys.argv[2]), sys.argv[3]
PASS_BEHAVIOR = {"OK", "NON-STRICT", "INFORMATIONAL"}
PASS_CLOSE = {"OK", "INFORMATIONAL"}


def key(case_id):
    return [int(p) for p in case_id.split(".")]


def load(run):
    path = os.path.join(out, run, "index.json")
    if not os.path.exists(path):
        return {}
    index = json.load(open(path))
    return next(iter(index.values()), {}) if index else {}


def summarise(run, cases, not_passed="not passed"):
    outcomes = collections.Counter()
    failed = []
    for case_id, case in sorted(cases.items(), key=lambda kv: key(kv[0])):
        behavior, close = case["behavior"], case["behaviorClose"]
        outcomes[behavior if close in PASS_CLOSE else f"{behavior}/close {close}"] += 1
        if behavior not in PASS_BEHAVIOR or close not in PASS_CLOSE:
            failed.append(f"{case_id} ({behavior}, close {close})")
    counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
    print(f"autobahn {run}: {len(cases)} cases: {counts}")
    notable = [
        f"{cid} {c['behavior']}" for cid, c in sorted(cases.items(), key=lambda kv: key(kv[0]))
        if c["behavior"] in ("NON-STRICT", "INFORMATIONAL")
    ]
    if notable:
        print(f"  non-strict/informational: {', '.join(notable)}")
    if failed:
        print(f"  {not_passed}: {', '.join(failed)}")
    return failed


echo = load("echo")
failed = summarise("echo (cases 1-10 on /echo)", echo)
if not echo:
    print("autobahn: no report from the echo run; see target/autobahn/echo.log")
if kosoku_status != 0 and not failed:
    print(f"autobahn: kosoku exited {kosoku_status}; see target/autobahn/echo.log")
    failed.append("kosoku")

ws = load("ws")
summarise("ws (no-echo cases on the Belay route /ws)", ws, "not passed (informational for /ws)")
not_101 = []
for report in sorted(glob.glob(os.path.join(out, "ws", "*_case_*.json"))):
    case = json.load(open(report))
    if not case.get("httpResponse", "").startswith("HTTP/1.1 101"):
        not_101.append(case["id"])
if not ws or not_101:
    print(f"autobahn ws: upgrade not answered with 101 in: {', '.join(not_101) or 'every case'}")
    failed.append("ws handshake")
else:
    print(f"autobahn ws: all {len(ws)} upgrades of /ws answered 101 Switching Protocols")

print(f"autobahn: reports in {out}/echo/index.html and {out}/ws/index.html ({elapsed} s)")
passed = sum(
    1 for c in echo.values()
    if c["behavior"] in PASS_BEHAVIOR and c["behaviorClose"] in PASS_CLOSE
)
print(f"autobahn: {passed} passed, {len(echo) - passed} failed")
sys.exit(1 if failed else 0)
EOF
