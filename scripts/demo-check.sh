#!/usr/bin/env bash
# Start `belay serve --demo` on a loopback port and drive its page in headless
# Chromium (scripts/check-demo-page.mjs): the page's Belay browser client
# becomes ready, gets feed publications, answers the echo button, shows
# service loss and recovery, notices a frozen server (in about 2 s: the demo
# pings every second); no console errors; screenshots in target/. Then the
# admin console (scripts/check-admin-page.mjs) on a second server with an
# admin token: login, live charts, lookup, channel, test message,
# disconnect, drain (the server exits 0).
# Installs what it needs on a fresh machine: Debian's chromium, playwright-core.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  echo "installing chromium (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq chromium >/dev/null
fi
(cd scripts && npm ci --silent --no-audit --no-fund)

cargo build -q -p belay-cli
# The page's address a `belay serve` logging to $1 prints, within 10 s.
url_in() {
  local url=""
  for _ in $(seq 1 100); do
    url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$1" | head -n 1 || true)
    [ -n "$url" ] && break
    sleep 0.1
  done
  if [ -z "$url" ]; then
    echo "the server did not start:" >&2
    cat "$1" >&2
    return 1
  fi
  echo "$url"
}

log=$(mktemp)
admin_log=$(mktemp)
"${CARGO_TARGET_DIR:-target}/debug/belay" serve --demo --listen 127.0.0.1:0 >"$log" 2>&1 &
server=$!
admin_server=""
trap 'kill "$server" $admin_server 2>/dev/null || true; rm -f "$log" "$admin_log"' EXIT
url=$(url_in "$log")
mkdir -p target
node scripts/check-demo-page.mjs "$url" target/demo-page.png

# The admin web UI, on a server with an admin token (the token goes to the
# check in the environment, never in a URL).
token="admin-check-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
"${CARGO_TARGET_DIR:-target}/debug/belay" serve --demo --admin-token "$token" --listen 127.0.0.1:0 >"$admin_log" 2>&1 &
admin_server=$!
admin_url=$(url_in "$admin_log")
ADMIN_TOKEN="$token" node scripts/check-admin-page.mjs "$admin_url" target/admin-page.png
# The drain from the console ends the server: it exits 0 within the demo's drain.
for _ in $(seq 1 100); do
  kill -0 "$admin_server" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$admin_server" 2>/dev/null; then
  echo "the server did not exit after the console's drain" >&2
  exit 1
fi
wait "$admin_server"
echo "admin check: the server drained from the console and exited 0"
