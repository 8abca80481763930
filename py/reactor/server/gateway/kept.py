"""A reply of the site's model kept by the server for its thread while it streams, so a page
reloaded mid-answer re-attaches to it and shows the rest as it comes.

A request that names its thread (`X-Reactor-Thread`, a signed-in person's) no longer ties the
provider's answer to its connection: the answer is relayed into a KeptStream, which the request
then reads like any page that re-attaches (`GET /api/assistant/streams/{thread}`, from the event
after `Last-Event-ID`). The page leaving does not close the provider's request; no page reading
for `window` seconds does, and so does Stop (`DELETE /api/assistant/streams/{thread}`). A
finished answer is kept for `window` seconds more, for a page reloaded just after it ended.
Each chunk of events is followed by `id: n`, so an event stream's reader knows where it was.

Kept in the memory of the process that relays it: with several server processes on one
PostgreSQL, shared.py says which process holds each reply and carries it, and Stop, to the
others by the page bus.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.types import Message, Receive, Send

log = logging.getLogger("reactor.assistant")
Key = tuple[str, str]  # (who, thread)


class KeptStream:
    """One answer's ASGI messages as the provider's relay sent them, and who reads them now."""

    def __init__(self, streams: KeptStreams, key: Key) -> None:
        self.streams, self.key = streams, key
        self.id = secrets.token_hex(8)  # this reply, not another one later in the same thread
        self.start: Message | None = None
        self.chunks: list[bytes] = []
        self.done = False
        self.task: asyncio.Task[None] | None = None
        self.readers = 0
        self._changed = asyncio.Event()
        self._expiry: asyncio.TimerHandle | None = None

    async def send(self, message: Message) -> None:
        """The relay's ASGI `send`: kept, with the event id after each chunk of events."""
        if message["type"] == "http.response.start":
            self.start = message
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            if body:
                if self.streaming:
                    body += f"id: {len(self.chunks) + 1}\n\n".encode()
                self.chunks.append(body)
            if not message.get("more_body", False):
                self.finish()
        self._changed.set()

    @property
    def streaming(self) -> bool:
        headers = dict(self.start["headers"]) if self.start else {}
        return b"text/event-stream" in headers.get(b"content-type", b"")

    def finish(self) -> None:
        self.done = True
        self._changed.set()
        if self.readers == 0:
            self._expire_later()

    async def read(self, send: Send, receive: Receive, after: int = 0) -> None:
        """Write the answer to one reader from the chunk after `after`, as it comes; a reader
        that leaves leaves the answer running."""
        self.readers += 1
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        left = asyncio.ensure_future(_disconnected(receive))
        try:
            while self.start is None and not self.done and not left.done():
                await self._wait(left)
            if self.start is None:
                return
            await send(self.start)
            sent = min(max(after, 0), len(self.chunks))
            while not left.done():
                while sent < len(self.chunks):
                    await send(
                        {"type": "http.response.body", "body": self.chunks[sent], "more_body": True}
                    )
                    sent += 1
                if self.done:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
                await self._wait(left)
        finally:
            left.cancel()
            self.readers -= 1
            if self.readers == 0:
                self._expire_later()

    async def _wait(self, left: asyncio.Future[Any]) -> None:
        self._changed.clear()
        changed = asyncio.ensure_future(self._changed.wait())
        try:
            await asyncio.wait({changed, left}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            changed.cancel()

    def stop(self) -> None:
        """Close the provider's request (Stop, or nobody came back): what came stays readable."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if not self.done:
            self.finish()

    def _expire_later(self) -> None:
        if self._expiry is None:
            loop = asyncio.get_running_loop()
            self._expiry = loop.call_later(self.streams.window, self._expire)

    def _expire(self) -> None:
        self._expiry = None
        if self.readers:
            return
        if not self.done:
            log.info(
                "assistant: no page came back for %s's answer within %s s; the provider's "
                "request was closed",
                self.key[0],
                self.streams.window,
            )
        self.stop()
        self.streams.forget(self)


class KeptStreams:
    """The answers kept in this process, by (who, thread)."""

    def __init__(self, window: float) -> None:
        self.window = window
        self._kept: dict[Key, KeptStream] = {}
        self.on_forget: Callable[[KeptStream], None] | None = None  # shared.py's

    def begin(self, key: Key, relay: Callable[[Send], Awaitable[None]]) -> KeptStream:
        """Relay an answer into a new KeptStream for `key` (one that was kept for it goes)."""
        old = self._kept.pop(key, None)
        if old is not None:
            old.stop()
        kept = self._kept[key] = KeptStream(self, key)

        async def run() -> None:
            try:
                await relay(kept.send)
            except asyncio.CancelledError:
                pass  # stopped: the provider's request is closed
            except Exception:
                log.exception("assistant: the kept answer failed")
            finally:
                if not kept.done:
                    kept.finish()

        kept.task = asyncio.ensure_future(run())
        return kept

    def get(self, key: Key) -> KeptStream | None:
        return self._kept.get(key)

    def has(self, who: str, thread: str) -> bool:
        return (who, thread) in self._kept

    def forget(self, kept: KeptStream) -> None:
        if self._kept.get(kept.key) is kept:
            del self._kept[kept.key]
            if self.on_forget is not None:
                self.on_forget(kept)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
