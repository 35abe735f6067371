#!/usr/bin/env python3
"""An application backend for Belay in Python, on the Belay SDK's backend helpers.

It does the three things a backend does with a standalone Belay server:

* issues connection tokens at GET /token?user=NAME
  (``belay.backend.connection_token``);
* answers the RPCs Belay forwards to it (POST /belay/rpc): here
  `orders.create`, which gives an order its id, and answers it;
* publishes through Belay's HTTP server API: every new order goes out on the
  `orders` channel, with an idempotency key (``belay.backend.Api``).

    pip install belay   # the SDK (crates/belay-python; scripts/python-sdk-check.sh builds its wheel)
    python3 backend.py --port 9000 --belay http://127.0.0.1:8080

The JWT secret and the API key come from BELAY_AUTH_JWT_SECRET and
BELAY_API_KEY, the same variables `belay serve --config` reads.
"""

import argparse
import hashlib
import json
import os
import sys
import uuid
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from belay.backend import Api, connection_token

SECRET = os.environ["BELAY_AUTH_JWT_SECRET"]
API_KEY = os.environ["BELAY_API_KEY"]

def order_id(user: str, key) -> str:
    """The order's id: from the client's idempotency key when it sent one
    (a retried call makes the same order, published once), else random. Never
    a counter in memory: a restarted backend would reuse the ids, and the
    publication keys made from them."""
    if key:
        return hashlib.sha256(f"{user}\0{key}".encode()).hexdigest()[:16]
    return uuid.uuid4().hex[:16]


class Handler(BaseHTTPRequestHandler):
    api: Api

    def answer(self, status: int, body: dict) -> None:
        text = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        url = urllib.parse.urlparse(self.path)
        if url.path != "/token":
            return self.answer(404, {"error": {"code": "not_found", "message": url.path}})
        user = urllib.parse.parse_qs(url.query).get("user", ["anonymous"])[0]
        # `channels`: what the user may subscribe to (without it: nothing, by default).
        self.answer(200, {"token": connection_token(SECRET, user, ttl=60, channels=["orders"])})

    def do_POST(self) -> None:  # noqa: N802
        if self.path != "/belay/rpc":
            return self.answer(404, {"error": {"code": "not_found", "message": self.path}})
        call = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if call["method"] != "orders.create":
            return self.answer(404, {"error": {"code": "unknown_method", "message": call["method"]}})
        number = order_id(call["user"], call.get("idempotency_key"))
        order = {"order": number, "item": call["params"], "user": call["user"]}
        # The publication's key is the order's: a retried publish goes out once.
        self.api.publish("orders", order, idempotency_key=f"order-{number}")
        self.answer(200, {"result": order})

    def log_message(self, *args) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--belay", default="http://127.0.0.1:8080", help="Belay's HTTP base URL")
    args = parser.parse_args()
    Handler.api = Api(args.belay, API_KEY)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"backend listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
