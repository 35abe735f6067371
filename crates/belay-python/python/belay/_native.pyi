"""Type stubs of the native extension (crates/belay-python/src)."""

from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple, final

__all__ = [
    "CORE_VERSION",
    "VectorHeartbeat",
    "decode_client",
    "decode_server",
    "encode_client",
    "heartbeat_decide",
    "splitmix64",
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
    def next(self) -> Awaitable[Optional[List[Tuple[str, str, str, int, str]]]]: ...
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

# The shared vectors' hooks into the core (tests/test_vectors.py).
def decode_server(frame: str) -> Tuple[str, Optional[str]]: ...
def decode_client(frame: str) -> Tuple[str, Optional[str]]: ...
def encode_client(message: str) -> Tuple[str, int]: ...
def heartbeat_decide(
    last_received_at: int,
    pending_probe_at: Optional[int],
    now: int,
    interval_ms: int,
    timeout_ms: int,
) -> str: ...
def splitmix64(seed: str, count: int) -> Tuple[List[str], List[int]]: ...
@final
class VectorHeartbeat:
    def __new__(cls, start: int, interval_ms: int, timeout_ms: int) -> "VectorHeartbeat": ...
    def set_server_ping_interval(self, interval_ms: Optional[int]) -> None: ...
    def handle_frame(self, now: int) -> None: ...
    def handle_timeout(self, now: int) -> Tuple[str, Optional[str]]: ...
    def poll_timeout(self) -> int: ...
    def probes_sent(self) -> int: ...
    def pending_probe_at(self) -> Optional[int]: ...
    def last_received_at(self) -> int: ...
