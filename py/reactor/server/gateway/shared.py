"""Kept replies (kept.py) reached from every server process on one PostgreSQL: a page reloaded
mid-answer whose request reaches another process than the one relaying the provider's answer
re-attaches to it there, and Stop there closes the provider's request.

Where each kept reply is held is a row of `assistant_streams` (who, thread, the holding process),
written before the relay starts and removed when the reply is forgotten. A process asked for a
reply it does not hold reads the row; a holder whose bus connection is gone from
`pg_stat_activity` (server/agents/bus.py: a process that dies loses it at once) holds nothing, and
the page is told so at once (it offers to continue). Otherwise the messages go by the page bus:

    reader → holder   kept.read  {who, thread, after, reader}   the holder reads the reply for it,
                                                                 as a reader of its own (kept.py)
    holder → reader   kept.message {reader, n, found | message}  n = 0 says whether the reply is
                                                                 there; then its ASGI messages
    reader → holder   kept.left  {reader}                        the page left
    anyone → holder   kept.stop  {who, thread}                   Stop

The reader's id begins with its process's name: a reader's process that dies leaves the holder's
reply as a page leaving does; a holder that dies ends its readers' answers with the gateway's
"cut off" event (a gap in `n` — the bus lost a message — ends them the same way, never doubled).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from ...errors import ApiError, DatabaseError
from ..agents.bus import APPLICATION, PostgresPageBus
from ..agents.relay import PageRelay
from ..api import error_answer
from ..database import Database
from .kept import KeptStream, KeptStreams, Key

log = logging.getLogger("reactor.assistant")
READ, MESSAGE, LEFT, STOP = "kept.read", "kept.message", "kept.left", "kept.stop"
FOUND_SECONDS = 5.0  # how long a reader waits for the holder to say whether it has the reply
STEPS = [
    """
    CREATE TABLE IF NOT EXISTS assistant_streams (
        who TEXT NOT NULL,
        thread TEXT NOT NULL,
        process TEXT NOT NULL,
        stream TEXT NOT NULL,
        started_at REAL NOT NULL,
        PRIMARY KEY (who, thread)
    );
    """
]


class SharedStreams:
    """The kept replies of this process offered to the others, and theirs read from here."""

    def __init__(
        self, database: Database, kept: KeptStreams, cut: Callable[[], bytes], idle: float
    ) -> None:
        database.migrate("assistant_streams", STEPS)
        self.database, self.kept = database, kept
        self.cut, self.idle = cut, idle  # the event that ends a cut answer; the longest silence
        self.bus: PostgresPageBus | None = None
        self.process = ""
        self.serving: dict[str, tuple[asyncio.Event, asyncio.Task[None]]] = {}  # readers held here
        self.reading: dict[str, tuple[str, asyncio.Queue[dict[str, Any] | None]]] = {}
        self.ids = itertools.count(1)
        kept.on_forget = self._forgotten

    def join(self, relay: PageRelay, bus: PostgresPageBus) -> None:
        """Listen on the page bus of this process (server/agents/mcp.py's Agents)."""
        self.bus, self.process = bus, relay.process
        relay.hearers |= {
            READ: self._heard_read,
            MESSAGE: self._heard_message,
            LEFT: self._heard_left,
            STOP: self._heard_stop,
        }
        relay.dependents.append(lambda: {holder for holder, _ in self.reading.values()})
        relay.on_gone.append(self._gone)

    # The holder's side

    async def hold(self, kept: KeptStream) -> None:
        """Say that this process holds `kept` (before its relay starts)."""
        if not self.process:
            return
        who, thread = kept.key
        await run_in_threadpool(self._write, who, thread, kept.id)

    def _write(self, who: str, thread: str, stream: str) -> None:
        with self.database.transaction() as db:
            db.execute(
                "INSERT INTO assistant_streams (who, thread, process, stream, started_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (who, thread) DO UPDATE SET "
                "process = excluded.process, stream = excluded.stream, "
                "started_at = excluded.started_at",
                (who, thread, self.process, stream, time.time()),
            )

    def _forgotten(self, kept: KeptStream) -> None:
        if self.process:
            task = asyncio.ensure_future(run_in_threadpool(self._remove, kept))
            task.add_done_callback(_logged)

    def _remove(self, kept: KeptStream) -> None:
        with self.database.transaction() as db:
            db.execute(
                "DELETE FROM assistant_streams WHERE who = ? AND thread = ? AND stream = ?",
                (*kept.key, kept.id),
            )

    def _heard_read(self, message: dict[str, Any]) -> None:
        reader = str(message.get("reader", ""))
        if not reader or reader in self.serving:
            return
        kept = self.kept.get((str(message.get("who")), str(message.get("thread"))))
        after = message.get("after")
        left = asyncio.Event()
        task = asyncio.ensure_future(
            self._serve(kept, reader, left, after if isinstance(after, int) else 0)
        )
        self.serving[reader] = (left, task)

    async def _serve(
        self, kept: KeptStream | None, reader: str, left: asyncio.Event, after: int
    ) -> None:
        """Read `kept` for another process's reader, message by message over the bus."""
        process, count = reader.partition(".")[0], itertools.count()

        async def send(message: Message) -> None:
            sent = {"type": MESSAGE, "reader": reader, "n": next(count), **message}
            await asyncio.to_thread(self._send, process, sent)

        async def receive() -> Message:
            await left.wait()
            return {"type": "http.disconnect"}

        try:
            await send({"found": kept is not None})
            if kept is not None:
                await kept.read(lambda m: send({"message": _encoded(m)}), receive, after)
        except DatabaseError as error:
            log.warning("assistant: a kept answer could not be passed on: %s", error)
        finally:
            self.serving.pop(reader, None)

    def _send(self, process: str, message: dict[str, Any]) -> None:
        assert self.bus is not None
        self.bus.send(process, message)

    def _heard_left(self, message: dict[str, Any]) -> None:
        serving = self.serving.get(str(message.get("reader")))
        if serving is not None:
            serving[0].set()

    def _heard_stop(self, message: dict[str, Any]) -> None:
        kept = self.kept.get((str(message.get("who")), str(message.get("thread"))))
        if kept is not None:
            kept.stop()

    def _gone(self, processes: set[str]) -> None:
        """Other processes died: the readers they had here leave; the answers they held end, and
        their rows go."""
        for reader, (left, _) in list(self.serving.items()):
            if reader.partition(".")[0] in processes:
                left.set()
        for holder, queue in list(self.reading.values()):
            if holder in processes:
                queue.put_nowait(None)
        task = asyncio.ensure_future(run_in_threadpool(self._remove_of, sorted(processes)))
        task.add_done_callback(_logged)

    def _remove_of(self, processes: list[str]) -> None:
        with self.database.transaction() as db:
            db.execute("DELETE FROM assistant_streams WHERE process = ANY(?)", (processes,))

    # The reader's side

    async def elsewhere(self, key: Key) -> str:
        """The other process, alive, that holds the newest reply for `key`; "" when this one
        does, or none (or the database cannot say: then what this process keeps is read)."""
        if not self.process:
            return ""
        try:
            return await run_in_threadpool(self.elsewhere_now, key)
        except DatabaseError as error:
            log.warning("assistant: which process holds a reply is unknown: %s", error)
            return ""

    def elsewhere_now(self, key: Key) -> str:
        """`elsewhere`, off the event loop."""
        if not self.process:
            return ""
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT process, EXISTS (SELECT 1 FROM pg_stat_activity WHERE "
                "application_name = ? || process) AS alive FROM assistant_streams "
                "WHERE who = ? AND thread = ?",
                (APPLICATION, *key),
            ).fetchone()
            if row is None or row["process"] == self.process:
                return ""
            if not row["alive"]:  # its process died: nobody holds the reply any more
                db.execute(
                    "DELETE FROM assistant_streams WHERE who = ? AND thread = ? AND process = ?",
                    (*key, row["process"]),
                )
                return ""
            return str(row["process"])

    async def stop(self, holder: str, key: Key) -> None:
        await asyncio.to_thread(self._send, holder, {"type": STOP, "who": key[0], "thread": key[1]})

    async def read(self, holder: str, key: Key, after: int, gone: str) -> Response:
        """The answer `holder` keeps for `key`, from the chunk after `after`, as it comes; a 404
        saying `gone` when it holds none."""
        reader = f"{self.process}.{next(self.ids)}"
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.reading[reader] = (holder, queue)
        try:
            ask = {"type": READ, "who": key[0], "thread": key[1], "after": after, "reader": reader}
            await asyncio.to_thread(self._send, holder, ask)
            first = await asyncio.wait_for(queue.get(), FOUND_SECONDS)
        except (TimeoutError, DatabaseError):
            first = None
        if first is None or first.get("n") != 0 or not first.get("found"):
            self.leave(reader)
            raise ApiError(404, gone, field="thread")
        return _Remote(self, reader, queue, gone)

    def _heard_message(self, message: dict[str, Any]) -> None:
        reading = self.reading.get(str(message.get("reader")))
        if reading is not None:
            reading[1].put_nowait(message)

    def leave(self, reader: str) -> None:
        """This process reads no more for `reader`: the holder is told (its page left)."""
        reading = self.reading.pop(reader, None)
        if reading is not None:
            task = asyncio.ensure_future(
                asyncio.to_thread(self._send, reading[0], {"type": LEFT, "reader": reader})
            )
            task.add_done_callback(_logged)


class _Remote(Response):
    """Another process's kept answer, written as its messages come; cut when its process dies,
    a message is lost, or nothing comes for longer than the provider may be silent."""

    def __init__(
        self, shared: SharedStreams, reader: str, queue: asyncio.Queue[Any], gone: str
    ) -> None:
        super().__init__()
        self.shared, self.reader, self.queue, self.gone = shared, reader, queue, gone

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        left = asyncio.ensure_future(_disconnected(receive))
        started: Message | None = None
        try:
            expected = 1
            while True:
                got = asyncio.ensure_future(self.queue.get())
                await asyncio.wait(
                    {got, left}, timeout=self.shared.idle, return_when=asyncio.FIRST_COMPLETED
                )
                if left.done():
                    got.cancel()
                    return
                item = got.result() if got.done() else None
                got.cancel()
                if item is None or item.get("n") != expected or "message" not in item:
                    break  # the holder died, a message was lost, or it fell silent
                expected += 1
                message = _decoded(item["message"])
                if message["type"] == "http.response.start":
                    started = message
                await send(message)
                if message["type"] == "http.response.body" and not message.get("more_body"):
                    return
            log.warning("assistant: a kept answer held by another process was cut off")
            if started is None:
                await error_answer(ApiError(404, self.gone, field="thread"))(scope, receive, send)
                return
            headers = dict(started.get("headers", []))
            if b"text/event-stream" in headers.get(b"content-type", b""):
                await send(
                    {"type": "http.response.body", "body": self.shared.cut(), "more_body": True}
                )
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            left.cancel()
            self.shared.leave(self.reader)


def _encoded(message: Message) -> dict[str, Any]:
    """An ASGI message of the relay as JSON (its bytes as Latin-1: every byte kept as it is)."""
    if message["type"] == "http.response.start":
        headers = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in message["headers"]]
        return {"type": message["type"], "status": message["status"], "headers": headers}
    return {
        "type": message["type"],
        "body": message.get("body", b"").decode("latin-1"),
        "more_body": message.get("more_body", False),
    }


def _decoded(message: dict[str, Any]) -> Message:
    if message.get("type") == "http.response.start":
        headers = [
            (str(k).encode("latin-1"), str(v).encode("latin-1")) for k, v in message["headers"]
        ]
        return {"type": message["type"], "status": int(message["status"]), "headers": headers}
    return {
        "type": "http.response.body",
        "body": str(message.get("body", "")).encode("latin-1"),
        "more_body": bool(message.get("more_body")),
    }


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _logged(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("assistant: the other processes could not be told: %s", task.exception())
