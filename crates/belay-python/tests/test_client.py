"""The asyncio client against a real `belay serve --demo`: one behaviour per test."""

from __future__ import annotations

import asyncio

import pytest

import belay
from belay import Publication, Resync

BOUND = 10.0


def run(coroutine):  # one event loop per test
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def test_ready_then_a_request_is_answered(demo):
    async def scenario():
        async with belay.connect(demo.url) as client:
            await asyncio.wait_for(client.ready(), BOUND)
            assert client.status().ready
            assert await client.request("echo", {"k": [1, "two"]}) == {"k": [1, "two"]}

    run(scenario())


def test_publications_arrive_in_order_without_gaps(demo):
    async def scenario():
        async with belay.connect(demo.url) as client:
            feed = await client.subscribe("feed")
            offsets = []
            async for item in feed:
                assert isinstance(item, Publication), item
                offsets.append(item.offset)
                if len(offsets) == 5:
                    break
            assert offsets == list(range(offsets[0], offsets[0] + 5))
            await feed.close()

    run(scenario())


def test_a_restart_is_recovered_with_nothing_lost(demo):
    async def scenario():
        async with belay.connect(demo.url, seed=7) as client:
            feed = await client.subscribe("feed")
            first = await feed.__anext__()
            assert isinstance(first, Publication)
            attempts = client.status().attempts
            assert demo.post("/admin/fault/restart", '{"down_ms":500}') == 200
            seen = [first.offset]
            async for item in feed:
                assert not isinstance(item, Resync), "the memory broker kept the history"
                seen.append(item.offset)
                if client.status().attempts > attempts and len(seen) >= 40:
                    break
            assert seen == list(range(seen[0], seen[0] + len(seen))), seen
            assert client.status().attempts > attempts, "it reconnected"

    run(scenario())


def test_an_unknown_method_is_a_server_error_with_its_code(demo):
    async def scenario():
        async with belay.connect(demo.url) as client:
            await client.ready()
            with pytest.raises(belay.ServerError) as raised:
                await client.request("no.such.method", {})
            assert raised.value.code == "unknown_method", raised.value

    run(scenario())


def test_a_request_while_not_ready_is_refused_not_ready():
    async def scenario():
        # Nothing listens there: the client never becomes ready.
        async with belay.connect("ws://127.0.0.1:9/ws", connect_timeout=0.5) as client:
            with pytest.raises(belay.NotReady):
                await client.request("echo", {})

    run(scenario())


def test_slow_replies_time_out_at_the_deadline(demo):
    async def scenario():
        async with belay.connect(demo.url) as client:
            await client.ready()
            assert demo.post("/admin/fault/slow_replies", '{"on":true}') == 200
            started = asyncio.get_running_loop().time()
            with pytest.raises(belay.Timeout):
                await client.request("echo", {}, timeout=0.3)
            assert asyncio.get_running_loop().time() - started < 5

    run(scenario())


def test_a_closed_client_refuses_commands():
    async def scenario():
        client = await belay.connect("ws://127.0.0.1:9/ws")
        await client.close()
        with pytest.raises(belay.ClientClosed):
            await client.request("echo", {})

    run(scenario())


def test_the_binary_codec_is_negotiated(demo):
    async def scenario():
        async with belay.connect(demo.url, codec="binary") as client:
            await client.ready()
            assert client.status().codec == "binary"
            assert await client.request("echo", [1, 2]) == [1, 2]

    run(scenario())


def test_a_bad_codec_is_a_value_error():
    with pytest.raises(ValueError):
        run(belay.connect("ws://127.0.0.1:9/ws", codec="cbor").__aenter__())


def test_a_subscription_is_iterated_without_awaiting_it_first(demo):
    async def scenario():
        async with belay.connect(demo.url) as client:
            async for item in client.subscribe("feed"):
                assert isinstance(item, Publication)
                break

    run(scenario())


def test_status_changes_are_reported_as_they_happen(demo):
    async def scenario():
        async with belay.connect(demo.url) as client:
            async for status in client.statuses():
                if status.ready:
                    break
            assert demo.post("/admin/fault/restart", '{"down_ms":300}') == 200
            async for status in client.statuses():
                if not status.ready:
                    assert status.why is not None, status
                    break
            async for status in client.statuses():
                if status.ready:
                    assert status.attempts >= 2, status
                    break

    run(scenario())
