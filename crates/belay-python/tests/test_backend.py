"""The backend helpers against a standalone `belay serve`: tokens minted in
Python open sessions and subscriptions; the HTTP API client publishes,
reads history and presence, lists channels and disconnects users."""

from __future__ import annotations

import asyncio

import pytest

import belay
from belay import backend
from conftest import API_KEY, SECRET


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


async def first_publication(subscription):
    async for item in subscription:
        return item


def test_a_connection_token_opens_a_session_with_its_grants(api_relay):
    token = backend.connection_token(SECRET, "alice", channels=["news"], ttl=60)

    async def scenario():
        async with belay.connect(api_relay.url, token=token) as client:
            await asyncio.wait_for(client.ready(), 10)
            news = await client.subscribe("news")
            api = backend.AsyncApi(api_relay.http, API_KEY)
            await until_subscribed(api, "news")
            published = await api.publish("news", {"n": 1})
            item = await asyncio.wait_for(first_publication(news), 10)
            assert item == belay.Publication({"n": 1}, published.epoch, published.offset)
            refused = await client.subscribe("sports")
            assert await asyncio.wait_for(first_publication(refused), 10) == belay.Refused(
                "forbidden"
            )

    run(scenario())


async def until_subscribed(api, channel):
    for _ in range(200):
        if any(c.channel == channel for c in (await api.channels(channel)).channels):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"no subscriber of {channel}")


def test_a_subscription_token_opens_its_channel_only(api_relay):
    token = backend.connection_token(SECRET, "bob")
    private = backend.subscription_token(SECRET, "bob", "private:bob", ttl=60)

    async def scenario():
        async with belay.connect(api_relay.url, token=token) as client:
            mine = await client.subscribe("private:bob", token=private)
            api = backend.AsyncApi(api_relay.http, API_KEY)
            await until_subscribed(api, "private:bob")
            published = await api.publish("private:bob", "hello")
            item = await asyncio.wait_for(first_publication(mine), 10)
            assert item == belay.Publication("hello", published.epoch, published.offset)
            theirs = await client.subscribe("private:carol", token=private)
            item = await asyncio.wait_for(first_publication(theirs), 10)
            assert isinstance(item, belay.Refused), item

    run(scenario())


def test_an_idempotent_publish_goes_out_once_and_history_has_it(api_relay):
    api = backend.Api(api_relay.http, API_KEY)
    first = api.publish("orders", {"order": 7}, idempotency_key="order-7")
    again = api.publish("orders", {"order": 7}, idempotency_key="order-7")
    assert first == again
    page = api.history("orders")
    assert [(p.offset, p.data) for p in page.publications] == [(first.offset, {"order": 7})]
    assert (page.epoch, page.offset) == (first.epoch, first.offset)
    with pytest.raises(backend.ApiError) as conflict:
        api.history("orders", since=("another-epoch", 1))
    assert (conflict.value.status, conflict.value.code) == (409, "epoch_changed")
    assert conflict.value.position == (first.epoch, first.offset)


def test_presence_lists_the_subscribers_and_disconnect_closes_a_users_connections(api_relay):
    token = backend.connection_token(SECRET, "dana", channels=["room:*"], info={"name": "Dana"})

    async def scenario():
        api = backend.AsyncApi(api_relay.http, API_KEY)
        async with belay.connect(api_relay.url, token=token) as client:
            room = await client.subscribe("room:1")  # held: dropping it unsubscribes
            await until_subscribed(api, "room:1")
            members = await api.presence("room:1")
            assert [(m.user, m.info) for m in members] == [("dana", {"name": "Dana"})]
            counts = (await api.channels("room:*")).channels
            assert counts == [backend.ChannelCount("room:1", 1)]
            assert await api.disconnect("dana", reason="bye") == 1
            await room.close()

    run(scenario())


def test_a_wrong_key_is_refused_unauthorized(api_relay):
    api = backend.Api(api_relay.http, "not-the-key-at-all-0000")
    with pytest.raises(backend.ApiError) as refused:
        api.publish("news", 1)
    assert (refused.value.status, refused.value.code) == (401, "unauthorized")
    assert backend.Api(api_relay.http, API_KEY).info()["lifecycle"] == "serving"


def test_tokens_refuse_a_bad_algorithm_or_an_empty_secret():
    with pytest.raises(ValueError):
        backend.connection_token(SECRET, "x", algorithm="none")
    with pytest.raises(ValueError):
        backend.connection_token("", "x")
