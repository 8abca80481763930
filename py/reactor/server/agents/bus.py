"""PostgresPageBus: the page relay (server/agents/relay.py) across server processes that share one
PostgreSQL database.

The directory of connected pages is the table `agent_pages` (which process holds each page's
stream, its tools, when the person last used it); every process reads it, so an agent's request
reaching any process finds the person's pages. Messages between processes — a call to the process
holding the page, the answer back to the process that waits, "the page went", "the tool list
changed" — go by `NOTIFY reactor_agent_pages`; a payload over NOTIFY's 8,000 bytes waits in
`agent_messages` and the notification names it. Each process LISTENs on one connection of its
own, in a thread, and hands what it hears to its relay on the event loop.

A process that dies leaves its pages' rows behind: a page's stream refreshes `seen_at` every
keep-alive, and rows not seen for STALE_SECONDS are not listed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
import time
from typing import Any

from ...errors import DatabaseError
from ..database import Database
from .relay import PageLink, PageRelay

log = logging.getLogger("reactor")
CHANNEL = "reactor_agent_pages"
STALE_SECONDS = 45.0  # three keep-alives of a page's stream
INLINE_BYTES = 7000  # NOTIFY takes payloads under 8,000 bytes
STEPS = [
    """
    CREATE TABLE IF NOT EXISTS agent_pages (
        id TEXT PRIMARY KEY,
        username TEXT NOT NULL,
        process TEXT NOT NULL,
        title TEXT NOT NULL,
        url TEXT NOT NULL,
        active_at REAL NOT NULL,
        seen_at REAL NOT NULL,
        tools TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS agent_pages_by_user ON agent_pages (username);
    CREATE TABLE IF NOT EXISTS agent_messages (
        id TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        sent_at REAL NOT NULL
    );
    """,
]


class PostgresPageBus:
    """The PageBus of processes on one PostgreSQL database; `start` it on the app's loop."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.migrate("agent_pages", STEPS)
        self.relay: PageRelay | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.listening = threading.Event()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None

    # The directory

    def pages_of(self, username: str) -> list[PageLink]:
        with self.database.transaction() as db:
            rows = db.execute(
                "SELECT id, username, process, title, url, active_at, tools FROM agent_pages "
                "WHERE username = ? AND seen_at > ?",
                (username, time.time() - STALE_SECONDS),
            ).fetchall()
        return [
            PageLink(
                r["id"],
                r["username"],
                r["title"],
                r["url"],
                r["process"],
                r["active_at"],
                json.loads(r["tools"]),
            )
            for r in rows
        ]

    def save(self, page: PageLink) -> None:
        now = time.time()
        with self.database.transaction() as db:
            db.execute(
                "INSERT INTO agent_pages (id, username, process, title, url, active_at, "
                "seen_at, tools) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "active_at = excluded.active_at, seen_at = excluded.seen_at, tools = "
                "excluded.tools",
                (
                    page.id,
                    page.username,
                    page.process,
                    page.title,
                    page.url,
                    page.active_at,
                    now,
                    json.dumps(page.tools),
                ),
            )
            db.execute("DELETE FROM agent_pages WHERE seen_at < ?", (now - 3600,))

    def remove(self, page_id: str) -> None:
        with self.database.transaction() as db:
            db.execute("DELETE FROM agent_pages WHERE id = ?", (page_id,))

    def heartbeat(self, page_ids: list[str]) -> None:
        with self.database.transaction() as db:
            db.executemany(
                "UPDATE agent_pages SET seen_at = ? WHERE id = ?",
                [(time.time(), i) for i in page_ids],
            )

    # Messages

    def send(self, process: str, message: dict[str, Any]) -> None:
        """To one process by its name, or to every other with "*"; delivered when this commits."""
        if self.relay is None:
            # not started (an app called without its lifespan): no process listens for this one
            return
        envelope: dict[str, Any] = {"to": process, "from": self.relay.process}
        body = json.dumps(message, ensure_ascii=False)
        with self.database.transaction() as db:
            if len(body.encode()) <= INLINE_BYTES:
                envelope["message"] = message
            else:
                envelope["stored"] = secrets.token_hex(8)
                db.execute(
                    "INSERT INTO agent_messages (id, body, sent_at) VALUES (?, ?, ?)",
                    (envelope["stored"], body, time.time()),
                )
            db.execute(
                "SELECT pg_notify(?, ?)", (CHANNEL, json.dumps(envelope, ensure_ascii=False))
            )

    def start(self, relay: PageRelay) -> None:
        """Listen for this process's messages, in a thread, until `stop`."""
        self.relay, self.loop = relay, asyncio.get_running_loop()
        self.stopping.clear()
        self.thread = threading.Thread(target=self._listen, name="reactor-page-bus", daemon=True)
        self.thread.start()
        if not self.listening.wait(10):
            raise DatabaseError("The page bus could not LISTEN on the database.")

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(5)
        self.listening.clear()

    def _listen(self) -> None:
        import psycopg  # the database layer has made sure it is installed

        while not self.stopping.is_set():
            try:
                with psycopg.connect(
                    self.database.target, autocommit=True, connect_timeout=10
                ) as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    while not self.stopping.is_set():
                        for notice in connection.notifies(timeout=0.5):
                            try:
                                self._heard(notice.payload)
                            except Exception:  # one bad message must not stop the listening
                                log.exception("The page bus could not read a message")
            except psycopg.Error:
                # The database restarted or the connection dropped: listen again (what was sent
                # meanwhile is lost; its callers end at their limit, or when the page goes).
                self.stopping.wait(1.0)

    def _heard(self, payload: str) -> None:
        relay, loop = self.relay, self.loop
        if relay is None or loop is None:
            return
        try:
            envelope = json.loads(payload)
        except ValueError:
            return
        to, sender = envelope.get("to"), envelope.get("from")
        if not (to == relay.process or (to == "*" and sender != relay.process)):
            return
        message = envelope.get("message")
        if "stored" in envelope:
            with self.database.transaction() as db:
                row = db.execute(
                    "SELECT body FROM agent_messages WHERE id = ?", (envelope["stored"],)
                ).fetchone()
                db.execute(
                    "DELETE FROM agent_messages WHERE id = ? OR sent_at < ?",
                    (envelope["stored"], time.time() - 600),
                )
            message = json.loads(row["body"]) if row is not None else None
        if isinstance(message, dict):
            loop.call_soon_threadsafe(relay.heard, message)
