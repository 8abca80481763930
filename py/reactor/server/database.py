"""The server's database, one layer over two backends: the embedded SQLite file (the default) or
a PostgreSQL server (`reactor serve --database postgresql://…`), for several server processes.

Every store writes its SQL once, in SQLite's spelling that PostgreSQL also reads: `?` or `:name`
parameters, `INSERT … ON CONFLICT`, rows read by column name or position. This module is the one
place that knows the difference: it rewrites parameters for psycopg, maps the few column types
that differ (BLOB, REAL, INTEGER) when a migration step runs on PostgreSQL, and turns each
driver's errors into `UniqueViolation`, `DatabaseBusy` and `DatabaseUnavailable`.

A PostgreSQL server that restarts ends every pooled connection, which the pool only learns when it
next uses one. So a connection taken from the pool is dropped when it has anything to read (an idle
connection is spoken to only to be ended), and a transaction whose first statement finds its
connection dead starts again, once, on a new one (the pool's other idle connections dropped too):
nothing had run on the dead one, so nothing can run twice. A failure after the first statement
is the caller's DatabaseUnavailable and is never repeated here (a commit that failed may have
committed all the same).

Each owner of tables (auth, plugin records, each server plugin) keeps an ordered list of schema
steps; `migrate` runs the steps a database has not had yet, each in its own transaction, and
records how far it got in `schema_versions` (one row per owner: plugins migrate independently,
which one `PRAGMA user_version` per file could not say). A step is never edited once shipped.

Why psycopg with this thin layer rather than SQLAlchemy Core: the stores' SQL is ~70 plain
statements that both databases already read; what differs is four spellings and two error kinds,
which fit here, while a query builder would have rewritten every statement for no behaviour.
"""

from __future__ import annotations

import queue
import re
import select
import sqlite3
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import DatabaseBusy, DatabaseError, DatabaseUnavailable, UniqueViolation

VERSIONS = (
    "CREATE TABLE IF NOT EXISTS schema_versions (owner TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# the advisory lock an `immediate` PostgreSQL transaction takes, as SQLite's writer lock
WRITE_LOCK = 7_355_608
SETUP_LOCK = 7_355_609  # held by a server process while it migrates and seeds
# Connections kept open between transactions, per process. Fewer than the requests a process
# serves at once means opening (a backend forked, on PostgreSQL) and closing connections all the
# time: with 8, two processes serving 20 clients opened 50-75 per 1,000 requests, and PostgreSQL
# spent twice the CPU per request (bench/proxy.py).
IDLE_CONNECTIONS = 16
CONNECT_SECONDS = 10  # how long opening a PostgreSQL connection may take
# SQLSTATEs of a PostgreSQL that is not there: class 08 (the connection), and an administrator's
# shutdown, a crash's, or a server still starting. Without a SQLSTATE, the client lost the server.
UNAVAILABLE = ("08", "57P01", "57P02", "57P03")


class Database:
    """`Database(path)` is a SQLite file; `Database("postgresql://…")` a PostgreSQL database.
    `transaction()` commits on success and rolls back on any error, on both."""

    def __init__(self, target: str | Path) -> None:
        # what else hears of a failed transaction (server/metrics.py counts them)
        self.on_error: Callable[[DatabaseError], object] = lambda error: None
        self.target = str(target)
        self.backend: _Backend = (
            _Postgres(self.target) if is_postgres_url(self.target) else _SQLite(Path(target))
        )
        with self.transaction(immediate=True) as db:
            db.execute(VERSIONS)

    @property
    def kind(self) -> str:
        return self.backend.kind

    def __repr__(self) -> str:
        return f"Database({self.backend.shown!r})"

    @contextmanager
    def transaction(self, *, immediate: bool = False) -> Iterator[Transaction]:
        """A connection in one transaction. `immediate` takes the write lock at the start, for a
        read-then-write that must not race another writer, in this process or any other."""
        try:
            with self.backend.transaction(immediate) as connection:
                yield Transaction(connection, self.backend)
        except DatabaseError as error:
            self.on_error(error)
            raise

    def statement(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        """One statement, a transaction of its own, and its rows. On PostgreSQL it is sent alone
        (autocommit): no BEGIN and COMMIT to wait for, which in a one-statement transaction cost
        twice the statement (a read: 60 µs rather than 117, half the CPU on both sides)."""
        try:
            return self.backend.statement(sql, params)
        except DatabaseError as error:
            self.on_error(error)
            raise

    def setup_lock(self) -> Any:
        """Held while a server process migrates and seeds, so processes starting together on one
        PostgreSQL take turns (each seed checks what the one before it wrote). SQLite's file has
        one server process: nothing to wait for."""
        return self.backend.setup_lock()

    def migrate(self, owner: str, steps: Sequence[str]) -> None:
        """Run the steps of `owner` this database has not had, in order, one transaction each."""
        for number, step in enumerate(steps, start=1):
            with self.transaction(immediate=True) as db:
                row = db.execute(
                    "SELECT version FROM schema_versions WHERE owner = ?", (owner,)
                ).fetchone()
                if row is not None and row["version"] >= number:
                    continue
                for statement in _statements(step):
                    db.execute(self.backend.schema(statement))
                db.execute(
                    "INSERT INTO schema_versions (owner, version) VALUES (?, ?) "
                    "ON CONFLICT (owner) DO UPDATE SET version = excluded.version",
                    (owner, number),
                )

    def ping(self) -> None:
        """One `SELECT 1` through the pool; DatabaseError when the database does not answer."""
        with self.transaction() as db:
            db.execute("SELECT 1")

    def version(self, owner: str) -> int:
        with self.transaction() as db:
            row = db.execute(
                "SELECT version FROM schema_versions WHERE owner = ?", (owner,)
            ).fetchone()
        return 0 if row is None else row["version"]

    def close(self) -> None:
        self.backend.close()


def is_postgres_url(target: str) -> bool:
    return target.startswith(POSTGRES_SCHEMES)


class Transaction:
    """What a store writes through: `execute` and `executemany`, with the driver's errors as
    ours."""

    __slots__ = ("_backend", "_connection")

    def __init__(self, connection: Any, backend: _Backend) -> None:
        self._connection, self._backend = connection, backend

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        with self._backend.errors():
            return self._backend.execute(self._connection, sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any] | dict[str, Any]]) -> Any:
        with self._backend.errors():
            return self._backend.executemany(self._connection, sql, rows)


class _Backend:
    kind = ""
    shown = ""

    def transaction(self, immediate: bool) -> Any:
        raise NotImplementedError

    def execute(self, connection: Any, sql: str, params: Any) -> Any:
        return connection.execute(sql, params)

    def executemany(self, connection: Any, sql: str, rows: Any) -> Any:
        return connection.executemany(sql, rows)

    def statement(self, sql: str, params: Any) -> list[Any]:
        with self.transaction(False) as connection:
            return list(self.execute(connection, sql, params).fetchall())

    def schema(self, statement: str) -> str:
        return statement

    def errors(self) -> Any:
        raise NotImplementedError

    def setup_lock(self) -> Any:
        return nullcontext()

    def close(self) -> None:
        pass


class _SQLite(_Backend):
    """A few connections kept open between transactions (opening one costs 0.5 ms, a read
    5 µs), WAL so readers never wait on a writer."""

    kind = "sqlite"
    busy_timeout = 10.0  # seconds a statement waits for another writer before DatabaseBusy

    def __init__(self, path: Path) -> None:
        self.path, self.shown = path, str(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue(IDLE_CONNECTIONS)
        # an app dropped without close() still closes them
        weakref.finalize(self, _close_idle, self.idle)
        with self.transaction(False) as db:
            db.execute("PRAGMA journal_mode=WAL")

    def _connect(self) -> sqlite3.Connection:
        try:
            return self.idle.get_nowait()
        except queue.Empty:
            pass
        # One thread at a time uses a connection: it is taken from `idle` and given back after.
        connection = sqlite3.connect(self.path, timeout=self.busy_timeout, check_same_thread=False)
        connection.row_factory = sqlite3.Row
        connection.execute("PRAGMA foreign_keys=ON")
        return connection

    @contextmanager
    def transaction(self, immediate: bool) -> Iterator[sqlite3.Connection]:
        with self.errors():
            connection = self._connect()
            try:
                with connection:  # commits, or rolls back on an error
                    if immediate:
                        connection.execute("BEGIN IMMEDIATE")
                    yield connection
            except BaseException:
                connection.close()
                raise
            if connection.in_transaction:
                connection.close()
                return
            try:
                self.idle.put_nowait(connection)
            except queue.Full:
                connection.close()

    def close(self) -> None:
        _close_idle(self.idle)

    @contextmanager
    def errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError as error:
            if "UNIQUE" in str(error) or "PRIMARY KEY" in str(error):
                raise UniqueViolation(str(error)) from error
            raise DatabaseError(str(error)) from error
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                raise DatabaseBusy(str(error)) from error
            raise


class _Postgres(_Backend):
    """A few pooled psycopg connections; SQL rewritten from SQLite's spelling once per statement.
    A transaction runs on a `_Lease`: its connection, replaced if the first statement finds it
    dead."""

    kind = "postgresql"

    def __init__(self, url: str) -> None:
        try:
            import psycopg  # here: only a server given a PostgreSQL URL needs the driver
        except ImportError:
            raise DatabaseError(
                "A PostgreSQL database needs the psycopg driver: pip install 'reactor[postgres]'."
            ) from None
        self.psycopg, self.url = psycopg, url
        self.shown = shown_url(url)
        try:
            password = urlsplit(url).password
        except ValueError:
            password = None
        self.password = unquote(password) if password else ""
        self.idle: queue.LifoQueue[Any] = queue.LifoQueue(IDLE_CONNECTIONS)
        # an app dropped without close() still closes them
        weakref.finalize(self, _close_idle, self.idle)

    def _take(self) -> Any:
        """An idle connection that is still open, else a new one."""
        while True:
            try:
                connection = self.idle.get_nowait()
            except queue.Empty:
                return self._open()
            if _alive(connection):
                return connection
            connection.close()

    def _open(self) -> Any:
        try:
            return self.psycopg.connect(
                self.url, row_factory=_row_factory, connect_timeout=CONNECT_SECONDS
            )
        except self.psycopg.OperationalError as error:
            raise DatabaseUnavailable(
                f"The database at {self.shown} could not be reached: {self._said(error)}"
            ) from error

    @contextmanager
    def transaction(self, immediate: bool) -> Iterator[_Lease]:
        lease = _Lease(self._take())
        try:
            with self.errors():
                if immediate:
                    self.execute(lease, "SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,))
                yield lease
                lease.connection.commit()
        except BaseException:
            connection = lease.connection
            if not connection.closed:
                try:
                    connection.rollback()
                except self.psycopg.Error:
                    connection.close()
            raise
        finally:
            self._give_back(lease.connection)

    def statement(self, sql: str, params: Any) -> list[Any]:
        sql, values = _postgres_sql(sql), _postgres_params(params)

        def alone(connection: Any) -> list[Any]:
            connection.autocommit = True
            cursor = connection.execute(sql, values)
            return cursor.fetchall() if cursor.pgresult and cursor.pgresult.nfields else []

        lease = _Lease(self._take())
        try:
            with self.errors():
                return self._run(lease, alone)
        finally:
            self._give_back(lease.connection)

    def _give_back(self, connection: Any) -> None:
        if (
            connection.closed
            or connection.info.transaction_status != self.psycopg.pq.TransactionStatus.IDLE
        ):
            connection.close()
            return
        if connection.autocommit:  # back from `statement`: idle, so this cannot fail
            connection.autocommit = False
        try:
            self.idle.put_nowait(connection)
        except queue.Full:
            connection.close()

    def _run(self, lease: _Lease, statement: Any) -> Any:
        """`statement(connection)` on the lease's connection. The first statement of a transaction
        that finds the connection dead runs again on a new one: it, like everything before it in
        this transaction (nothing), never ran."""
        if lease.started:
            return statement(lease.connection)
        lease.started = True
        try:
            return statement(lease.connection)
        except self.psycopg.OperationalError:
            if not lease.connection.closed:
                raise  # the statement failed, not the connection
        # A restart ends every connection: the idle ones are as dead as this one.
        _close_idle(self.idle)
        lease.connection.close()
        lease.connection = self._open()
        return statement(lease.connection)

    @contextmanager
    def setup_lock(self) -> Iterator[None]:
        with self.psycopg.connect(
            self.url, autocommit=True, connect_timeout=CONNECT_SECONDS
        ) as holder:
            holder.execute("SELECT pg_advisory_lock(%s)", (SETUP_LOCK,))
            try:
                yield
            finally:
                holder.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))

    def execute(self, connection: Any, sql: str, params: Any) -> Any:
        statement, values = _postgres_sql(sql), _postgres_params(params)
        return self._run(connection, lambda c: c.execute(statement, values))

    def executemany(self, connection: Any, sql: str, rows: Any) -> Any:
        statement, values = _postgres_sql(sql), [_postgres_params(row) for row in rows]

        def run(c: Any) -> Any:
            cursor = c.cursor()
            cursor.executemany(statement, values)
            return cursor

        return self._run(connection, run)

    def schema(self, statement: str) -> str:
        return _postgres_schema(statement)

    @contextmanager
    def errors(self) -> Iterator[None]:
        errors = self.psycopg.errors
        try:
            yield
        except DatabaseError:
            raise  # ours already (a connection that could not be opened)
        except errors.UniqueViolation as error:
            raise UniqueViolation(self._said(error)) from error
        except (
            errors.SerializationFailure,
            errors.DeadlockDetected,
            errors.LockNotAvailable,
        ) as error:
            raise DatabaseBusy(self._said(error)) from error
        except self.psycopg.OperationalError as error:
            kind = DatabaseUnavailable if _unavailable(error) else DatabaseBusy
            raise kind(f"The database at {self.shown} failed: {self._said(error)}") from error
        except errors.IntegrityError as error:
            raise DatabaseError(self._said(error)) from error

    def _said(self, error: Exception) -> str:
        """The driver's message on one line, without the password, should it name it."""
        said = " ".join(str(error).split())
        return said.replace(self.password, "***") if self.password else said

    def close(self) -> None:
        _close_idle(self.idle)


class _Lease:
    """The connection one PostgreSQL transaction runs on, and whether a statement was sent on it."""

    __slots__ = ("connection", "started")

    def __init__(self, connection: Any) -> None:
        self.connection, self.started = connection, False


def shown_url(url: str) -> str:
    """A database URL as a log or an error may show it: never its password."""
    url = re.sub(r"//([^:@/]*):[^@/]*@", r"//\1:***@", url)
    return re.sub(r"(?i)(password=)[^&]*", r"\1***", url)


def _alive(connection: Any) -> bool:
    """Whether a pooled connection is still open. An idle connection has nothing to read: the
    server speaks to it unasked only to end it (a restart's "terminating connection", then the
    end of the socket), so one with anything to read is not used again."""
    if connection.closed:
        return False
    try:
        socket = connection.pgconn.socket
    except Exception:  # psycopg: the connection is gone
        return False
    if hasattr(select, "poll"):
        poll = select.poll()
        poll.register(socket, select.POLLIN)
        return not poll.poll(0)
    return not select.select([socket], [], [], 0)[0]


def _unavailable(error: Any) -> bool:
    state = getattr(error, "sqlstate", None)
    return state is None or state.startswith(UNAVAILABLE)


def _close_idle(idle: queue.LifoQueue[Any]) -> None:
    while True:
        try:
            idle.get_nowait().close()
        except queue.Empty:
            return


class Row(tuple):  # type: ignore[type-arg]
    """A PostgreSQL row read as sqlite3.Row is: by position, by column name, and as a mapping."""

    __slots__ = ()
    names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self.names)


def _row_factory(cursor: Any) -> Any:
    """The rows of the statement's columns, their names read from the result itself: psycopg's
    `description` makes an object of every column at each call (5% of a process's CPU under
    /mcp's load: bench/proxy.py --profile)."""
    result = cursor.pgresult
    if result is None or not result.nfields:
        return tuple
    return _row_type(tuple(result.fname(i) for i in range(result.nfields)))


@lru_cache(maxsize=256)
def _row_type(names: tuple[bytes, ...]) -> type[Row]:
    """One Row class per column list, made once: a statement's rows all share it."""
    columns = {name.decode(): i for i, name in enumerate(names)}
    return type("Row", (Row,), {"__slots__": (), "names": columns})


# Outside quotes: ? and :name parameters, and % (psycopg's own placeholder sign) as a literal.
_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?|(?<!:):([A-Za-z_]\w*)|%")


@lru_cache(maxsize=1024)
def _postgres_sql(sql: str) -> str:
    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "?":
            return "%s"
        if token == "%":
            return "%%"
        if match.group(1):
            return f"%({match.group(1)})s"
        return token.replace("%", "%%")  # a quoted literal: only its percent signs change

    return _TOKENS.sub(replace, sql)


def _postgres_params(params: Any) -> Any:
    # SQLite stores a bool as 0/1 in an INTEGER column; PostgreSQL refuses a boolean there.
    if isinstance(params, dict):
        return {k: int(v) if isinstance(v, bool) else v for k, v in params.items()}
    return [int(v) if isinstance(v, bool) else v for v in params]


_SCHEMA_TYPES = {"BLOB": "BYTEA", "REAL": "DOUBLE PRECISION", "INTEGER": "BIGINT"}
_SCHEMA_WORDS = re.compile(r"'(?:[^']|'')*'|\b(BLOB|REAL|INTEGER)\b")


def _postgres_schema(statement: str) -> str:
    """A migration step's column types in PostgreSQL's words: bytes, 8-byte floats (a timestamp in
    PostgreSQL's REAL would lose its seconds) and 8-byte integers, as SQLite stores them."""
    return _SCHEMA_WORDS.sub(
        lambda m: _SCHEMA_TYPES[m.group(1)] if m.group(1) else m.group(0), statement
    )


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
