#!/usr/bin/env python3
"""A resident host in Python: an agent on a user's machine, reachable through
the Belay relay only while someone needs it (docs/HOSTS.md).

It serves two methods to the clients that call it (``$call``):

* ``files.list`` {"path": "..."}: the entries of a directory under its root;
* ``echo``: its params back.

    export BELAY_HOST_TOKEN=...   # a host token: JWT claim `host` names the host
    python3 agent.py ws://127.0.0.1:8080/ws --root ~/shared

It prints a line when its status says it woke or fell asleep (the status
changes at each heartbeat), and how many times it woke when it stops: SIGINT
or SIGTERM stops it cleanly (the session closes, every task ends).
"""

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from belay import HostError, host


def files(root: Path):
    async def files_list(params):
        wanted = (root / str((params or {}).get("path", "."))).resolve()
        if root not in (wanted, *wanted.parents):
            raise HostError("forbidden", "outside the shared directory")
        if not wanted.is_dir():
            raise HostError("not_found", f"no directory {params.get('path')!r}")
        return sorted(entry.name + ("/" if entry.is_dir() else "") for entry in wanted.iterdir())

    return files_list


async def echo(params):
    return params


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the relay's WebSocket URL")
    parser.add_argument("--root", default=".", help="the directory files.list shows")
    parser.add_argument("--interval", type=float, default=15.0, help="heartbeat (s) until the relay names one")
    parser.add_argument("--min-awake", type=float, default=60.0, help="least time up after a wake (s)")
    args = parser.parse_args()
    root = Path(args.root).resolve()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    agent = host.start(
        args.url,
        os.environ["BELAY_HOST_TOKEN"],
        {"files.list": files(root), "echo": echo},
        interval=args.interval,
        min_awake=args.min_awake,
    )
    print(f"agent serving {root} through {args.url}", flush=True)
    awake = None
    while not stop.is_set():
        status = agent.status()
        if status.awake != awake:
            awake = status.awake
            print("awake" if awake else "asleep", flush=True)
        try:
            await asyncio.wait_for(stop.wait(), 0.1)
        except asyncio.TimeoutError:
            pass
    await agent.stop()
    print(f"stopped (woken {agent.status().starts} times)", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    # Everything is stopped and flushed. Skip the interpreter's finalization:
    # the SDK's native threads can crash it (a known defect, docs/SDKS.md).
    sys.stdout.flush()
    os._exit(0)
