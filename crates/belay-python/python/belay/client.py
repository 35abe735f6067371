"""The asyncio client: ``async with belay.connect(url) as client``."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Deque, Dict, Generator, Optional, Tuple, Union

from . import _native

__all__ = ["Client", "Status", "Publication", "Resync", "Refused", "Subscription", "connect"]

TokenProvider = Callable[[], Awaitable[str]]


@dataclass(frozen=True)
class Status:
    """What the client knows of its connection.

    ``ready`` is the three levels at once: ``transport`` (a socket is open),
    ``protocol`` (the session is welcomed and alive) and ``service`` (its
    subscriptions are confirmed). ``state``: ``idle``, ``connecting``,
    ``handshaking``, ``open``, ``waiting`` (a backoff), ``offline``, ``halted``
    or ``stopped``; ``halted``: why it stopped
    reconnecting (``auth_failed``, ``server_closed``…), or ``None``; ``why``: how
    the last connection ended, or ``None``.
    """

    ready: bool
    transport: bool
    protocol: bool
    service: bool
    state: str
    attempts: int
    transport_kind: str
    codec: str
    session: Optional[str]
    halted: Optional[str]
    why: Optional[str]


@dataclass(frozen=True)
class Publication:
    """The next publication of a channel, in offset order, with no gap and no duplicate."""

    data: Any
    epoch: str
    offset: int


@dataclass(frozen=True)
class Resync:
    """The server could not replay what was missed: resync the channel from a snapshot."""


@dataclass(frozen=True)
class Refused:
    """The server refused the subscription for good (``code``); nothing more will arrive."""

    code: str


Item = Union[Publication, Resync, Refused]


class Subscription:
    """A channel's items: ``async for item in client.subscribe(channel)``.

    The subscribe is sent when the subscription is first awaited or iterated
    (``feed = await client.subscribe(channel)`` sends it at once). It ends
    when the client closes. Hold on to it: a subscription that is
    garbage-collected unsubscribes, as :meth:`close` does.
    """

    def __init__(self, client: "_native.NativeClient", channel: str, token: Optional[str]) -> None:
        self._client = client
        self._channel = channel
        self._token = token
        self._native: Optional["_native.NativeSubscription"] = None
        self._ready: Deque[Tuple[str, str, str, int, str]] = deque()

    @property
    def channel(self) -> str:
        return self._channel

    async def _subscribed(self) -> "_native.NativeSubscription":
        if self._native is None:
            self._native = await self._client.subscribe(self._channel, token=self._token)
        return self._native

    def __await__(self) -> Generator[Any, None, "Subscription"]:
        async def subscribed() -> "Subscription":
            await self._subscribed()
            return self

        return subscribed().__await__()

    def __aiter__(self) -> AsyncIterator[Item]:
        return self

    async def __anext__(self) -> Item:
        if not self._ready:
            batch = await (await self._subscribed()).next()
            if batch is None:
                raise StopAsyncIteration
            self._ready.extend(batch)
        kind, data, epoch, offset, code = self._ready.popleft()
        if kind == "publication":
            return Publication(json.loads(data), epoch, offset)
        if kind == "resync":
            return Resync()
        return Refused(code)

    async def close(self) -> None:
        """Unsubscribe; an iteration waiting meanwhile ends."""
        if self._native is not None:
            await self._native.close()


class Client:
    """A Belay client: the Rust client (its core and its driver) behind a native extension.

    Made by :func:`connect`; it connects, reconnects, resumes its subscriptions
    and settles every request on its own.
    """

    def __init__(self, native: "_native.NativeClient") -> None:
        self._native = native

    async def ready(self) -> None:
        """Wait until the client is ready (raises ``ClientClosed`` if it closes first)."""
        await self._native.ready()

    def status(self) -> Status:
        """The status now."""
        return Status(**self._native.status())

    async def statuses(self) -> AsyncIterator[Status]:
        """Every status change from now on (``async for status in client.statuses()``);
        ends when the client is gone. One reader at a time."""
        while True:
            changed = await self._native.next_status()
            if changed is None:
                return
            yield Status(**changed)

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: Optional[float] = None,
        idempotency_key: Optional[str] = None,
    ) -> Any:
        """Call ``method`` with ``params``; its result.

        ``timeout`` in seconds (default: the client's request timeout, 10 s).
        With an ``idempotency_key``, a retry after ``Timeout`` or
        ``ConnectionClosed`` runs the method at most once on the server.
        """
        result = await self._native.request(
            method,
            json.dumps(params),
            timeout_ms=None if timeout is None else max(1, int(timeout * 1000)),
            idempotency_key=idempotency_key,
        )
        return json.loads(result)

    async def call_host(
        self, host: str, method: str, params: Any = None, *, timeout: float = 30.0
    ) -> Any:
        """Call resident host ``host``'s ``method`` through the relay (``$call``).

        The default deadline (30 s) outlasts the relay's default wake bound,
        so the first call after a quiet period waits for the host to wake.
        """
        return await self.request(
            "$call", {"host": host, "method": method, "params": params}, timeout=timeout
        )

    async def publish(self, channel: str, data: Any) -> Any:
        """Publish ``data`` to ``channel`` from the client (the token must allow it)."""
        return json.loads(await self._native.publish(channel, json.dumps(data)))

    def subscribe(self, channel: str, *, token: Optional[str] = None) -> Subscription:
        """Subscribe to ``channel``: ``async for item in client.subscribe(channel)``,
        or ``feed = await client.subscribe(channel)`` to subscribe at once and
        read later.

        ``token``: a subscription token, for channels whose namespace asks for
        one (``subscribe = "token"``; :func:`belay.backend.subscription_token`).
        """
        return Subscription(self._native, channel, token)

    def reconnect_now(self) -> None:
        """Drop the connection and dial again now (the network changed)."""
        self._native.reconnect_now()

    async def close(self) -> None:
        """Close the client; requests in flight fail ``ClientClosed``."""
        await self._native.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class _Connecting:
    """What :func:`connect` returns: awaitable, or an async context manager."""

    def __init__(self, url: str, options: Dict[str, Any]) -> None:
        self._url = url
        self._options = options
        self._client: Optional[Client] = None

    def _start(self) -> Client:
        return Client(_native.connect(self._url, **self._options))

    def __await__(self) -> Generator[Any, None, Client]:
        async def started() -> Client:
            return self._start()

        return started().__await__()

    async def __aenter__(self) -> Client:
        self._client = self._start()
        return self._client

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.close()


def connect(
    url: str,
    *,
    token: Optional[str] = None,
    token_provider: Optional[TokenProvider] = None,
    codec: str = "json",
    fallback: bool = True,
    retry_websocket_every: Optional[float] = None,
    connect_timeout: Optional[float] = None,
    request_timeout: Optional[float] = None,
    seed: Optional[int] = None,
) -> _Connecting:
    """Start a client of ``url`` (``ws://`` or ``wss://``).

    ``async with belay.connect(url) as client:`` closes it at the end;
    ``client = await belay.connect(url)`` leaves that to you. It starts at once
    and keeps connecting; ``await client.ready()`` waits for it.

    ``token_provider`` is an async function returning a token: asked before a
    dial when there is none, the server refused the last one or it is near its
    expiry, and on the open session before it expires (sent in-band). Raise
    ``belay.errors.Unauthorized`` from it to halt the client; anything else is
    retried after the backoff. ``codec``: ``"json"`` or ``"binary"``.
    ``fallback``: carry on over SSE + HTTP where WebSockets are blocked, trying
    a WebSocket again every ``retry_websocket_every`` seconds while on it.
    """

    def millis(seconds: Optional[float]) -> Optional[int]:
        return None if seconds is None else max(1, int(seconds * 1000))

    return _Connecting(
        url,
        {
            "token": token,
            "token_provider": token_provider,
            "codec": codec,
            "fallback": fallback,
            "retry_websocket_every_ms": millis(retry_websocket_every),
            "connect_timeout_ms": millis(connect_timeout),
            "request_timeout_ms": millis(request_timeout),
            "seed": seed,
        },
    )
