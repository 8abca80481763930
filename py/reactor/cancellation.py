"""CancelToken: the AbortSignal of the Python tier, shared by the chat host and AI Tool plugins.

A stop button must reach whatever is running — the model request and the tool — and a result
that arrives after the stop must be dropped, not used: a stop that reaches the model request
but not the tool leaves the tool running. The token mirrors the DOM's AbortSignal (`aborted`,
`reason`, a listener, `throw_if_aborted`) so a page can forward a JS signal into it, and adds what
asyncio code needs: `await token.wait()` and `await token.race(awaitable)`.

Pure Python: call `abort` from the event loop's thread (in Pyodide there is only one).
Nothing can interrupt Python code that blocks; a sync handler runs to its end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .awaiting import started
from .disposable import Disposable
from .errors import AbortedError

T = TypeVar("T")
log = logging.getLogger("reactor")


class CancelToken:
    """Aborted once, for a reason; listeners hear of it once, in the order they were added."""

    __slots__ = ("_aborted", "_reason", "_listeners")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: Any = None
        self._listeners: list[Callable[[Any], object]] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    @property
    def reason(self) -> Any:
        return self._reason

    def abort(self, reason: Any = "aborted") -> None:
        """Abort with `reason`; a second call changes nothing (the first reason stands)."""
        if self._aborted:
            return
        self._aborted, self._reason = True, reason
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            try:
                listener(reason)
            except Exception:
                log.exception("A cancellation listener failed on %r", reason)

    def add_listener(self, listener: Callable[[Any], object]) -> Disposable:
        """Call `listener(reason)` on abort — at once if already aborted, so none waits forever."""
        if self._aborted:
            listener(self._reason)
            return Disposable()
        entry = lambda reason: listener(reason)  # noqa: E731  (one removal per addition)
        self._listeners.append(entry)
        return Disposable(lambda: entry in self._listeners and self._listeners.remove(entry))

    def throw_if_aborted(self) -> None:
        if self._aborted:
            raise AbortedError(self._reason)

    def child(self) -> CancelToken:
        """A token aborted with this one, which may also be aborted alone (a timeout, one tool)."""
        token = CancelToken()
        link = self.add_listener(token.abort)
        token.add_listener(lambda _: link.dispose())
        return token

    async def wait(self) -> Any:
        """Wait until aborted; return the reason."""
        if self._aborted:
            return self._reason
        future = asyncio.get_running_loop().create_future()
        listening = self.add_listener(lambda reason: future.done() or future.set_result(reason))
        try:
            return await future
        finally:
            listening.dispose()

    async def race(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable` unless aborted first; then cancel it and raise AbortedError.

        When both finish together the abort wins: a result that arrives after a stop is dropped.
        """
        self.throw_if_aborted()
        task = started(awaitable)
        if task.done():  # it never had to wait: nothing could stop it meanwhile, and no loop turn
            return task.result()
        task.add_done_callback(_observe)
        # One future that the task or the abort settles: no waiter task, no asyncio.wait (each is
        # another turn of the browser's event loop, the larger part of a call's cost there).
        first: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        settle = lambda *_: first.done() or first.set_result(None)  # noqa: E731
        task.add_done_callback(settle)
        listening = self.add_listener(settle)
        try:
            await first
        finally:
            listening.dispose()
            task.cancel()  # no-op once done; otherwise the abort (or our own cancel) reaches it
        if self._aborted:
            raise AbortedError(self._reason)
        return task.result()

    def __repr__(self) -> str:
        return f"CancelToken(aborted={self._aborted}, reason={self._reason!r})"


def _observe(task: asyncio.Future[Any]) -> None:
    # A task we stopped watching may still fail; read its exception so asyncio does not log it.
    if not task.cancelled():
        task.exception()
