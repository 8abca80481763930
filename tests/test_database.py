"""The database layer on both backends: one spelling of SQL, the same rows, errors and migrations
on the SQLite file and on a real PostgreSQL (a throwaway cluster, tests/postgres.py)."""

import sqlite3
import time

import pytest
from conftest import run_reactor

from reactor.errors import DatabaseBusy, DatabaseError, UniqueViolation
from reactor.server.database import Database

STEPS = [
    "CREATE TABLE things (id TEXT PRIMARY KEY, n INTEGER NOT NULL, at REAL NOT NULL, data "
    "BLOB, flag INTEGER)"
]


@pytest.fixture
def database(database_target):
    database = Database(database_target)
    database.migrate("things", STEPS)
    yield database
    database.close()


def test_rows_read_by_name_by_position_and_as_a_mapping(database):
    now = time.time()
    with database.transaction() as db:
        db.execute(
            "INSERT INTO things (id, n, at, data, flag) VALUES (?, ?, ?, ?, ?)",
            ("a", 2**40, now, b"\x00\xff", True),
        )
        db.executemany(
            "INSERT INTO things (id, n, at) VALUES (:id, :n, :at)", [{"id": "b", "n": 1, "at": now}]
        )
    with database.transaction() as db:
        row = db.execute("SELECT id, n, at, data, flag FROM things WHERE id = ?", ("a",)).fetchone()
        count = db.execute("SELECT COUNT(*) FROM things").fetchone()[0]
    assert (row["id"], row[1], row["at"], bytes(row["data"]), row["flag"]) == (
        "a",
        2**40,
        now,
        b"\x00\xff",
        1,
    )
    assert dict(zip(row.keys(), row, strict=True))["n"] == 2**40 and count == 2


def test_percent_and_colons_in_sql_are_text_not_parameters(database):
    with database.transaction() as db:
        db.execute("INSERT INTO things (id, n, at) VALUES ('100%: done', 1, 0)")
        db.execute("INSERT INTO things (id, n, at) VALUES (?, 2, 0)", ("50% off",))
        liked = [
            r["id"]
            for r in db.execute(
                "SELECT id FROM things WHERE id LIKE '%\\%%' ESCAPE '\\' ORDER BY id"
            )
        ]
        matched = db.execute(
            "SELECT id FROM things WHERE id LIKE ? ORDER BY id", ("%off",)
        ).fetchall()
    assert liked == ["100%: done", "50% off"] and [r["id"] for r in matched] == ["50% off"]


def test_a_repeated_key_is_a_unique_violation_and_the_transaction_leaves_nothing(database):
    with database.transaction() as db:
        db.execute("INSERT INTO things (id, n, at) VALUES ('a', 1, 0)")
    with pytest.raises(UniqueViolation), database.transaction() as db:
        db.execute("INSERT INTO things (id, n, at) VALUES ('b', 1, 0)")
        db.execute("INSERT INTO things (id, n, at) VALUES ('a', 2, 0)")
    with database.transaction() as db:
        assert [r["id"] for r in db.execute("SELECT id FROM things ORDER BY id")] == ["a"]


def test_any_error_rolls_the_whole_transaction_back_and_the_connection_serves_the_next(database):
    with pytest.raises(ZeroDivisionError), database.transaction() as db:
        db.execute("INSERT INTO things (id, n, at) VALUES ('a', 1, 0)")
        1 / 0  # noqa: B018
    with database.transaction() as db:
        assert db.execute("SELECT COUNT(*) FROM things").fetchone()[0] == 0
        db.execute(
            "INSERT INTO things (id, n, at) VALUES ('a', 1, 0) ON CONFLICT (id) DO UPDATE "
            "SET n = excluded.n"
        )
        db.execute(
            "INSERT INTO things (id, n, at) VALUES ('a', 5, 0) ON CONFLICT (id) DO UPDATE "
            "SET n = excluded.n"
        )
        assert db.execute("SELECT n FROM things").fetchone()["n"] == 5


def test_a_statement_alone_is_its_own_transaction_and_leaves_the_next_one_whole(database):
    written = database.statement(
        "INSERT INTO things (id, n, at) VALUES (?, ?, 0) RETURNING n", ("a", 7)
    )
    assert [row["n"] for row in written] == [7]
    assert database.statement("UPDATE things SET n = n + 1 WHERE id = ?", ("a",)) == []
    with pytest.raises(UniqueViolation):
        database.statement("INSERT INTO things (id, n, at) VALUES ('a', 1, 0)")
    # the pooled connection serves a transaction again, whole: its error takes all of it back
    with pytest.raises(ZeroDivisionError), database.transaction() as db:
        db.execute("INSERT INTO things (id, n, at) VALUES ('b', 1, 0)")
        1 / 0  # noqa: B018
    assert [(r["id"], r["n"]) for r in database.statement("SELECT id, n FROM things")] == [("a", 8)]


def test_a_second_process_sees_what_the_first_committed_and_runs_no_step_twice(
    database, database_target
):
    other = Database(database_target)  # what another server process opens
    other.migrate("things", STEPS)  # already there: nothing runs (a CREATE TABLE again would fail)
    with database.transaction() as db:
        db.execute("INSERT INTO things (id, n, at) VALUES ('a', 1, 0)")
    with other.transaction() as db:
        assert db.execute("SELECT n FROM things WHERE id = 'a'").fetchone()["n"] == 1
    other.migrate("things", [*STEPS, "ALTER TABLE things ADD COLUMN note TEXT NOT NULL DEFAULT ''"])
    assert database.version("things") == 2 and other.version("things") == 2
    with database.transaction() as db:
        assert db.execute("SELECT note FROM things").fetchone()["note"] == ""
    other.close()


def test_a_locked_sqlite_file_is_busy_not_an_error_of_the_statement(tmp_path):
    database = Database(tmp_path / "r.sqlite3")
    database.backend.busy_timeout = 0.05
    holder = sqlite3.connect(tmp_path / "r.sqlite3")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(DatabaseBusy, match="locked"), database.transaction(immediate=True):
            pass
    finally:
        holder.rollback()
        holder.close()


def test_an_unreachable_postgresql_says_where_without_the_password():
    from reactor.server.loopback import free_port

    with pytest.raises(DatabaseError) as raised:
        Database(f"postgresql://reactor:s3cret@127.0.0.1:{free_port()}/reactor")
    assert "could not be reached" in str(raised.value) and "s3cret" not in str(raised.value)
    assert "postgresql://reactor:***@127.0.0.1" in str(raised.value)


def test_serve_refuses_a_database_that_is_not_a_postgresql_url(tmp_path):
    done = run_reactor("serve", "--data", str(tmp_path), "--database", "mysql://x/y")
    assert (
        done.returncode == 2
        and "--database takes a postgresql:// URL, not 'mysql://x/y'" in done.stderr
    )
