"""`is_awaitable`: inspect.isawaitable with a fast answer for plain data; `started`: a task
already run as far as it can go.

Every page call asks it two or three times; in Pyodide `inspect.isawaitable` of a dict costs
~1.4 µs (an ABC check). A set lookup of the value's exact type answers plain data; a tuple
isinstance, which tries each type in turn, cost 0.8 µs for None (bench: the call round trip).
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Awaitable
from typing import Any

_PLAIN = (dict, list, str, int, float, bool, type(None))
_PLAIN_TYPES = frozenset(_PLAIN)


def is_awaitable(value: Any) -> bool:
    """Whether `await value` works: False at once for JSON-like data."""
    return (
        type(value) not in _PLAIN_TYPES
        and not isinstance(value, _PLAIN)
        and inspect.isawaitable(value)
    )


def started(awaitable: Awaitable[Any]) -> asyncio.Future[Any]:
    """A task that runs its first step now (Python 3.12+, Pyodide's 3.14): a command whose
    coroutine never waits (most do not: a store in memory) is then done on return, and costs no
    turn of the browser's event loop, each one a message through a MessageChannel."""
    if inspect.iscoroutine(awaitable) and sys.version_info >= (3, 12):
        loop = asyncio.get_running_loop()
        return asyncio.Task(awaitable, loop=loop, eager_start=True)  # type: ignore[call-arg]
    return asyncio.ensure_future(awaitable)
