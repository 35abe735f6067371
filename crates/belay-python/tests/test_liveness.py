"""A silent death, noticed within the bound: the lab's fault proxy
(`belay proxy`) holds every byte in both directions (`blackhole`: no FIN, no
RST), as a dead route does; the client's watchdog (two server pings: 2 s
with the relay's 1 s pings) says so, and it is ready again once the path
is back."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import threading
import urllib.request

import belay
from conftest import BELAY

# The watchdog's 2 s, and room for a loaded machine.
BOUND = 4.0


class FaultProxy:
    """`belay proxy` with its admin API; one proxy in front of `upstream`."""

    def __init__(self, upstream: str) -> None:
        self.process = subprocess.Popen(
            [BELAY, "proxy", "--admin", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        found = threading.Event()
        self.admin = ""

        def read() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                match = re.search(r"admin: (http://[0-9.]+:[0-9]+)/", line)
                if match and not self.admin:
                    self.admin = match.group(1)
                    found.set()
            found.set()

        threading.Thread(target=read, daemon=True).start()
        assert found.wait(15) and self.admin, "belay proxy did not say where its admin API is"
        made = self.call("POST", "/proxies", {"name": "relay", "upstream": upstream})
        self.listen = made["listen"]

    def call(self, method: str, path: str, body: object = None) -> dict:
        request = urllib.request.Request(
            self.admin + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            text = answer.read()
            return json.loads(text) if text else {}

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)


def test_a_blackholed_path_is_noticed_within_the_bound_and_recovered(demo):
    proxy = FaultProxy(demo.address)
    try:

        async def scenario():
            loop = asyncio.get_running_loop()
            async with belay.connect(f"ws://{proxy.listen}/ws") as client:
                await asyncio.wait_for(client.ready(), 10)
                proxy.call("POST", "/proxies/relay/toxics", {"type": "blackhole"})
                cut = loop.time()
                async for status in client.statuses():
                    if not status.ready:
                        break
                noticed = loop.time() - cut
                assert noticed < BOUND, f"noticed after {noticed:.2f} s"
                proxy.call("DELETE", "/proxies/relay/toxics")
                await asyncio.wait_for(client.ready(), 15)
                assert await client.request("echo", "back") == "back"

        asyncio.run(asyncio.wait_for(scenario(), 60))
    finally:
        proxy.stop()
