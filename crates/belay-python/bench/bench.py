#!/usr/bin/env python3
"""What one Python client of the Belay SDK handles, against the `websockets`
library's bare floor in the same run (docs/BENCHMARKS.md, "Python SDK").

    python bench.py --belay target/release/belay [--seconds 3] [--runs 5] [--in-flight 64] [--publishers 2]

Four measurements, each `--runs` times for `--seconds`, medians printed:

* belay requests/s: one `belay.connect` client against `belay serve --demo`,
  `echo` requests with `--in-flight` outstanding at once;
* websockets echo/s: one `websockets` client against a `websockets` echo
  server (another process), the same JSON frames, the same in flight: the
  floor of a Python WebSocket round trip with no protocol at all;
* belay publications/s: one `belay.connect` client subscribed to a channel
  of a standalone `belay serve`, while `--publishers` other processes (2)
  publish to it as fast as the server takes (client publishes,
  `--in-flight` outstanding each); a subscriber cut as a slow consumer is
  reported. On 2 cores the publishers and the server share the machine with
  the subscriber, so this is what it received, a floor of what it handles;
* websockets pushes/s: one `websockets` client receiving what a `websockets`
  server pushes as fast as it can: the floor of receiving in Python.

Each process is started here and stopped at the end; everything is on
loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Coroutine, List

import belay
import websockets

HERE = Path(__file__).resolve()


def start_belay(exe: str, args: List[str]) -> "tuple[subprocess.Popen[str], str]":
    process = subprocess.Popen(
        [exe, "serve", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RUST_LOG": "warn"},
    )
    found: List[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            match = re.search(r"ws://([0-9.]+:[0-9]+)/ws", line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(15) or not found:
        process.kill()
        raise RuntimeError("belay serve did not start")
    return process, found[0]


async def pipelined(seconds: float, in_flight: int, one: Callable[[int], Coroutine[Any, Any, None]]) -> float:
    """Run `one(n)` with `in_flight` outstanding for `seconds`; completions per second."""
    done = 0
    stop_at = time.perf_counter() + seconds

    async def worker(w: int) -> None:
        nonlocal done
        n = w
        while time.perf_counter() < stop_at:
            await one(n)
            done += 1
            n += in_flight

    started = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(in_flight)))
    return done / (time.perf_counter() - started)


async def belay_requests(url: str, seconds: float, in_flight: int) -> float:
    async with belay.connect(url) as client:
        await client.ready()

        async def one(n: int) -> None:
            await client.request("echo", {"k": n})

        return await pipelined(seconds, in_flight, one)


async def websockets_echo(url: str, seconds: float, in_flight: int) -> float:
    async with websockets.connect(url, max_queue=None) as socket:
        done = 0
        stop_at = time.perf_counter() + seconds
        started = time.perf_counter()
        for n in range(in_flight):
            await socket.send(json.dumps({"type": "request", "id": n, "method": "echo", "params": {"k": n}}))
        n = in_flight
        sent = in_flight
        while True:
            json.loads(await socket.recv())
            done += 1
            if time.perf_counter() < stop_at:
                await socket.send(json.dumps({"type": "request", "id": n, "method": "echo", "params": {"k": n}}))
                n += 1
                sent += 1
            elif done == sent:
                break
        return done / (time.perf_counter() - started)


async def belay_publications(url: str, seconds: float, in_flight: int, publishers: int) -> float:
    started_publishers = [
        subprocess.Popen(
            [sys.executable, str(HERE), "--publish", url, "--in-flight", str(in_flight)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
        )
        for _ in range(publishers)
    ]
    try:
        async with belay.connect(url) as client:
            feed = await client.subscribe("bench")
            received = 0
            started = None
            async for item in feed:
                if not isinstance(item, belay.Publication):
                    continue
                if started is None:
                    started = time.perf_counter()
                    continue
                received += 1
                if time.perf_counter() - started >= seconds:
                    break
            assert started is not None
            rate = received / (time.perf_counter() - started)
            reconnects = client.status().attempts - 1
            await feed.close()
            if reconnects:
                print(f"  (the subscriber reconnected {reconnects} times: cut as a slow consumer)", flush=True)
            return rate
    finally:
        for publisher in started_publishers:
            assert publisher.stdin is not None
            publisher.stdin.close()
            publisher.wait(10)


async def publish_until_stdin_closes(url: str, in_flight: int) -> None:
    """The publishing process of `belay_publications`."""
    async with belay.connect(url) as client:
        await client.ready()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_reader(sys.stdin.fileno(), lambda: stop.set() if not sys.stdin.read(1) else None)

        async def worker(w: int) -> None:
            n = w
            while not stop.is_set():
                try:
                    await client.publish("bench", {"n": n})
                except belay.BelayError:
                    await asyncio.sleep(0.001)
                n += in_flight

        await asyncio.gather(*(worker(w) for w in range(in_flight)))


async def websockets_pushes(url: str, seconds: float) -> float:
    async with websockets.connect(url, max_queue=None) as socket:
        received = 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            json.loads(await socket.recv())
            received += 1
        return received / (time.perf_counter() - started)


def start_websockets_server(mode: str) -> "tuple[subprocess.Popen[str], str]":
    process = subprocess.Popen(
        [sys.executable, str(HERE), "--serve-websockets", mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    return process, line


async def serve_websockets(mode: str) -> None:
    """A bare `websockets` server: `echo` answers each frame with one
    response; `push` sends publication frames as fast as it can."""

    async def handler(socket: Any) -> None:
        if mode == "echo":
            async for frame in socket:
                request = json.loads(frame)
                await socket.send(json.dumps({"type": "response", "id": request["id"], "result": request["params"]}))
        else:
            n = 0
            try:
                while True:
                    n += 1
                    await socket.send(json.dumps({"type": "publication", "channel": "bench", "offset": n, "data": {"n": n}}))
            except websockets.ConnectionClosed:
                return

    async with websockets.serve(handler, "127.0.0.1", 0, max_queue=None) as server:
        port = list(server.sockets)[0].getsockname()[1]
        print(f"ws://127.0.0.1:{port}/", flush=True)
        loop = asyncio.get_running_loop()
        done = asyncio.Event()
        loop.add_reader(sys.stdin.fileno(), lambda: done.set() if not sys.stdin.read(1) else None)
        await done.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--belay", default="target/release/belay")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--publishers", type=int, default=2)
    parser.add_argument("--publish", help=argparse.SUPPRESS)
    parser.add_argument("--serve-websockets", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.publish:
        return asyncio.run(publish_until_stdin_closes(args.publish, args.in_flight))
    if args.serve_websockets:
        return asyncio.run(serve_websockets(args.serve_websockets))

    results: dict = {"belay requests/s": [], "websockets echo/s": [], "belay publications/s": [], "websockets pushes/s": []}
    with tempfile.TemporaryDirectory() as directory:
        config = Path(directory) / "bench.toml"
        config.write_text(
            # One client is measured: the per-connection and per-IP budgets
            # that protect a server from a flooding peer are lifted.
            '[server]\nlisten = "127.0.0.1:0"\n\n'
            '[limits]\nmessages_per_sec = 1000000.0\nburst = 1000000\nmax_in_flight = 1024\nwork_rate_per_ip = 0\n\n'
            '[[namespace]]\npattern = "bench"\nsubscribe = "anyone"\npublish = "anyone"\n'
        )
        demo, demo_addr = start_belay(args.belay, ["--demo", "--feed-every-ms", "60000", "--config", str(config)])
        plain, plain_addr = start_belay(args.belay, ["--config", str(config)])
        echo, echo_url = start_websockets_server("echo")
        push, push_url = start_websockets_server("push")
        try:
            for run in range(args.runs):
                r = asyncio.run(belay_requests(f"ws://{demo_addr}/ws", args.seconds, args.in_flight))
                results["belay requests/s"].append(r)
                e = asyncio.run(websockets_echo(echo_url, args.seconds, args.in_flight))
                results["websockets echo/s"].append(e)
                p = asyncio.run(belay_publications(f"ws://{plain_addr}/ws", args.seconds, args.in_flight, args.publishers))
                results["belay publications/s"].append(p)
                w = asyncio.run(websockets_pushes(push_url, args.seconds))
                results["websockets pushes/s"].append(w)
                print(f"run {run + 1}: requests {r:,.0f}/s, ws echo {e:,.0f}/s, publications {p:,.0f}/s, ws pushes {w:,.0f}/s", flush=True)
        finally:
            for process in (demo, plain):
                process.kill()
            for server in (echo, push):
                assert server.stdin is not None
                server.stdin.close()
                server.wait(10)
    medians = {name: statistics.median(values) for name, values in results.items()}
    for name, value in medians.items():
        print(f"{name}: median {value:,.0f} over {args.runs} runs ({', '.join(f'{v:,.0f}' for v in results[name])})")
    print(f"requests / websockets echo: {medians['belay requests/s'] / medians['websockets echo/s']:.2f}x")
    print(f"publications / websockets pushes: {medians['belay publications/s'] / medians['websockets pushes/s']:.2f}x")


if __name__ == "__main__":
    main()
