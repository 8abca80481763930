"""What a database fault costs a site: the requests in flight, no more. A PostgreSQL restarted or
stopped under a real server gives JSON 503s with Retry-After and a sentence (never a plain-text
500, in a middleware, a route or a WebSocket's handshake), the pool's dead connections are
replaced, and the site answers normally within 2 s of the database's return, with every
acknowledged write kept; a server process killed mid-loop loses no acknowledged write either.
/healthz and /readyz say how the process is. The restart tests run a PostgreSQL of their own: the
session's shared one is never stopped."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from contextlib import ExitStack
from typing import Any

import httpx
import psycopg
import pytest
from conftest import bearer, start_server, stop_server
from starlette.routing import Route
from websockets.exceptions import ConnectionClosedError, InvalidStatus
from websockets.sync.client import connect

from postgres import SKIP_REASON, Cluster, postgres_bin
from reactor.errors import DatabaseUnavailable
from reactor.plugin_spec import PluginSpec
from reactor.server.database import Database
from test_many_processes import serve, sign_in

PASSWORD = "s3cret-pw"  # trust authentication ignores it: here to be looked for in logs
DOWN = "The site's database is not answering; try again in a few seconds."
BACK_WITHIN = 2.0  # seconds from the database's return to the site answering normally


@pytest.fixture(scope="module")
def own_cluster():
    """A PostgreSQL these tests may restart and stop."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip(SKIP_REASON)
    cluster = Cluster(bin_dir)
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def served(own_cluster, tmp_path):
    """The demo's app on loopback over a new database of `own_cluster`, its URL carrying a
    password."""
    database = own_cluster.database().replace("postgres@", f"postgres:{PASSWORD}@")
    live = start_server(tmp_path / "data", seed_demo=True, database=database)
    yield live, database
    stop_server(live)


def deck(id: str) -> dict[str, Any]:
    return {"id": id, "title": id, "slides": [{"title": "One", "body": id}]}


def assert_json_refusal(answer: httpx.Response) -> None:
    """A 503 as the site answers a database fault: JSON, a sentence, Retry-After."""
    assert answer.status_code == 503, (answer.status_code, answer.text[:200])
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"] == DOWN
    assert int(answer.headers["retry-after"]) > 0


def stored_ids(database: str) -> set[str]:
    with psycopg.connect(database) as connection:
        return {row[0] for row in connection.execute("SELECT id FROM decks")}


def backend_pid(database: Database) -> int:
    with database.transaction() as db:
        return db.execute("SELECT pg_backend_pid()").fetchone()[0]


def end_session(admin_url: str, pid: int) -> None:
    """What a restart does to one session: ended by the server, gone when this returns."""
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))


def test_pooled_connections_a_restart_ended_are_replaced_before_anyone_uses_them(own_cluster):
    database = Database(own_cluster.database())
    try:
        with ExitStack() as held:  # four transactions at once: four connections, then pooled
            for _ in range(4):
                held.enter_context(database.transaction()).execute("SELECT 1")
        pooled = database.backend.idle.qsize()
        own_cluster.restart()
        with database.transaction() as db:
            assert db.execute("SELECT 1").fetchone()[0] == 1
        assert pooled == 4 and database.backend.idle.qsize() == 1  # the dead ones were dropped
    finally:
        database.close()


def test_a_first_statement_on_a_dead_connection_runs_again_on_a_new_one(postgres_cluster):
    url = postgres_cluster.database()
    database = Database(url)
    database.migrate("things", ["CREATE TABLE things (id TEXT PRIMARY KEY)"])
    try:
        pid = backend_pid(database)  # the connection the next transaction takes from the pool
        with database.transaction() as db:
            end_session(url, pid)  # after it was taken, before its first statement
            db.execute("INSERT INTO things (id) VALUES ('a')")
            assert db.execute("SELECT pg_backend_pid()").fetchone()[0] != pid
        assert backend_pid(database) != pid
        with database.transaction() as db:
            assert [r["id"] for r in db.execute("SELECT id FROM things")] == ["a"]
    finally:
        database.close()


def test_a_transaction_whose_connection_dies_after_its_first_statement_is_never_repeated(
    postgres_cluster,
):
    url = postgres_cluster.database()
    database = Database(url)
    database.migrate("things", ["CREATE TABLE things (id TEXT PRIMARY KEY)"])
    try:
        with pytest.raises(DatabaseUnavailable), database.transaction() as db:
            db.execute("INSERT INTO things (id) VALUES ('a')")
            end_session(url, db.execute("SELECT pg_backend_pid()").fetchone()[0])
            db.execute("INSERT INTO things (id) VALUES ('b')")
        with database.transaction() as db:
            assert db.execute("SELECT COUNT(*) FROM things").fetchone()[0] == 0
    finally:
        database.close()


def test_a_restart_during_writes_costs_only_the_writes_in_flight(served, own_cluster, caplog):
    live, database = served
    caplog.set_level(logging.WARNING, logger="reactor.server")
    headers = bearer(live, "ada")
    answers: list[tuple[float, str, httpx.Response]] = []
    acknowledged, stop = threading.Semaphore(0), threading.Event()

    def write(writer: int) -> None:
        with httpx.Client(base_url=live.url, headers=headers, timeout=30) as client:
            for n in range(5000):  # bounded; `stop` ends it sooner
                if stop.is_set():
                    return
                id = f"w{writer}-{n}"
                started = time.monotonic()
                answer = client.put(f"/api/decks/{id}", json=deck(id))
                answers.append((started, id, answer))
                if answer.status_code < 300:
                    acknowledged.release()

    writers = [threading.Thread(target=write, args=(w,)) for w in range(2)]
    for thread in writers:
        thread.start()
    try:
        for _ in range(20):  # the loop is writing
            assert acknowledged.acquire(timeout=30)
        own_cluster.restart()
        back = time.monotonic()  # pg_ctl -w: it accepts connections again
        while sum(started > back + BACK_WITHIN for started, _, _ in answers) < 10:
            assert time.monotonic() < back + 30, "the writes stopped"
            acknowledged.acquire(timeout=1)
    finally:
        stop.set()
        for thread in writers:
            thread.join(60)

    refused = [answer for _, _, answer in answers if answer.status_code >= 300]
    for answer in refused:
        assert_json_refusal(answer)
    kept = {id for _, id, answer in answers if answer.status_code < 300}
    assert kept <= stored_ids(database)  # every acknowledged write is there
    # no write after the return meets a connection the restart ended: the site is back at once
    since_back = [answer.status_code for started, _, answer in answers if started >= back]
    assert all(status < 300 for status in since_back)
    assert sum(started < back + BACK_WITHIN for started, _, _ in answers if started >= back) > 0
    assert httpx.get(f"{live.url}/").status_code == 200
    assert httpx.get(f"{live.url}/readyz").json()["status"] == "ready"
    # each refusal logged once, in one line, and never the password
    logged = [r.getMessage() for r in caplog.records if r.name == "reactor.server"]
    assert len(logged) == len(refused)
    assert all("\n" not in line and PASSWORD not in line for line in logged)


def test_an_idle_site_answers_its_first_requests_after_a_restart(served, own_cluster):
    # The case: nobody used the site while PostgreSQL restarted, so every pooled
    # connection the restart ended was still in the pool, and the next requests met them.
    live, _ = served
    headers = bearer(live, "ada")
    with httpx.Client(base_url=live.url, headers=headers, timeout=30) as client:
        assert client.put("/api/decks/before", json=deck("before")).status_code == 201
        own_cluster.restart()
        assert client.get("/").status_code == 200
        assert client.put("/api/decks/after", json=deck("after")).status_code == 201
        assert client.get("/readyz").status_code == 200


def test_while_the_database_is_down_the_site_answers_json_and_readyz_says_so(served, own_cluster):
    live, database = served
    headers = bearer(live, "ada")
    link = live.url.replace("http://", "ws://") + "/api/agent-pages/link"
    with (
        httpx.Client(base_url=live.url, timeout=30) as client,
        connect(link, additional_headers=headers, open_timeout=30) as page,
    ):
        ready = client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json() == {"status": "ready", "checks": {"database": "ok", "runtime": "ok"}}
        assert json.loads(page.recv(timeout=30))["type"] == "hello"
        own_cluster.halt()
        try:
            assert client.get("/healthz").json() == {"status": "ok"}
            not_ready = client.get("/readyz")
            assert not_ready.status_code == 503 and int(not_ready.headers["retry-after"]) > 0
            said = not_ready.json()
            assert said["status"] == "not ready" and said["checks"]["runtime"] == "ok"
            assert said["checks"]["database"] == said["error"] == "The database is not answering."
            assert PASSWORD not in not_ready.text and "127.0.0.1" not in not_ready.text
            # a route, the plugin switches' middleware (every request), a WebSocket's handshake
            assert_json_refusal(client.put("/api/decks/down", json=deck("down"), headers=headers))
            assert_json_refusal(client.get("/"))
            with (
                pytest.raises(InvalidStatus) as handshake,
                connect(link, additional_headers=headers, open_timeout=30),
            ):
                pass
            refusal = handshake.value.response
            assert refusal.status_code == 503 and json.loads(refusal.body)["error"] == DOWN
            # a page's link opened before: its next message meets the fault; closed, "try later"
            page.send(json.dumps({"type": "active"}))
            with pytest.raises(ConnectionClosedError) as closed:
                page.recv(timeout=30)
            assert closed.value.rcvd is not None
            assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1013, DOWN)
        finally:
            own_cluster.resume()
        back = time.monotonic()
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() - back < BACK_WITHIN
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/").status_code == 200
        assert client.put("/api/decks/up", json=deck("up"), headers=headers).status_code == 201
    assert "up" in stored_ids(database)


def test_a_quiet_page_link_whose_recheck_meets_the_fault_is_closed_to_link_again(
    served, own_cluster, monkeypatch
):
    from reactor.server.agents import mcp

    monkeypatch.setattr(mcp, "RECHECK_SECONDS", 0.3)  # the session's recheck, every 15 s else
    live, database = served
    link = live.url.replace("http://", "ws://") + "/api/agent-pages/link"
    with connect(link, additional_headers=bearer(live, "ada"), open_timeout=30) as page:
        assert json.loads(page.recv(timeout=30))["type"] == "hello"
        own_cluster.halt()
        try:
            with pytest.raises(ConnectionClosedError) as closed:
                page.recv(timeout=10)  # the page says nothing: the server's own check meets it
        finally:
            own_cluster.resume()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013


def test_a_server_process_killed_mid_loop_loses_no_acknowledged_write(tmp_path, postgres_cluster):
    database = postgres_cluster.database()
    started = [serve(tmp_path, database, name) for name in ("a", "b")]
    (doomed, doomed_url), (_, survivor_url) = started
    token = sign_in(survivor_url, "ada").json()["token"]
    answers: list[tuple[str, str, int | None]] = []  # (server, deck, status; None: no answer)
    acknowledged, killed = threading.Semaphore(0), threading.Event()

    def write() -> None:
        with httpx.Client(headers={"authorization": f"Bearer {token}"}, timeout=30) as client:
            for n in range(200):
                url = (doomed_url, survivor_url)[n % 2]
                if url == doomed_url and killed.is_set():
                    continue
                try:
                    status = client.put(f"{url}/api/decks/k-{n}", json=deck(f"k-{n}")).status_code
                except httpx.TransportError:
                    status = None
                answers.append((url, f"k-{n}", status))
                if status is not None and status < 300:
                    acknowledged.release()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for _ in range(40):
            assert acknowledged.acquire(timeout=30)
        os.kill(doomed.pid, signal.SIGKILL)  # while the writer writes: no goodbye
        doomed.wait(timeout=30)
        killed.set()
        writer.join(120)
        assert not writer.is_alive()
    finally:
        for process, _ in started:
            process.kill()
            process.wait(timeout=30)
            process.stdout.close()
    kept = {id for _, id, status in answers if status is not None and status < 300}
    assert len(kept) >= 40 and kept <= stored_ids(database)
    survivor = [status for url, _, status in answers if url == survivor_url]
    assert len(survivor) == 100 and all(status == 201 for status in survivor)


class BrokenHalf:
    """A plugin's server half with a bug: its route raises what nothing answers."""

    def setup(self, context: Any, *, seed: bool) -> None:
        pass

    def routes(self, context: Any) -> list[Route]:
        async def broken(request: Any) -> Any:
            return {}["missing"]

        return [Route("/api/broken", broken, methods=["GET"])]


def test_a_bug_is_a_json_500_with_a_sentence_and_its_traceback_logged_once(tmp_path, caplog):
    live = start_server(
        tmp_path, plugins=[PluginSpec(name="broken", server=BrokenHalf)], seed_demo=False
    )
    try:
        answer = httpx.get(f"{live.url}/api/broken")
    finally:
        stop_server(live)
    assert answer.status_code == 500 and answer.headers["content-type"] == "application/json"
    assert answer.json()["error"].startswith("Something went wrong on the server; try again")
    failures = [r for r in caplog.records if r.exc_info]
    assert len(failures) == 1 and failures[0].exc_info[0] is KeyError


def test_a_locked_sqlite_file_is_a_json_503_saying_to_try_again(tmp_path):
    live = start_server(tmp_path / "data", seed_demo=True)
    try:
        headers = bearer(live, "ada")
        store = live.app.state.context.database
        store.close()  # its open connections wait 10 s for a lock; new ones wait less
        store.backend.busy_timeout = 0.05
        holder = lock_sqlite(tmp_path / "data" / "reactor.sqlite3")
        try:
            answer = httpx.put(f"{live.url}/api/decks/locked", json=deck("locked"), headers=headers)
        finally:
            holder.rollback()
            holder.close()
        assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
        assert answer.json()["error"] == (
            "The database is busy with other changes; try again in a moment."
        )
        again = httpx.put(f"{live.url}/api/decks/locked", json=deck("locked"), headers=headers)
        assert again.status_code == 201
    finally:
        stop_server(live)


def lock_sqlite(path: Any) -> Any:
    """Another program holding the SQLite file's write lock."""
    import sqlite3

    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    return holder
