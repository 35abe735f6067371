#!/usr/bin/env python3
"""An application backend for Belay in Python, standard library only.

It does the three things a backend does with a standalone Belay server:

* issues connection tokens (HS256 JWTs) at GET /token?user=NAME;
* answers the RPCs Belay forwards to it (POST /belay/rpc): here
  `orders.create`, which gives an order its id, and answers it;
* publishes through Belay's HTTP server API: every new order goes out on the
  `orders` channel (POST {belay}/api/publish, with an idempotency key).

    python3 backend.py --port 9000 --belay http://127.0.0.1:8080

The JWT secret and the API key come from BELAY_AUTH_JWT_SECRET and
BELAY_API_KEY, the same variables `belay serve --config` reads.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import sys
import time
import uuid
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ["BELAY_AUTH_JWT_SECRET"].encode()
API_KEY = os.environ["BELAY_API_KEY"]

def order_id(user: str, key) -> str:
    """The order's id: from the client's idempotency key when it sent one
    (a retried call makes the same order, published once), else random. Never
    a counter in memory: a restarted backend would reuse the ids, and the
    publication keys made from them."""
    if key:
        return hashlib.sha256(f"{user}\0{key}".encode()).hexdigest()[:16]
    return uuid.uuid4().hex[:16]



def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(user: str, lifetime_s: int = 60) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    # `channels`: what the user may subscribe to (without it: nothing, by default).
    claims = {"sub": user, "exp": int(time.time()) + lifetime_s, "channels": ["orders"]}
    claims = b64url(json.dumps(claims).encode())
    signing_input = f"{header}.{claims}".encode()
    signature = b64url(hmac.new(SECRET, signing_input, hashlib.sha256).digest())
    return f"{header}.{claims}.{signature}"


def publish(belay: str, channel: str, data, key: str) -> dict:
    body = json.dumps({"channel": channel, "data": data, "idempotency_key": key}).encode()
    request = urllib.request.Request(
        f"{belay}/api/publish",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        return json.load(answer)


class Handler(BaseHTTPRequestHandler):
    belay = ""

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
        self.answer(200, {"token": token(user)})

    def do_POST(self) -> None:  # noqa: N802
        if self.path != "/belay/rpc":
            return self.answer(404, {"error": {"code": "not_found", "message": self.path}})
        call = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if call["method"] != "orders.create":
            return self.answer(404, {"error": {"code": "unknown_method", "message": call["method"]}})
        number = order_id(call["user"], call.get("idempotency_key"))
        order = {"order": number, "item": call["params"], "user": call["user"]}
        # The publication's key is the order's: a retried publish goes out once.
        publish(self.belay, "orders", order, key=f"order-{number}")
        self.answer(200, {"result": order})

    def log_message(self, *args) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--belay", default="http://127.0.0.1:8080", help="Belay's HTTP base URL")
    args = parser.parse_args()
    Handler.belay = args.belay.rstrip("/")
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"backend listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
