"""A real `reactor serve` for a test: the installed plugins on a free loopback port, a fresh data
folder (SQLite, or a PostgreSQL database the test names), users the test makes."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ReactorError

START_TIMEOUT_S = (
    120.0  # the first start on a machine makes Pyodide's memory snapshot (~10 s, more when busy)
)


SHARED = " (one reactor_server, and its users, serve every test of the session)."


class ServerStartError(ReactorError, RuntimeError):
    """`reactor serve` did not start; the message holds what it said."""


class UserExistsError(ReactorError, ValueError):
    """`reactor_server.user(name, …)` asked for a user that exists with other groups or another
    password; the message says how to get a new one."""


@dataclass(frozen=True)
class TestUser:
    """A user the test made: sign in with `name` and `password`, in the page or by `headers()`."""

    __test__ = False  # not a test class, whatever pytest thinks of its name

    name: str
    password: str
    groups: tuple[str, ...]
    server: ReactorServer = field(repr=False)

    def headers(self) -> dict[str, str]:
        """`Authorization: Bearer …` of a fresh session of this user, for HTTP clients."""
        import httpx

        answer = httpx.post(
            f"{self.server.url}/auth/sign-in",
            json={"username": self.name, "password": self.password},
        )
        if answer.status_code != 200:
            raise AssertionError(
                f"{self.name} could not sign in: {answer.status_code} {answer.text[:200]}"
            )
        return {"authorization": f"Bearer {answer.json()['token']}"}


class ReactorServer:
    """`reactor serve --port 0` over `data` (or `database`), running until `stop()`.

    `seed` adds the demo's data and users (ada, bob, eve); without it the database starts empty."""

    def __init__(
        self, data: Path, *, database: str = "", seed: bool = False, options: tuple[str, ...] = ()
    ) -> None:
        self.data, self.database = Path(data), database
        self.data.mkdir(parents=True, exist_ok=True)
        self._users: dict[str, TestUser] = {}  # by name: each made once, then the same
        self.log_path = self.data / "server.log"
        command = [
            sys.executable,
            "-m",
            "reactor",
            "serve",
            "--port",
            "0",
            "--data",
            str(self.data),
            *options,
        ]
        if database:
            command += ["--database", database]
        if not seed:
            command.append("--no-seed")
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.url = self._address()

    def _address(self) -> str:
        assert self.process.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.5)
            if ready:
                line = self.process.stdout.readline()
                if line.startswith("reactor is serving "):
                    return line.split()[3].rstrip("/")
                if not line:
                    break
            elif self.process.poll() is not None:
                break
        self.stop()
        raise ServerStartError(
            f"reactor serve did not start: {self.log()[-2000:] or 'it said nothing'}"
        )

    def user(
        self,
        name: str,
        *,
        password: str | None = None,
        groups: tuple[str, ...] | list[str] | None = None,
    ) -> TestUser:
        """The user `name`, made in the server's own database the first time it is asked for
        (password `<name>-password` unless given; no groups unless given), the same user each
        time after: the server, and so its users, may be shared by the whole session. Asking
        again with another password or other groups is a UserExistsError saying what to do."""
        from ..server.auth.sessions import Auth
        from ..server.database import Database

        wanted = None if groups is None else tuple(sorted(set(groups)))
        made = self._users.get(name)
        if made is None:
            store = Database(self.database or self.data / "reactor.sqlite3")
            try:
                auth = Auth(store, seed=False)
                made = _stored_user(self, auth, name, password)
                if made is None:
                    made = TestUser(name, password or f"{name}-password", wanted or (), self)
                    auth.create_user(name, made.password, made.groups)
            finally:
                store.close()
            self._users[name] = made
        if password is not None and password != made.password:
            raise UserExistsError(
                f"reactor_server.user({name!r}, password=…): {name!r} exists already with another "
                f"password{SHARED} Leave the password out to get this user, "
                f"or ask for another name for a new one."
            )
        if wanted is not None and wanted != made.groups:
            raise UserExistsError(
                f"reactor_server.user({name!r}, groups={list(wanted)!r}): {name!r} exists already "
                f"with the groups {list(made.groups)!r}{SHARED} Ask for another name for a new "
                f"user (reactor_server.user({name + '2'!r}, groups={list(wanted)!r})), or run "
                "with --reactor-server-scope module for a server per test module."
            )
        return made

    def log(self) -> str:
        """What the server wrote to its error stream so far."""
        if not self._log.closed:  # closed once the server stopped
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()

    def __repr__(self) -> str:
        return f"ReactorServer({self.url!r})"


def _stored_user(
    server: ReactorServer, auth: Any, name: str, password: str | None
) -> TestUser | None:
    """`name` as the database has it already (a demo user of --reactor-seed, one another process
    made), with the password that signs it in; None when there is no such user."""
    from ..server.auth.sessions import DEMO_USERS

    with auth.database.transaction() as db:
        row = db.execute("SELECT groups FROM users WHERE username = ?", (name,)).fetchone()
    if row is None:
        return None
    demo = {user: secret for user, secret, _ in DEMO_USERS}
    tried = [password] if password is not None else [f"{name}-password", demo.get(name, "")]
    known = next((secret for secret in tried if secret and auth.has_password(name, secret)), None)
    if known is None:
        raise UserExistsError(
            f"reactor_server.user({name!r}): the server's database has a user {name!r} already, "
            "whose password was not given. Pass it (reactor_server.user(name, password=…)), or "
            "ask for another name for a new user."
        )
    return TestUser(name, known, tuple(json.loads(row["groups"])), server)
