"""The server's SQLite file: one connection per call, WAL so readers never wait on a writer.

Each owner of tables (auth, plugin records, each server plugin) keeps an ordered list of schema
steps; `migrate` runs the steps a file has not had yet, each in its own transaction, and records
how far it got in `schema_versions`. A step is never edited once shipped: a change is a new step,
so a database made by an older version is brought forward instead of breaking.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

VERSIONS = "CREATE TABLE IF NOT EXISTS schema_versions (owner TEXT PRIMARY KEY, version INTEGER NOT NULL)"


class Database:
    """A SQLite file; `transaction()` commits on success and rolls back on any error."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.transaction() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(VERSIONS)

    @contextmanager
    def transaction(self, *, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection in one transaction. `immediate` takes the write lock at the start, for a
        read-then-write that must not race another writer (SQLite would refuse one of them)."""
        connection = sqlite3.connect(self.path, timeout=10)
        connection.row_factory = sqlite3.Row
        connection.execute("PRAGMA foreign_keys=ON")
        try:
            with connection:
                if immediate:
                    connection.execute("BEGIN IMMEDIATE")
                yield connection
        finally:
            connection.close()

    def migrate(self, owner: str, steps: Sequence[str]) -> None:
        """Run the steps of `owner` this file has not had, in order, one transaction each."""
        for number, step in enumerate(steps, start=1):
            with self.transaction(immediate=True) as db:
                row = db.execute("SELECT version FROM schema_versions WHERE owner = ?", (owner,)).fetchone()
                if row is not None and row["version"] >= number:
                    continue
                for statement in _statements(step):
                    db.execute(statement)
                db.execute("INSERT OR REPLACE INTO schema_versions (owner, version) VALUES (?, ?)", (owner, number))

    def version(self, owner: str) -> int:
        with self.transaction() as db:
            row = db.execute("SELECT version FROM schema_versions WHERE owner = ?", (owner,)).fetchone()
        return 0 if row is None else row["version"]


def _statements(script: str) -> list[str]:
    """The statements of a step, split where SQLite says a statement is complete."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return [s for s in statements if s.rstrip(";").strip()]
