"""The Python agent example (examples/python-agent) against a real relay."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import belay
from conftest import ROOT


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def test_the_agent_example_wakes_for_a_call_answers_and_stops_on_sigterm(jwt_relay):
    shared = Path(tempfile.mkdtemp())
    (shared / "notes.txt").write_text("hi")
    (shared / "photos").mkdir()
    agent = subprocess.Popen(
        [sys.executable, str(ROOT / "examples/python-agent/agent.py"), jwt_relay.url,
         "--root", str(shared), "--interval", "0.3", "--min-awake", "0.2"],
        env={**os.environ, "BELAY_HOST_TOKEN": jwt_relay.mint("pc-1", "--host", "pc-1")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        async def scenario():
            token = jwt_relay.mint("alice")
            async with belay.connect(jwt_relay.url, token=token) as client:
                await client.ready()
                # Known to the relay from the agent's first heartbeat on.
                for _ in range(100):
                    try:
                        listed = await client.call_host(
                            "pc-1", "files.list", {"path": "."}, timeout=15
                        )
                        break
                    except belay.ServerError as error:
                        assert error.code == "not_found", error
                        await asyncio.sleep(0.05)
                assert listed == ["notes.txt", "photos/"]
                try:
                    await client.call_host("pc-1", "files.list", {"path": ".."}, timeout=15)
                    raise AssertionError("outside the root is refused")
                except belay.ServerError as error:
                    assert error.code == "forbidden", error

        run(scenario())
        agent.send_signal(signal.SIGTERM)
        out, err = agent.communicate(timeout=15)
        assert agent.returncode == 0, f"{out}\n--- stderr ---\n{err}"

        last = out.splitlines()[-1]
        assert last.startswith("stopped (woken ") and not last.startswith("stopped (woken 0 "), out
    finally:
        if agent.poll() is None:
            agent.kill()
