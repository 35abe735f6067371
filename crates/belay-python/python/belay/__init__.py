"""Belay's Python SDK: an asyncio client and resident hosts on Belay's own core.

The protocol's decisions (readiness, heartbeat, backoff, recovery, request
deadlines, idle sleep) are belay-proto's, run by belay-client's driver in a
native extension: a Python client takes exactly the Rust client's decisions.

    async with belay.connect("ws://127.0.0.1:8080/ws") as client:
        await client.ready()
        print(await client.request("echo", {"hello": "world"}))
        async for item in client.subscribe("feed"):
            ...
"""

from . import backend, errors, host
from ._native import CORE_VERSION
from .client import Client, Publication, Refused, Resync, Status, Subscription, connect
from .errors import (
    BelayError,
    ClientClosed,
    ConnectionClosed,
    HostError,
    NotReady,
    ServerError,
    Timeout,
    TooLarge,
    Unauthorized,
)

__all__ = [
    "CORE_VERSION",
    "Client",
    "Publication",
    "Refused",
    "Resync",
    "Status",
    "Subscription",
    "connect",
    "backend",
    "errors",
    "host",
    "BelayError",
    "ClientClosed",
    "ConnectionClosed",
    "HostError",
    "NotReady",
    "ServerError",
    "Timeout",
    "TooLarge",
    "Unauthorized",
]
