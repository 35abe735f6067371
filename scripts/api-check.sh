#!/usr/bin/env bash
# The HTTP server API against its OpenAPI document (spec/http-api.yaml),
# with schemathesis from PyPI and every check it has: no 5xx, every
# response (status, headers, body) matches the document, schema-valid
# requests are accepted and invalid ones rejected, the key is required.
#
#   scripts/api-check.sh              # 100 examples per operation, fixed seed
#   EXAMPLES=1000 scripts/api-check.sh
#
# 1. Installs schemathesis into a venv under target/api-venv (once).
# 2. Starts `belay serve --config` (the API key from BELAY_API_KEY) on a
#    free loopback port, its message budget lifted so the run is not rate
#    limited; stops it on exit.
# 3. Runs `st run` with the key, then prints `api-check: N passed, N failed`.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv=target/api-venv
out=target/api-check
python=${PYTHON:-python3}
examples=${EXAMPLES:-100}

if [ ! -x "$venv/bin/st" ]; then
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check schemathesis==4.32.5
fi

cargo build --quiet -p belay-cli
bin=${CARGO_TARGET_DIR:-target}/debug/belay
rm -rf "$out"
mkdir -p "$out"
port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$out/belay.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
[limits]
messages_per_sec = 100000.0
burst = 100000
TOML
key=api-check-key-0123456789
BELAY_API_KEY=$key "$bin" serve --config "$out/belay.toml" >"$out/server.out" 2>"$out/server.err" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    grep -q "listening on" "$out/server.err" && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$out/server.err" >&2; exit 1; }
    sleep 0.1
done

status=0
(cd "$out" && "$root/$venv/bin/st" run "$root/spec/http-api.yaml" \
    --url "http://127.0.0.1:$port" -H "Authorization: Bearer $key" \
    --checks all --max-examples "$examples" --seed 1 --no-color) >"$out/st.out" 2>&1 || status=$?
tail -25 "$out/st.out"
passed=$(sed -n 's/.* \([0-9]*\) generated, \([0-9]*\) passed.*/\2/p' "$out/st.out" | tail -1)
generated=$(sed -n 's/.* \([0-9]*\) generated.*/\1/p' "$out/st.out" | tail -1)
failed=$(( ${generated:-0} - ${passed:-0} ))
[ "$status" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
echo "api-check: ${passed:-0} passed, $failed failed"
exit "$status"
