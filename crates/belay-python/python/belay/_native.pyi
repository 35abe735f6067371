"""Type stubs of the native extension (crates/belay-python/src)."""

from typing import Any, Awaitable, Callable, Dict, Optional, Tuple, final

__all__ = [
    "CORE_VERSION",
    "NativeClient",
    "NativeHost",
    "NativeSubscription",
    "connect",
    "sign_jwt",
    "start_host",
]

CORE_VERSION: str

@final
class NativeSubscription:
    @property
    def channel(self) -> str: ...
    def next(self) -> Awaitable[Optional[Tuple[str, str, str, int, str]]]: ...
    def close(self) -> Awaitable[None]: ...

@final
class NativeClient:
    def ready(self) -> Awaitable[None]: ...
    def request(
        self,
        method: str,
        params: str,
        *,
        timeout_ms: Optional[int] = ...,
        idempotency_key: Optional[str] = ...,
    ) -> Awaitable[str]: ...
    def publish(self, channel: str, data: str) -> Awaitable[str]: ...
    def subscribe(
        self, channel: str, *, token: Optional[str] = ...
    ) -> Awaitable[NativeSubscription]: ...
    def status(self) -> Dict[str, Any]: ...
    def next_status(self) -> Awaitable[Optional[Dict[str, Any]]]: ...
    def reconnect_now(self) -> None: ...
    def close(self) -> Awaitable[None]: ...

def connect(
    url: str,
    *,
    token: Optional[str] = ...,
    token_provider: Optional[Callable[[], Awaitable[str]]] = ...,
    codec: str = ...,
    fallback: bool = ...,
    retry_websocket_every_ms: Optional[int] = ...,
    connect_timeout_ms: Optional[int] = ...,
    request_timeout_ms: Optional[int] = ...,
    seed: Optional[int] = ...,
) -> NativeClient: ...

@final
class NativeHost:
    def status(
        self,
    ) -> Tuple[Optional[str], bool, Optional[bool], int, int, int, bool]: ...
    def stop(self) -> Awaitable[None]: ...

def start_host(
    url: str,
    token: str,
    methods: Dict[str, Callable[[str], Awaitable[Tuple[str, str, str]]]],
    *,
    interval_ms: int = ...,
    min_awake_ms: int = ...,
) -> NativeHost: ...

def sign_jwt(algorithm: str, key: bytes, claims: str) -> str: ...
