"""The exceptions of the Belay client, as the Rust and browser clients type them.

``NotReady``, ``TooLarge`` and ``ClientClosed`` mean a request was never sent;
``Timeout`` and ``ConnectionClosed`` mean it may or may not have run (retry it
with an idempotency key); ``ServerError`` carries the server's code
(spec/PROTOCOL.md §4.5) and, where the server said, the earliest sensible retry.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "BelayError",
    "NotReady",
    "Timeout",
    "ConnectionClosed",
    "ClientClosed",
    "TooLarge",
    "ServerError",
    "AlreadySubscribed",
    "Unauthorized",
    "HostError",
]


class BelayError(Exception):
    """Every error of this package."""


class NotReady(BelayError):
    """The client was not ready: the request was not sent."""


class Timeout(BelayError):
    """No answer before the deadline: the request may or may not have run."""


class ConnectionClosed(BelayError):
    """The connection was lost before an answer: the request may or may not have run."""


class ClientClosed(BelayError):
    """The client is closed."""


class TooLarge(BelayError):
    """The request's frame is over the protocol's limit: it was not sent."""


class AlreadySubscribed(BelayError):
    """This client already has a subscription to the channel."""


class ServerError(BelayError):
    """The server answered with an error.

    ``code`` is the server's code (``rate_limited``, ``forbidden``,
    ``host_lost``…), ``retry_after_ms`` the earliest sensible retry when the
    server said (``rate_limited``, ``unavailable``, ``host_asleep``).
    """

    def __init__(self, code: str, message: str, retry_after_ms: Optional[int] = None) -> None:
        super().__init__(f"server error {code}: {message}")
        self.code = code
        self.message = message
        self.retry_after_ms = retry_after_ms


class Unauthorized(BelayError):
    """Raised by a token provider: the user is not authorized any more.

    The client halts instead of asking again; any other exception from the
    provider means "not now", and it is asked again after the backoff.
    """


class HostError(BelayError):
    """Raised by a resident host's handler: the caller gets this code and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
