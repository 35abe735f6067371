#!/usr/bin/env python3
"""The Python SDK as a fault-lab agent (`belay lab --clients python`, docs/LAB.md).

    python agent.py --url ws://HOST:PORT/ws [--channel feed] [--request-every-ms 200]
        [--request-timeout-ms 1000] [--connect-timeout-ms 2000] [--seed N]
        [--fallback-retry-ms 1000] [--codec json|binary] [--token JWT] [--call-host ID]

Runs the lab's workload with `belay.connect` (subscribe to the channel; a
request every period whatever the state: `echo`, or with --call-host a `$call`
to that resident host's `echo`) and prints the lab's agent lines on stdout,
one JSON object each (`started`, `dial`, `ready`, `via`, `codec`, `lost`,
`pub`, `resync`, `sent`, `settled`), as clients/js/lab/agent.mjs does. EOF on
stdin closes the client and exits 0. Needs the `belay` package installed
(scripts/python-sdk-check.sh builds its wheel into a venv).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any, Dict, Optional, Set

import belay


def out(**line: Any) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def outcome(error: Optional[BaseException]) -> str:
    if error is None:
        return "ok"
    if isinstance(error, belay.NotReady):
        return "not_ready"
    if isinstance(error, belay.Timeout):
        return "timeout"
    if isinstance(error, (belay.ConnectionClosed, belay.ClientClosed)):
        return "closed"
    if isinstance(error, belay.ServerError) and error.code == "host_lost":
        return "host_lost"
    return "error"


def why(status: belay.Status) -> str:
    if not status.transport or not status.protocol:
        return status.why or "disconnected"
    if not status.service:
        return "service down"
    return "subscription not confirmed"


async def watch_status(client: belay.Client, report_codec: bool) -> None:
    attempts, ready = 0, False

    def seen(status: belay.Status) -> None:
        nonlocal attempts, ready
        for _ in range(attempts, status.attempts):
            out(ev="dial")
        attempts = max(attempts, status.attempts)
        if status.ready != ready:
            ready = status.ready
            if ready:
                out(ev="ready")
                out(ev="via", transport=status.transport_kind)
                if report_codec:
                    out(ev="codec", codec=status.codec)
            else:
                out(ev="lost", why=why(status))

    seen(client.status())
    async for status in client.statuses():
        seen(status)


async def watch_feed(client: belay.Client, channel: str) -> None:
    feed = await client.subscribe(channel)
    async for item in feed:
        if isinstance(item, belay.Publication):
            out(ev="pub", epoch=item.epoch, offset=item.offset)
        elif isinstance(item, belay.Resync):
            out(ev="resync")


async def stdin_closed() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--channel", default="feed")
    parser.add_argument("--request-every-ms", type=int, default=200)
    parser.add_argument("--request-timeout-ms", type=int, default=1000)
    parser.add_argument("--connect-timeout-ms", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--fallback-retry-ms", type=int, default=None)
    parser.add_argument("--codec", choices=["json", "binary"], default="json")
    parser.add_argument("--token", default=None)
    parser.add_argument("--call-host", default=None)
    args = parser.parse_args()

    client = await belay.connect(
        args.url,
        token=args.token,
        codec=args.codec,
        fallback=True,
        retry_websocket_every=None if args.fallback_retry_ms is None else args.fallback_retry_ms / 1000,
        connect_timeout=args.connect_timeout_ms / 1000,
        request_timeout=args.request_timeout_ms / 1000,
        seed=args.seed,
    )
    out(ev="started")
    tasks = [
        asyncio.ensure_future(watch_status(client, args.codec == "binary")),
        asyncio.ensure_future(watch_feed(client, args.channel)),
    ]
    requests: Set["asyncio.Task[None]"] = set()

    async def request(number: int) -> None:
        params: Dict[str, Any] = {"k": number}
        error: Optional[BaseException] = None
        try:
            if args.call_host is None:
                await client.request("echo", params, timeout=args.request_timeout_ms / 1000)
            else:
                await client.call_host(
                    args.call_host, "echo", params, timeout=args.request_timeout_ms / 1000
                )
        except belay.BelayError as failed:
            error = failed
        out(ev="settled", id=number, outcome=outcome(error))

    async def issue() -> None:
        number = 0
        while args.request_every_ms > 0:
            await asyncio.sleep(args.request_every_ms / 1000)
            number += 1
            out(ev="sent", id=number)
            task = asyncio.ensure_future(request(number))
            requests.add(task)
            task.add_done_callback(requests.discard)

    tasks.append(asyncio.ensure_future(issue()))
    await stdin_closed()
    for task in tasks:
        task.cancel()
    await client.close()
    await asyncio.gather(*requests, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main())
    # Closed and flushed. Skip the interpreter's finalization: the SDK's
    # native threads can crash it (a known defect, docs/SDKS.md).
    sys.stdout.flush()
    os._exit(0)
