"""is_awaitable: plain data answers at once, anything awaitable is recognised as inspect's is."""

import asyncio

import pytest

from reactor.awaiting import is_awaitable


class Data(dict):
    """A dict subclass: plain data, though not of a plain type."""


class Awaitable:
    def __await__(self):
        yield from ()


@pytest.mark.parametrize("value", [None, True, 1, 1.5, "text", [1], {"a": 1}, Data(a=1)])
def test_plain_data_is_not_awaitable(value):
    assert is_awaitable(value) is False


def test_a_coroutine_a_future_and_an_object_with_await_are_awaitable():
    async def later():
        return 1

    coroutine = later()
    loop = asyncio.new_event_loop()
    try:
        assert (
            is_awaitable(coroutine)
            and is_awaitable(loop.create_future())
            and is_awaitable(Awaitable())
        )
    finally:
        coroutine.close()
        loop.close()
