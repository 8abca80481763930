"""PostgresPageBus: the page relay (server/agents/relay.py) across server processes that share one
PostgreSQL database.

The directory of connected pages is the table `agent_pages` (which process holds each page's
stream, its tools, when the person last used it); every process reads it, so an agent's request
reaching any process finds the person's pages. Messages between processes — a call to the process
holding the page, the answer back to the process that waits, "the page went", a page's claim of
a call (to the process that waits) and its answer, "the tool list changed" — go to a process on
this host by a Unix socket (server/agents/direct.py), else by NOTIFY on the addressed process's own
channel (`reactor_agent_pages_<process>`: no other process wakes for it),
or on `reactor_agent_pages` to every process; a payload over NOTIFY's 8,000 bytes waits in
`agent_messages` and the notification names it. Each process LISTENs on one connection of its
own, in a thread, and hands what it hears to its relay on the event loop.

A page is listed for as long as its process holds its link, whatever the traffic. Which processes
are alive is PostgreSQL's own knowledge: each process's LISTEN connection carries its name
(`application_name`), and a process that dies — even by SIGKILL — loses that connection at once.
Every process looks at `pg_stat_activity` each POLL_SECONDS; a process missing for GONE_SECONDS,
once the watcher's own connection is SETTLE_SECONDS old (after a database restart, which drops
every connection, each process has that long to reconnect), has its pages removed from the
directory and its calls ended (PageRelay.processes_gone). A process whose LISTEN connection comes
back writes its pages again.

Each write of the directory carries its own word to every process, in the same statement (`changed`:
the person's tool list may answer otherwise; `pages`: which page is first, or what it shows, may
differ), so both commit or neither. That lets each process keep what `first_page` read (an agent's
every call asks it) in memory: a person's entry is forgotten when the word for them is heard, when
this process writes, and all of them when processes go; it is kept only while this process's
LISTEN connection is up and its thread comes round (whatever was said while it was down is lost,
and a path gone silent hears nothing without breaking: until it is back `first_page` reads the
table each time, and starts afresh then). A read that began before a
forgetting of theirs is not kept (`generation`). Everything else reads the table.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import secrets
import threading
import time
from typing import Any

from ...errors import DatabaseError
from ..database import Database
from .direct import Peers, folder_of
from .relay import PageLink, PageRelay

log = logging.getLogger("reactor")
CHANNEL = "reactor_agent_pages"
APPLICATION = "reactor-bus:"  # + the process's name: the application_name of its LISTEN connection
POLL_SECONDS = 1.0
GONE_SECONDS = 2.5  # missing this long from pg_stat_activity: the process died
# Nobody is declared gone in the first seconds of the watcher's own connection: after a database
# restart every process reconnects, and one that takes longer than the others is not dead.
SETTLE_SECONDS = 5.0
# first_page's memory is used only while the listening thread has come round within this long: a
# connection stuck without an error (a path to the database gone silent) hears nothing meanwhile.
HEARD_WITHIN = 2 * POLL_SECONDS
# The LISTEN connection notices a silent path within seconds, not TCP's quarter of an hour.
KEEPALIVE: dict[str, Any] = {
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 10_000,
}
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
    "ALTER TABLE agent_pages ADD COLUMN route TEXT NOT NULL DEFAULT ''",
]
SAVE = (
    "INSERT INTO agent_pages (id, username, process, title, url, active_at, seen_at, tools, route) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
    "active_at = excluded.active_at, seen_at = excluded.seen_at, tools = excluded.tools, "
    "title = excluded.title, route = excluded.route RETURNING username"
)
CHANGED = "changed"  # a person's pages changed, and their tool list may answer otherwise
MOVED = "pages"  # a person's pages changed (which is first, or what it shows): not their tools


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
        self.peers: Peers | None = None  # direct links to this host's other processes
        self.loop_thread = 0
        # What first_page read, by person, while `listening` (module docstring). Each forgetting
        # is one more `generation`, noted by person (everyone's: `forgot_all`): a read begun
        # before the person's latest is not kept.
        self.firsts: dict[str, PageLink | None] = {}
        self.heard_at = -math.inf  # when the listening thread last came round (time.monotonic)
        self.generation = self.forgot_all = 0
        self.forgot: dict[str, int] = {}
        self.lock = threading.Lock()

    # The directory

    def pages_of(self, username: str) -> list[PageLink]:
        rows = self.database.statement(
            "SELECT id, username, process, title, url, active_at, tools, route "
            "FROM agent_pages WHERE username = ?",
            (username,),
        )
        return [
            PageLink(
                r["id"],
                r["username"],
                r["title"],
                r["url"],
                r["process"],
                r["active_at"],
                json.loads(r["tools"]),
                r["route"],
            )
            for r in rows
        ]

    def first_page(self, username: str) -> PageLink | None:
        """The person's most recently active page, without its tools (a call needs only where
        the page is; reading and decoding every tool's schema took a tenth of a call's time).
        From memory when read since the directory last changed for them (module docstring): the
        read cost an agent's call a twentieth of its process's time, and as much of PostgreSQL's."""
        fresh = time.monotonic() - self.heard_at < HEARD_WITHIN  # the listening is not stuck
        if fresh and username in self.firsts:
            return self.firsts[username]
        generation = self.generation
        rows = self.database.statement(
            "SELECT id, username, process, title, url, active_at, route FROM agent_pages "
            "WHERE username = ? ORDER BY active_at DESC, id LIMIT 1",
            (username,),
        )
        page = None
        if rows:
            row = rows[0]
            page = PageLink(
                row["id"],
                row["username"],
                row["title"],
                row["url"],
                row["process"],
                row["active_at"],
                route=row["route"],
            )
        with self.lock:
            forgotten = max(self.forgot_all, self.forgot.get(username, 0))
            if forgotten <= generation and fresh and self.listening.is_set():
                self.firsts[username] = page
        return page

    def save(self, page: PageLink, *, changed: bool = True) -> None:
        """Write the page's row and tell every process (`changed`: the person's tool list may
        answer otherwise; else only which page is first, or what it shows)."""
        values = (
            page.id,
            page.username,
            page.process,
            page.title,
            page.url,
            page.active_at,
            time.time(),
            json.dumps(page.tools),
            page.route,
        )
        kind = CHANGED if changed else MOVED
        try:
            self.database.statement(announced(SAVE, kind), (*values, self._sender()))
        finally:  # a write that committed before its answer was lost changed the directory too
            self._forget(page.username)

    def remove(self, page: PageLink) -> None:
        """The page leaves the directory; every process is told (if it was there)."""
        try:
            self.database.statement(
                announced("DELETE FROM agent_pages WHERE id = ? RETURNING username", CHANGED),
                (page.id, self._sender()),
            )
        finally:
            self._forget(page.username)

    def _sender(self) -> str:
        return self.relay.process if self.relay is not None else ""

    def _forget(self, username: str | None = None) -> None:
        """The person's first page (everyone's: None) is read from the table again."""
        with self.lock:
            self.generation += 1
            if username is None:
                self.firsts.clear()
                self.forgot.clear()
                self.forgot_all = self.generation
            else:
                self.firsts.pop(username, None)
                self.forgot[username] = self.generation

    def _hearing(self, hearing: bool) -> None:
        """The LISTEN connection is up (every change is heard from now on) or down (none is):
        first_page starts afresh, or keeps nothing until it is back."""
        if hearing:
            self._forget()
            self.listening.set()
        else:
            self.listening.clear()
            self._forget()

    # Messages

    def send(self, process: str, message: dict[str, Any]) -> None:
        """To one process by its name, or to every other with "*": to one on this host by its
        direct link when sent from the loop (server/agents/direct.py), else by NOTIFY, delivered
        when this commits."""
        if self.relay is None:
            # not started (an app called without its lifespan): no process listens for this one
            return
        peers = self.peers
        if process != "*" and peers is not None and threading.get_ident() == self.loop_thread:
            if peers.send(process, message):
                return
        self._notify(process, message)

    def _notify(self, process: str, message: dict[str, Any]) -> None:
        assert self.relay is not None
        envelope: dict[str, Any] = {"to": process, "from": self.relay.process}
        channel = CHANNEL if process == "*" else channel_of(process)
        body = json.dumps(message, ensure_ascii=False)
        if len(body.encode()) <= INLINE_BYTES:
            envelope["message"] = message
            notify = json.dumps(envelope, ensure_ascii=False)
            self.database.statement("SELECT pg_notify(?, ?)", (channel, notify))
            return
        envelope["stored"] = secrets.token_hex(8)
        with self.database.transaction() as db:  # the notification names a row it commits with
            db.execute(
                "INSERT INTO agent_messages (id, body, sent_at) VALUES (?, ?, ?)",
                (envelope["stored"], body, time.time()),
            )
            db.execute(
                "SELECT pg_notify(?, ?)", (channel, json.dumps(envelope, ensure_ascii=False))
            )

    def alive(self, process: str) -> bool:
        """Whether the process is running: its LISTEN connection is open (PostgreSQL drops the
        connection of a process that dies, even by SIGKILL)."""
        return bool(
            self.database.statement(
                "SELECT 1 FROM pg_stat_activity WHERE application_name = ?",
                (APPLICATION + process,),
            )
        )

    def start(self, relay: PageRelay) -> None:
        """Listen for this process's messages, in a thread, until `stop`."""
        self.relay, self.loop = relay, asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        peers = Peers(
            folder_of(self.database.target),
            relay.process,
            relay.heard,
            lambda process, message: self._notify(process, message),
        )
        self.peers = peers if peers.start() else None
        self.stopping.clear()
        self.thread = threading.Thread(target=self._listen, name="reactor-page-bus", daemon=True)
        self.thread.start()
        if not self.listening.wait(10):
            self.stop()
            raise DatabaseError("The page bus could not LISTEN on the database.")

    def stop(self) -> None:
        if self.peers is not None:
            self.peers.stop()
            self.peers = None
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(5)
        self._hearing(False)

    def _listen(self) -> None:
        try:
            self._listen_until_stopped()
        finally:  # stopped, or a fault nobody expected: nothing is heard any more
            self._hearing(False)

    def _listen_until_stopped(self) -> None:
        import psycopg  # the database layer has made sure it is installed

        assert self.relay is not None
        name = APPLICATION + self.relay.process
        connected_before = False
        while not self.stopping.is_set():
            try:
                with psycopg.connect(
                    self.database.target,
                    autocommit=True,
                    connect_timeout=10,
                    application_name=name,
                    **KEEPALIVE,
                ) as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    connection.execute(f'LISTEN "{channel_of(self.relay.process)}"')
                    if connected_before:
                        self._save_own_pages()  # another process may have taken it for dead
                    connected_before = True
                    self._hearing(True)
                    watch = ProcessWatch(time.monotonic())
                    while not self.stopping.is_set():
                        self.heard_at = time.monotonic()
                        for notice in connection.notifies(timeout=POLL_SECONDS / 2, stop_after=50):
                            try:
                                self._heard(notice.payload)
                            except Exception:  # one bad message must not stop the listening
                                log.exception("The page bus could not read a message")
                        if watch.due(time.monotonic()):
                            self._watch(connection, watch)
            except (psycopg.Error, DatabaseError):
                # The database restarted or the connection dropped: listen again (what was sent
                # meanwhile is lost; its callers end at their limit, or when the page goes).
                self._hearing(False)
                self.stopping.wait(POLL_SECONDS)

    def _watch(self, connection: Any, watch: ProcessWatch) -> None:
        """Which processes are alive; the pages of those gone removed, their calls ended."""
        live = {
            row[0].removeprefix(APPLICATION)
            for row in connection.execute(
                "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE %s",
                (APPLICATION + "%",),
            )
        }
        listed = {row[0] for row in connection.execute("SELECT DISTINCT process FROM agent_pages")}
        gone = watch.gone(live, listed | self._depended_on(), time.monotonic())
        if not gone:
            return
        log.warning("The server processes %s stopped; their pages' links are gone", sorted(gone))
        # every process is told, also one that never saw them (it may have read their pages)
        deleted = "DELETE FROM agent_pages WHERE process = ANY(%s) RETURNING username"
        connection.execute(announced(deleted, CHANGED, "%s"), (sorted(gone), self._sender()))
        self._forget()
        relay, loop = self.relay, self.loop
        if relay is not None and loop is not None:
            loop.call_soon_threadsafe(relay.processes_gone, gone)

    def _depended_on(self) -> set[str]:
        """The processes this one's calls depend on (those waiting on its pages' answers, those
        holding the pages it waits on), read on the relay's loop: watched even if never seen."""
        relay, loop = self.relay, self.loop
        if relay is None or loop is None:
            return set()

        async def read() -> set[str]:
            return relay.depended_on()

        try:
            return asyncio.run_coroutine_threadsafe(read(), loop).result(POLL_SECONDS)
        except Exception:  # the loop is busy or stopping: the next poll asks again
            return set()

    def _save_own_pages(self) -> None:
        """After a broken connection: this process's pages as they are now, no more, no fewer
        (another process may have taken it for dead; a page may have left meanwhile)."""
        relay = self.relay
        if relay is None:
            return
        pages = list(relay.pages.values())
        self.database.statement(
            announced(
                "DELETE FROM agent_pages WHERE process = ? AND id <> ALL(?) RETURNING username",
                CHANGED,
            ),
            (relay.process, [p.id for p in pages], relay.process),
        )
        for page in pages:
            self.save(page)

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
                # a broadcast is read by every process: the sweep of old rows takes it
                gone = envelope["stored"] if to != "*" else ""
                db.execute(
                    "DELETE FROM agent_messages WHERE id = ? OR sent_at < ?",
                    (gone, time.time() - 600),
                )
            message = json.loads(row["body"]) if row is not None else None
        if not isinstance(message, dict):
            return
        if message.get("type") in (CHANGED, MOVED) and isinstance(message.get("username"), str):
            self._forget(message["username"])  # here, at once: before the loop's next read
            if message["type"] == MOVED:
                return
        loop.call_soon_threadsafe(relay.heard, message)


def announced(change: str, kind: str, mark: str = "?") -> str:
    """`change` (a write of agent_pages, RETURNING username) and its word to every process, for
    each person whose pages it changed, in one statement: the two commit together, or neither.
    `mark` is the placeholder of the sender's name, after the change's own."""
    return (
        f"WITH done AS ({change}) SELECT pg_notify('{CHANNEL}', json_build_object('to', '*', "
        f"'from', {mark}::text, 'message', json_build_object('type', '{kind}', 'username', "
        "username))::text) FROM (SELECT DISTINCT username FROM done) AS people"
    )


def channel_of(process: str) -> str:
    """The channel of the messages to one process (its name: 8 hex digits, relay.py)."""
    return f"{CHANNEL}_{process}"


class ProcessWatch:
    """When each process was first missed from the live connections, made anew with each watcher
    connection: a process is gone once missed for GONE_SECONDS of one unbroken connection."""

    def __init__(self, since: float) -> None:
        self.since = self.next_poll = since
        self.known: set[str] = set()
        self.missed: dict[str, float] = {}

    def due(self, now: float) -> bool:
        if now < self.next_poll:
            return False
        self.next_poll = now + POLL_SECONDS
        return True

    def gone(self, live: set[str], listed: set[str], now: float) -> set[str]:
        self.known |= live | listed
        for process in live:
            self.missed.pop(process, None)
        gone = set()
        settled = now - self.since >= SETTLE_SECONDS  # the others have had time to reconnect
        for process in self.known - live:
            if now - self.missed.setdefault(process, now) >= GONE_SECONDS and settled:
                gone.add(process)
        self.known -= gone
        for process in gone:
            self.missed.pop(process, None)
        return gone
