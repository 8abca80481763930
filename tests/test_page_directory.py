"""Where an agent's call goes with several server processes on one PostgreSQL: each process keeps
the person's first page in memory (server/agents/bus.py), and a page linked, used, moved or gone
on any process is followed there as soon as the bus's word arrives; while a process's LISTEN
connection is down it reads the table each time.

Each `Process` is a relay and a bus as a server process makes them (its own pool, its own LISTEN
connection and thread), the pages linked through the relay as the page's WebSocket does."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from reactor.server.agents import bus as bus_module
from reactor.server.agents.bus import APPLICATION, PostgresPageBus
from reactor.server.agents.relay import PageLink, PageRelay
from reactor.server.database import Database


class Process:
    """One server process on the shared database; `statements` counts what it sends."""

    def __init__(self, url: str) -> None:
        self.database = Database(url)
        self.bus = PostgresPageBus(self.database)
        self.relay = PageRelay(self.bus)
        self.statements: list[str] = []
        sent = self.database.statement

        def counted(sql: str, params: Any = ()) -> list[Any]:
            self.statements.append(sql)
            return sent(sql, params)

        self.database.statement = counted  # type: ignore[method-assign]

    def first_page(self, username: str = "ada") -> PageLink | None:
        return self.relay.first_page(username)

    async def kept(self, username: str = "ada") -> PageLink | None:
        """The first page once it is answered from memory, no statement sent (a read that
        crossed the bus's word of a change is not kept: the next one is)."""
        page: PageLink | None = None

        def from_memory() -> bool:
            nonlocal page
            before = len(self.statements)
            page = self.relay.first_page(username)
            return len(self.statements) == before

        await until(from_memory)
        return page

    def end(self) -> None:
        self.bus.stop()
        self.database.close()


async def until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    """Wait until `condition()` holds, on the loop the buses hand their messages to."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s"
        await asyncio.sleep(0.01)


def on_processes(url: str, count: int, work: Callable[..., Any]) -> None:
    """`await work(*processes)` with `count` processes started on one loop, ended after."""

    async def run() -> None:
        processes = [Process(url) for _ in range(count)]
        try:
            for process in processes:
                process.bus.start(process.relay)
            await work(*processes)
        finally:
            for process in processes:
                process.end()

    asyncio.run(run())


@pytest.fixture
def url(postgres_cluster) -> str:
    return str(postgres_cluster.database())


def test_a_second_call_of_an_unchanged_directory_reads_no_sql(url):
    async def work(a: Process, b: Process) -> None:
        page = a.relay.connect("ada", "Notes", "http://reactor.test/")
        assert page is not None
        assert b.first_page() is not None and b.first_page().id == page.id  # type: ignore[union-attr]
        assert (await b.kept()).id == page.id  # type: ignore[union-attr]
        assert b.first_page("bob") is None
        assert (await b.kept("bob")) is None, "a person without pages is remembered too"

    on_processes(url, 2, work)


def test_a_page_linked_used_moved_or_gone_on_one_process_is_followed_on_the_other(url):
    async def work(a: Process, b: Process) -> None:
        def first_on_b() -> str | None:
            page = b.first_page()
            return page.id if page is not None else None

        old = a.relay.connect("ada", "Notes", "http://reactor.test/")
        assert old is not None and first_on_b() == old.id and (await b.kept()).id == old.id  # type: ignore[union-attr]

        new = a.relay.connect("ada", "Decks", "http://reactor.test/")  # the first at once
        assert new is not None
        await until(lambda: first_on_b() == new.id)
        assert (await b.kept()).id == new.id  # type: ignore[union-attr]

        a.relay.touch(old)  # the person uses the other page
        await until(lambda: first_on_b() == old.id)
        assert (await b.kept()).id == old.id  # type: ignore[union-attr]

        a.relay.locate(old, "Notes: groceries", "#/notes/groceries")  # what an agent reads of it
        await until(lambda: b.first_page().route == "#/notes/groceries")  # type: ignore[union-attr]
        assert (await b.kept()).title == "Notes: groceries"  # type: ignore[union-attr]

        a.relay.disconnect(old)
        await until(lambda: first_on_b() == new.id)
        assert (await b.kept()).id == new.id  # type: ignore[union-attr]

        a.relay.disconnect(new)
        await until(lambda: first_on_b() is None)
        assert (await b.kept()) is None

        assert (await b.kept("bob")) is None
        bobs = a.relay.connect("bob", "Bob's", "http://reactor.test/")  # a page after none
        assert bobs is not None
        await until(lambda: b.first_page("bob") is not None)

    on_processes(url, 2, work)


def test_a_page_linked_or_gone_on_the_process_itself_is_followed_at_once(url):
    async def work(a: Process) -> None:
        assert a.first_page() is None and (await a.kept()) is None
        page = a.relay.connect("ada", "Notes", "http://reactor.test/")
        assert page is not None and a.first_page().id == page.id  # type: ignore[union-attr]
        a.relay.disconnect(page)
        assert a.first_page() is None, "no wait for its own word, which it does not hear"

    on_processes(url, 1, work)


def test_while_the_bus_connection_is_down_the_first_page_is_read_from_the_table(url):
    async def work(a: Process, b: Process) -> None:
        own = b.relay.connect("ada", "Mine", "http://reactor.test/")  # b writes it again after
        older = a.relay.connect("ada", "Notes", "http://reactor.test/")
        newer = a.relay.connect("ada", "Decks", "http://reactor.test/")
        assert older is not None and newer is not None
        await until(lambda: b.first_page().id == newer.id)  # type: ignore[union-attr]
        assert (await b.kept()).id == newer.id  # type: ignore[union-attr]
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (APPLICATION + b.relay.process,),
            )
            await until(lambda: not b.bus.listening.is_set())
            # a change nobody announces: b could not have heard of it anyway
            admin.execute(
                "UPDATE agent_pages SET active_at = active_at + 100 WHERE id = %s", (older.id,)
            )
            before = len(b.statements)
            assert b.first_page().id == older.id  # type: ignore[union-attr]
            assert b.first_page().id == older.id  # type: ignore[union-attr]
            assert len(b.statements) - before == 2, "read from the table each time"
            assert not b.bus.listening.is_set(), "all this while the connection was down"
        await until(b.bus.listening.is_set)
        assert b.first_page().id == older.id and (await b.kept()).id == older.id  # type: ignore[union-attr]
        assert own is not None and [p.id for p in b.relay.pages_of("ada")][-1] == own.id

    on_processes(url, 2, work)


def test_the_pages_of_a_process_that_stopped_leave_the_first_page_of_the_others(url, monkeypatch):
    # The watch's seconds are not what this test is about (tests/test_relay_faults.py times them).
    monkeypatch.setattr(bus_module, "SETTLE_SECONDS", 0.5)
    monkeypatch.setattr(bus_module, "GONE_SECONDS", 0.5)

    async def work(a: Process, b: Process, c: Process) -> None:
        stays = a.relay.connect("ada", "Notes", "http://reactor.test/")
        goes = c.relay.connect("ada", "Decks", "http://reactor.test/")
        assert stays is not None and goes is not None
        for process in (a, b):
            await until(lambda p=process: p.first_page().id == goes.id)  # type: ignore[union-attr,misc]
            assert (await process.kept()).id == goes.id  # type: ignore[union-attr]
        c.bus.stop()  # as if killed: its LISTEN connection ends, its rows stay
        for process in (a, b):
            await until(lambda p=process: p.first_page().id == stays.id)  # type: ignore[union-attr,misc]

    on_processes(url, 3, work)


def test_while_the_bus_listens_stuck_without_an_error_the_first_page_is_read_from_the_table(url):
    """A path to the database gone silent leaves the LISTEN connection waiting, not broken: once
    the listening thread has not come round for HEARD_WITHIN, nothing is answered from memory."""
    stuck, released = threading.Event(), threading.Event()

    async def work(a: Process, b: Process) -> None:
        older = a.relay.connect("ada", "Notes", "http://reactor.test/")
        newer = a.relay.connect("ada", "Decks", "http://reactor.test/")
        assert older is not None and newer is not None
        await until(lambda: b.first_page().id == newer.id)  # type: ignore[union-attr]
        assert (await b.kept()).id == newer.id  # type: ignore[union-attr]

        def silent(connection: Any, watch: Any) -> None:  # as a query on a silent path waits
            stuck.set()
            released.wait(30)

        b.bus._watch = silent  # type: ignore[method-assign]
        await until(stuck.is_set)
        with psycopg.connect(url, autocommit=True) as admin:  # a change b cannot hear of now
            admin.execute(
                "UPDATE agent_pages SET active_at = active_at + 100 WHERE id = %s", (older.id,)
            )
        await until(lambda: b.first_page().id == older.id)  # type: ignore[union-attr]
        before = len(b.statements)
        b.first_page()
        assert len(b.statements) == before + 1, "read from the table while the listening is stuck"
        assert b.bus.listening.is_set(), "the connection never said it broke"
        released.set()

    try:
        on_processes(url, 2, work)
    finally:
        released.set()
