"""Resident hosts: reachable through the relay only while someone needs them.

A host beats the relay's control plane every interval; the answer's
``needed`` (tri-state) decides whether it holds a session: connected while a
client calls it or watches it, asleep otherwise (after ``min_awake`` since
the wake, the hysteresis). Calls are answered by async handlers. The
decisions (``IdleSleep``) and the session are belay-client's own
(docs/HOSTS.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, Optional, Tuple

from . import _native
from .errors import HostError

__all__ = ["Host", "HostStatus", "start"]

Handler = Callable[[Any], Awaitable[Any]]


@dataclass(frozen=True)
class HostStatus:
    """What the host is doing: its id (from its token, once the relay said),
    whether a session is up, the last heartbeat's ``needed`` (``None``: no
    answer, or none yet), and how many beats, wakes and sleeps so far."""

    id: Optional[str]
    awake: bool
    needed: Optional[bool]
    beats: int
    starts: int
    stops: int
    stopped: bool


def _wrap(handler: Handler) -> Callable[[str], Awaitable[Tuple[str, str, str]]]:
    async def call(params: str) -> Tuple[str, str, str]:
        try:
            result = await handler(json.loads(params))
        except HostError as error:
            return ("error", error.code, error.message)
        except Exception as error:  # the caller gets `internal`, the host goes on
            return ("error", "internal", f"{type(error).__name__}: {error}")
        return ("ok", json.dumps(result), "")

    return call


class Host:
    """A running host; :meth:`stop` it (or use ``async with``)."""

    def __init__(self, native: "_native.NativeHost") -> None:
        self._native = native

    def status(self) -> HostStatus:
        return HostStatus(*self._native.status())

    async def stop(self) -> None:
        """Close the session and end every task of the host."""
        await self._native.stop()

    async def __aenter__(self) -> "Host":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def start(
    url: str,
    token: str,
    methods: Dict[str, Handler],
    *,
    interval: float = 15.0,
    min_awake: float = 60.0,
) -> Host:
    """Start a host of the relay at ``url`` (its WebSocket URL; the heartbeat
    goes to ``hosts/heartbeat`` beside it) with its host token (JWT claim
    ``host``), serving ``methods``: each an async function of the call's
    params returning its result (raise :class:`belay.errors.HostError` to
    answer an error). ``interval``: the heartbeat until the relay names one;
    ``min_awake``: the least time up after a wake. Call from a running
    asyncio loop: the handlers run on it.
    """
    wrapped = {name: _wrap(handler) for name, handler in methods.items()}
    return Host(
        _native.start_host(
            url,
            token,
            wrapped,
            interval_ms=max(1, int(interval * 1000)),
            min_awake_ms=max(0, int(min_awake * 1000)),
        )
    )
