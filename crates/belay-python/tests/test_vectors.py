"""The shared conformance vectors (spec/vectors/, format in its README)
through this wheel's own core: the codec (`codec.json`), the heartbeat
(`heartbeat.json`), the backoff policies and the generator (`backoff.json`), as
crates/belay-proto/tests run them in Rust."""

from __future__ import annotations

import json
from typing import Any, List

import pytest

from belay import _native
from conftest import ROOT

VECTORS = ROOT / "spec" / "vectors"


def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text())


def text_of(value: Any) -> str:
    """A frame written as a string or as pieces (`{"repeat": s, "times": n}`)."""
    if isinstance(value, str):
        return value
    return "".join(p if isinstance(p, str) else p["repeat"] * p["times"] for p in value)


def subset(expected: Any, actual: Any) -> bool:
    """The README's subset matching (objects: every expected key; null: absent too)."""
    if expected is None:
        return actual is None
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            subset(v, actual.get(k)) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(subset(e, a) for e, a in zip(expected, actual))
        )
    return bool(expected == actual) and type(expected) is type(actual)


CODEC = load("codec.json")


def check_decoded(case: Any, decode: Any) -> None:
    frame = text_of(case["frame"])
    if "error" in case:
        with pytest.raises(ValueError) as raised:
            decode(frame)
        assert subset(case["error"], json.loads(str(raised.value))), raised.value
        return
    message, payload = decode(frame)
    assert json.loads(message) == case["message"]
    return payload


@pytest.mark.parametrize("case", CODEC["decode_server"], ids=lambda c: c["name"])
def test_decode_server(case: Any) -> None:
    payload = check_decoded(case, _native.decode_server)
    if "message" in case:
        # The client core keeps payloads as text: exactly the frame's slice.
        assert payload == (None if "payload" not in case else text_of(case["payload"]))


@pytest.mark.parametrize("case", CODEC["decode_client"], ids=lambda c: c["name"])
def test_decode_client(case: Any) -> None:
    params = check_decoded(case, _native.decode_client)
    if "message" in case:
        expected = case.get("payload")
        assert (params is None) == (expected is None)
        if expected is not None:
            assert json.loads(params) == json.loads(text_of(expected))


@pytest.mark.parametrize("case", CODEC["encode_client"], ids=lambda c: c["name"])
def test_encode_client(case: Any) -> None:
    want = text_of(case["text"])
    assert json.loads(want) == case["message"], "the vector's text is its message"
    text, length = _native.encode_client(json.dumps(case["message"]))
    assert text == want
    assert length == len(want.encode())


HEARTBEAT = load("heartbeat.json")


@pytest.mark.parametrize("case", HEARTBEAT["decide"], ids=lambda c: c["name"])
def test_heartbeat_decide(case: Any) -> None:
    got = _native.heartbeat_decide(
        case["last_received_at"],
        case.get("pending_probe_at"),
        case["now"],
        case["interval_ms"],
        case["timeout_ms"],
    )
    assert got == case["expect"]


@pytest.mark.parametrize("case", HEARTBEAT["sequences"], ids=lambda c: c["name"])
def test_heartbeat_sequence(case: Any) -> None:
    beat = _native.VectorHeartbeat(case["start"], case["interval_ms"], case["timeout_ms"])
    if "server_ping_interval_ms" in case:
        beat.set_server_ping_interval(case["server_ping_interval_ms"])
    for i, step in enumerate(case["steps"]):
        if "frame" in step:
            beat.handle_frame(step["frame"])
        else:
            action, cause = beat.handle_timeout(step["tick"])
            assert action == step["expect"], (i, step)
            if "cause" in step:
                assert cause == step["cause"], (i, step)
        if "next_timeout_ms" in step:
            assert beat.poll_timeout() == step["next_timeout_ms"], (i, step)
        if "probes_sent" in step:
            assert beat.probes_sent() == step["probes_sent"], (i, step)
        if "pending_probe_at" in step:
            assert beat.pending_probe_at() == step["pending_probe_at"], (i, step)
        if "last_received_at" in step:
            assert beat.last_received_at() == step["last_received_at"], (i, step)


BACKOFF = load("backoff.json")
SPLITMIX: List[Any] = BACKOFF["splitmix64"]


@pytest.mark.parametrize("case", BACKOFF["cases"], ids=lambda c: c["name"])
def test_backoff(case: Any) -> None:
    backoff = _native.VectorBackoff(json.dumps(case["policy"]), [float(d) for d in case["draws"]])
    # The vectors spell policies exactly as the core serializes them.
    assert json.loads(backoff.policy()) == case["policy"]
    for i, want in enumerate(case.get("delays_ms", [])):
        assert backoff.next_delay(0) == want, i
    for i, step in enumerate(case.get("steps", [])):
        if "now" in step:
            assert backoff.next_delay(step["now"]) == step["delay_ms"], (i, step)
        elif "reset" in step:
            backoff.reset()
        elif "slots" in step:
            slots = step["slots"]
            backoff.set_slots(
                None if slots is None else (slots["period_ms"], slots["phase_ms"], slots["anchor"])
            )
        elif "advise" in step:
            a = step["advise"]
            backoff.advise(a["at"], a["min_delay_ms"], a["max_delay_ms"])
        else:
            raise AssertionError(f"unknown step {step}")
    assert backoff.draws_taken() == case["draws_taken"]
    assert backoff.attempt() == case["attempt"]


@pytest.mark.parametrize("case", SPLITMIX, ids=lambda c: c["seed"])
def test_splitmix64(case: Any) -> None:
    count = max(len(case["u64"]), len(case["unit_numerators"]))
    values, numerators = _native.splitmix64(case["seed"], count)
    assert values[: len(case["u64"])] == case["u64"]
    assert numerators[: len(case["unit_numerators"])] == case["unit_numerators"]


def test_every_section_ran() -> None:
    """A vector file that grew a section this runner does not know fails here."""
    assert set(CODEC) >= {"decode_server", "decode_client", "encode_client"}
    assert set(HEARTBEAT) == {"decide", "sequences"}
    total = sum(len(CODEC[s]) for s in ("decode_server", "decode_client", "encode_client"))
    assert total > 250, total
