"""Real relays for the tests: `belay serve` processes on port 0 (the binary
at $BELAY_BIN, default target/debug/belay), stopped after each test."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[3]
BELAY = os.environ.get("BELAY_BIN", str(ROOT / "target" / "debug" / "belay"))
SECRET = "python-sdk-tests-secret-0123456789"


class Relay:
    """A `belay serve` process; `url` is its WebSocket endpoint."""

    def __init__(self, args: List[str]) -> None:
        self.process = subprocess.Popen(
            [BELAY, "serve", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "RUST_LOG": "warn"},
        )
        found = threading.Event()
        self.address: Optional[str] = None

        def read() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                match = re.search(r"ws://([0-9.]+:[0-9]+)/ws", line)
                if match and self.address is None:
                    self.address = match.group(1)
                    found.set()
            found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(15) or self.address is None:
            self.stop()
            raise RuntimeError(f"{BELAY} serve {args} did not say where it listens")
        self.url = f"ws://{self.address}/ws"

    def post(self, path: str, body: str) -> int:
        request = urllib.request.Request(
            f"http://{self.address}{path}",
            data=body.encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


@pytest.fixture
def demo() -> Iterator[Relay]:
    """`belay serve --demo` (echo, the `feed` channel every 50 ms, the fault panel)."""
    relay = Relay(
        ["--demo", "--listen", "127.0.0.1:0", "--feed-every-ms", "50", "--ping-interval-ms", "1000"]
    )
    yield relay
    relay.stop()


class JwtRelay(Relay):
    """`belay serve --demo` checking JWTs (HS256), with short host timings."""

    def __init__(self, directory: str) -> None:
        self.config = Path(directory) / "relay.toml"
        self.config.write_text(
            '[server]\nlisten = "127.0.0.1:0"\n\n'
            "[hosts]\nheartbeat_interval_ms = 300\nconnect_allowance_ms = 2000\ngrace_ms = 500\n\n"
            f'[auth]\nmode = "jwt"\njwt_secret = "{SECRET}"\njwt_missing_channels = "any"\n'
        )
        super().__init__(["--demo", "--config", str(self.config)])

    def mint(self, user: str, *extra: str) -> str:
        """A token from `belay token mint` against this relay's config."""
        out = subprocess.run(
            [BELAY, "token", "mint", "--config", str(self.config), "--user", user, *extra],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()


@pytest.fixture
def jwt_relay() -> Iterator[JwtRelay]:
    with tempfile.TemporaryDirectory() as directory:
        relay = JwtRelay(directory)
        yield relay
        relay.stop()


API_KEY = "python-sdk-tests-api-key-0123456789"


class ApiRelay(Relay):
    """A standalone `belay serve` (no demo): JWT auth, the HTTP API under its
    key, presence on `room:*`, subscription tokens on `private:*`."""

    def __init__(self, directory: str) -> None:
        config = Path(directory) / "relay.toml"
        config.write_text(
            '[server]\nlisten = "127.0.0.1:0"\n\n'
            f'[auth]\nmode = "jwt"\njwt_secret = "{SECRET}"\n\n'
            f'[api]\nkey = "{API_KEY}"\n\n'
            '[[namespace]]\npattern = "room:*"\npresence = true\n\n'
            '[[namespace]]\npattern = "private:*"\nsubscribe = "token"\n'
        )
        super().__init__(["--config", str(config)])
        self.http = f"http://{self.address}"


@pytest.fixture
def api_relay() -> Iterator[ApiRelay]:
    with tempfile.TemporaryDirectory() as directory:
        relay = ApiRelay(directory)
        yield relay
        relay.stop()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave without the interpreter's finalization: the SDK's native
    threads can crash it after every test has passed (a known defect,
    docs/SDKS.md), which would turn a passing run into a failing exit."""
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(config._belay_exitstatus if hasattr(config, "_belay_exitstatus") else 0)  # type: ignore[attr-defined]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config._belay_exitstatus = int(exitstatus)  # type: ignore[attr-defined]
