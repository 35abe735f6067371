"""Helpers for an application's backend: tokens, and Belay's HTTP server API.

Tokens are signed by the native extension with the library and algorithms
the standalone server checks them with (``[auth]``, docs/STANDALONE.md):
HS256 with the shared secret, RS256 or ES256 with the private key (PEM).

:class:`Api` calls the HTTP server API (spec/http-api.yaml) with the API key;
:class:`AsyncApi` is the same for asyncio code. Standard library only.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _native
from .errors import BelayError

__all__ = [
    "connection_token",
    "subscription_token",
    "Api",
    "AsyncApi",
    "ApiError",
    "Published",
    "HistoryPage",
    "HistoryItem",
    "Member",
    "ChannelCount",
    "ChannelsPage",
]

Key = Union[str, bytes]


def _key(key: Key) -> bytes:
    return key.encode() if isinstance(key, str) else key


def _sign(algorithm: str, key: Key, claims: Dict[str, Any]) -> str:
    return _native.sign_jwt(algorithm, _key(key), json.dumps(claims))


def _base(user: str, ttl: float, audience: Optional[str], issuer: Optional[str]) -> Dict[str, Any]:
    now = int(time.time())
    claims: Dict[str, Any] = {"sub": user, "iat": now, "exp": now + max(1, int(ttl))}
    if audience is not None:
        claims["aud"] = audience
    if issuer is not None:
        claims["iss"] = issuer
    return claims


def connection_token(
    key: Key,
    user: str,
    *,
    ttl: float = 3600,
    channels: Optional[Sequence[str]] = None,
    publish: Optional[Sequence[str]] = None,
    info: Any = None,
    host: Optional[str] = None,
    audience: Optional[str] = None,
    issuer: Optional[str] = None,
    algorithm: str = "HS256",
) -> str:
    """A connection token of ``user``, valid ``ttl`` seconds.

    ``channels``: the patterns it may subscribe to (``"chat:*"``); ``publish``:
    those it may publish to from the client; ``info``: what other clients are
    told about the user (presence); ``host``: the resident host it is (only
    that host may hold its calls and answer them); ``audience`` and
    ``issuer`` when the server checks them.
    """
    claims = _base(user, ttl, audience, issuer)
    if channels is not None:
        claims["channels"] = list(channels)
    if publish is not None:
        claims["publish"] = list(publish)
    if info is not None:
        claims["info"] = info
    if host is not None:
        claims["host"] = host
    return _sign(algorithm, key, claims)


def subscription_token(
    key: Key,
    user: str,
    channel: str,
    *,
    ttl: float = 3600,
    info: Any = None,
    audience: Optional[str] = None,
    issuer: Optional[str] = None,
    algorithm: str = "HS256",
) -> str:
    """A subscription token: ``user`` may subscribe to ``channel`` (namespaces
    with ``subscribe = "token"``), for ``ttl`` seconds."""
    claims = _base(user, ttl, audience, issuer)
    claims["channel"] = channel
    if info is not None:
        claims["info"] = info
    return _sign(algorithm, key, claims)


class ApiError(BelayError):
    """The API answered an error: its HTTP ``status``, its ``code``
    (``bad_request``, ``unauthorized``, ``epoch_changed``…) and message; for a
    history position conflict, the channel's ``position`` now."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        position: Optional[Tuple[str, int]] = None,
    ) -> None:
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.position = position


@dataclass(frozen=True)
class Published:
    """Where a publication went: its channel, epoch and offset."""

    channel: str
    epoch: str
    offset: int


@dataclass(frozen=True)
class HistoryItem:
    offset: int
    data: Any


@dataclass(frozen=True)
class HistoryPage:
    """Publications of a channel, and its position now (``epoch``, ``offset``)."""

    publications: List[HistoryItem]
    epoch: str
    offset: int
    truncated: bool


@dataclass(frozen=True)
class Member:
    """A subscriber of a presence channel: its session, its user, its ``info``."""

    client: str
    user: str
    info: Any = None


@dataclass(frozen=True)
class ChannelCount:
    channel: str
    subscribers: int


@dataclass(frozen=True)
class ChannelsPage:
    """Channels with subscribers; ``truncated``: ask again with ``after`` = the last name."""

    channels: List[ChannelCount]
    truncated: bool
    unanswered: List[Dict[str, str]] = field(default_factory=list)


def _keyed(body: Dict[str, Any], idempotency_key: Optional[str]) -> Dict[str, Any]:
    """`body` with its `idempotency_key`, when there is one."""
    if idempotency_key is not None:
        body["idempotency_key"] = idempotency_key
    return body


def _published(body: Dict[str, Any]) -> Published:
    return Published(body["channel"], body["epoch"], body["offset"])


class Api:
    """Belay's HTTP server API at ``base_url`` (``http://host:port``), with the API key.

    Each call raises :class:`ApiError` for an error answer, and ``OSError``
    when the server cannot be reached.
    """

    def __init__(self, base_url: str, key: str, *, timeout: float = 5.0) -> None:
        self._base = base_url.rstrip("/")
        self._key = key
        self._timeout = timeout

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self._base + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self._key}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as answer:
            try:
                error = json.load(answer)
            except ValueError:
                raise ApiError(answer.code, "unknown", answer.reason) from None
            finally:
                answer.close()
            body_error = error.get("error", {})
            position = error.get("position")
            raise ApiError(
                answer.code,
                body_error.get("code", "unknown"),
                body_error.get("message", ""),
                None if position is None else (position["epoch"], position["offset"]),
            ) from None

    def publish(self, channel: str, data: Any, *, idempotency_key: Optional[str] = None) -> Published:
        """Publish ``data`` to ``channel``. With an ``idempotency_key``, a retry
        (after a timeout, say) publishes once and answers the first outcome."""
        body = _keyed({"channel": channel, "data": data}, idempotency_key)
        return _published(self._call("POST", "/api/publish", body))

    def user_publish(self, user: str, data: Any, *, idempotency_key: Optional[str] = None) -> Published:
        """Publish to user ``user``'s own channel (``#`` + the user)."""
        body = _keyed({"user": user, "data": data}, idempotency_key)
        return _published(self._call("POST", "/api/user_publish", body))

    def broadcast(self, channels: Sequence[str], data: Any) -> List[Union[Published, ApiError]]:
        """Publish ``data`` to each of ``channels``: each channel's outcome, in order."""
        results = self._call("POST", "/api/broadcast", {"channels": list(channels), "data": data})
        out: List[Union[Published, ApiError]] = []
        for result in results["results"]:
            if "error" in result:
                out.append(ApiError(200, result["error"]["code"], result["error"]["message"]))
            else:
                out.append(_published(result))
        return out

    def disconnect(self, user: str, reason: Optional[str] = None) -> int:
        """Close every connection of ``user``; how many there were."""
        body: Dict[str, Any] = {"user": user}
        if reason is not None:
            body["reason"] = reason
        return int(self._call("POST", "/api/disconnect", body)["disconnected"])

    def presence(self, channel: str) -> List[Member]:
        """The subscribers of a presence channel."""
        members = self._call("POST", "/api/presence", {"channel": channel})["members"]
        return [Member(m["client"], m["user"], m.get("info")) for m in members]

    def history(
        self,
        channel: str,
        *,
        limit: Optional[int] = None,
        since: Optional[Tuple[str, int]] = None,
        reverse: bool = False,
    ) -> HistoryPage:
        """Publications of ``channel``: at most ``limit`` (0: the position only),
        after position ``since`` (``(epoch, offset)``; before it with ``reverse``)."""
        body: Dict[str, Any] = {"channel": channel}
        if limit is not None:
            body["limit"] = limit
        if since is not None:
            body["since"] = {"epoch": since[0], "offset": since[1]}
        if reverse:
            body["reverse"] = True
        page = self._call("POST", "/api/history", body)
        return HistoryPage(
            [HistoryItem(p["offset"], p["data"]) for p in page["publications"]],
            page["epoch"],
            page["offset"],
            page["truncated"],
        )

    def channels(self, pattern: str = "*", *, after: Optional[str] = None) -> ChannelsPage:
        """The channels with subscribers matching ``pattern`` (``chat:*``)."""
        query = {"pattern": pattern}
        if after is not None:
            query["after"] = after
        page = self._call("GET", "/api/channels?" + urllib.parse.urlencode(query))
        return ChannelsPage(
            [ChannelCount(c["channel"], c["subscribers"]) for c in page["channels"]],
            page["truncated"],
            page.get("unanswered", []),
        )

    def stats(self) -> Dict[str, Any]:
        """This node's figures (every node's, in a cluster)."""
        return dict(self._call("GET", "/api/stats"))

    def info(self) -> Dict[str, Any]:
        """This node's lifecycle, uptime and connections."""
        return dict(self._call("GET", "/api/info"))


class AsyncApi:
    """:class:`Api` for asyncio code: each call runs in a worker thread."""

    def __init__(self, base_url: str, key: str, *, timeout: float = 5.0) -> None:
        self._api = Api(base_url, key, timeout=timeout)

    async def publish(self, channel: str, data: Any, *, idempotency_key: Optional[str] = None) -> Published:
        return await asyncio.to_thread(self._api.publish, channel, data, idempotency_key=idempotency_key)

    async def user_publish(self, user: str, data: Any, *, idempotency_key: Optional[str] = None) -> Published:
        return await asyncio.to_thread(self._api.user_publish, user, data, idempotency_key=idempotency_key)

    async def broadcast(self, channels: Sequence[str], data: Any) -> List[Union[Published, ApiError]]:
        return await asyncio.to_thread(self._api.broadcast, channels, data)

    async def disconnect(self, user: str, reason: Optional[str] = None) -> int:
        return await asyncio.to_thread(self._api.disconnect, user, reason)

    async def presence(self, channel: str) -> List[Member]:
        return await asyncio.to_thread(self._api.presence, channel)

    async def history(
        self,
        channel: str,
        *,
        limit: Optional[int] = None,
        since: Optional[Tuple[str, int]] = None,
        reverse: bool = False,
    ) -> HistoryPage:
        return await asyncio.to_thread(self._api.history, channel, limit=limit, since=since, reverse=reverse)

    async def channels(self, pattern: str = "*", *, after: Optional[str] = None) -> ChannelsPage:
        return await asyncio.to_thread(self._api.channels, pattern, after=after)

    async def stats(self) -> Dict[str, Any]:
        return await asyncio.to_thread(self._api.stats)

    async def info(self) -> Dict[str, Any]:
        return await asyncio.to_thread(self._api.info)
