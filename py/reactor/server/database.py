"""The server's SQLite file: one connection per call, WAL so readers never wait on a writer."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class Database:
    """A SQLite file; `transaction()` commits on success and rolls back on any error."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.transaction() as db:
            db.execute("PRAGMA journal_mode=WAL")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        connection = sqlite3.connect(self.path, timeout=10)
        connection.row_factory = sqlite3.Row
        connection.execute("PRAGMA foreign_keys=ON")
        try:
            with connection:
                yield connection
        finally:
            connection.close()

    def migrate(self, script: str) -> None:
        """Run idempotent DDL (CREATE TABLE IF NOT EXISTS ...)."""
        with self.transaction() as db:
            db.executescript(script)
