"""A real `reactor serve` for a test: the installed plugins on a free loopback port, a fresh data
folder (SQLite, or a PostgreSQL database the test names), users the test makes."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ReactorError

START_TIMEOUT_S = (
    120.0  # the first start on a machine makes Pyodide's memory snapshot (~10 s, more when busy)
)


class ServerStartError(ReactorError, RuntimeError):
    """`reactor serve` did not start; the message holds what it said."""


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
        self, name: str, *, password: str = "", groups: tuple[str, ...] | list[str] = ()
    ) -> TestUser:
        """Make a user (password: `<name>-password` unless given), in the server's own database."""
        from ..server.auth.sessions import Auth
        from ..server.database import Database

        password = password or f"{name}-password"
        store = Database(self.database or self.data / "reactor.sqlite3")
        try:
            Auth(store, seed=False).create_user(name, password, groups)
        finally:
            store.close()
        return TestUser(name, password, tuple(groups), self)

    def log(self) -> str:
        """What the server wrote to its error stream so far."""
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
