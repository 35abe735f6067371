"""A resident host in Python: called through the relay, asleep when nobody needs it."""

from __future__ import annotations

import asyncio

import belay
from belay import host as belay_host


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


async def until(predicate, bound=10.0):
    deadline = asyncio.get_running_loop().time() + bound
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "not within the bound"
        await asyncio.sleep(0.05)


def test_a_call_wakes_the_host_which_answers_and_sleeps_again(jwt_relay):
    host_token = jwt_relay.mint("pc-1", "--host", "pc-1")
    caller_token = jwt_relay.mint("alice")

    async def double(params):
        return {"twice": params["n"] * 2}

    async def refuse(params):
        raise belay.HostError("forbidden", "not today")

    async def scenario():
        running = belay_host.start(
            jwt_relay.url,
            host_token,
            {"double": double, "refuse": refuse},
            interval=0.3,
            min_awake=0.2,
        )
        async with running:
            await until(lambda: running.status().beats >= 1)
            assert not running.status().awake, "nobody needs it yet"
            async with belay.connect(jwt_relay.url, token=caller_token) as client:
                await client.ready()
                assert await client.call_host("pc-1", "double", {"n": 21}, timeout=10) == {
                    "twice": 42
                }
                assert running.status().starts >= 1, "the call woke it"
                try:
                    await client.call_host("pc-1", "refuse", {}, timeout=10)
                    raise AssertionError("the handler's error reaches the caller")
                except belay.ServerError as error:
                    assert error.code == "forbidden", error
            # Nobody needs it any more: after the grace and min_awake it sleeps.
            await until(lambda: not running.status().awake and running.status().stops >= 1)
        assert running.status().stopped

    run(scenario())
