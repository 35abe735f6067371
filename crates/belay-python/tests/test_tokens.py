"""Tokens: a fixed one, and the async provider."""

from __future__ import annotations

import asyncio

import pytest

import belay
from belay import backend
from conftest import SECRET


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def test_a_token_opens_the_session(jwt_relay):
    token = jwt_relay.mint("alice")

    async def scenario():
        async with belay.connect(jwt_relay.url, token=token) as client:
            await asyncio.wait_for(client.ready(), 10)
            assert await client.request("echo", "hi") == "hi"

    run(scenario())


def test_the_provider_is_asked_for_a_token_before_the_dial(jwt_relay):
    asked = []

    async def provider():
        asked.append(True)
        return jwt_relay.mint("bob")

    async def scenario():
        async with belay.connect(jwt_relay.url, token_provider=provider) as client:
            await asyncio.wait_for(client.ready(), 10)
            assert asked, "the provider was asked"

    run(scenario())


def test_an_unauthorized_provider_halts_the_client(jwt_relay):
    async def provider():
        raise belay.Unauthorized("signed out")

    async def scenario():
        async with belay.connect(jwt_relay.url, token_provider=provider) as client:
            for _ in range(200):
                if client.status().state == "halted":
                    break
                await asyncio.sleep(0.05)
            status = client.status()
            assert (status.state, status.halted) == ("halted", "auth_failed"), status
            assert status.attempts == 0, "never dialled without a token"
            with pytest.raises(belay.NotReady):
                await client.request("echo", {})

    run(scenario())


def test_a_token_near_its_expiry_is_renewed_in_band_without_a_reconnect(jwt_relay):
    asked = []

    async def provider():
        asked.append(True)
        # Valid 4 s: renewed on the open session at 75-90 % of that. Minted
        # here, not by a subprocess, so that the renewal never waits on one.
        return backend.connection_token(SECRET, "carol", ttl=4)

    async def scenario():
        async with belay.connect(jwt_relay.url, token_provider=provider) as client:
            await asyncio.wait_for(client.ready(), 10)
            for _ in range(200):
                if len(asked) >= 2:
                    break
                await asyncio.sleep(0.05)
            assert len(asked) >= 2, "asked again before the expiry"
            await asyncio.sleep(1.5)  # past the first token's expiry (4 s)
            status = client.status()
            assert status.ready and status.attempts == 1, status
            assert await client.request("echo", 1) == 1

    run(scenario())
