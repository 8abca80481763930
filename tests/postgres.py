"""A throwaway PostgreSQL cluster for the tests: `initdb` into a temporary folder, `pg_ctl` on a
free loopback port, removed at the end. Where PostgreSQL is not installed (./dev installs
Debian's `postgresql` where it runs as root) the tests against it are skipped, saying why."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from reactor.server.loopback import free_port

SKIP_REASON = (
    "PostgreSQL is not installed (no initdb/pg_ctl: Debian's `postgresql` package, which ./dev "
    "installs where it runs as root): the tests against PostgreSQL are skipped"
)


def postgres_bin() -> Path | None:
    """The folder of initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3])
    )
    return versions[-1].parent if versions else None


class Cluster:
    """One PostgreSQL server for the test session; `database()` makes a new, empty database.
    `restart()`, `halt()` and `resume()` are what an operator's `pg_ctl` does to it (a test that
    uses them starts a cluster of its own)."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.folder = Path(tempfile.mkdtemp(prefix="reactor-pg-"))
        self.port = free_port()
        # initdb refuses to run as root: there, the cluster belongs to the `postgres` user.
        self.run_as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.run_as:
            shutil.chown(self.folder, "postgres")
        self.names = itertools.count(1)

    def start(self) -> None:
        data = self.folder / "data"
        self._run(
            "initdb",
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C.UTF-8",
        )
        self.resume()

    def resume(self) -> None:
        """Start the server (again); back when this returns: it accepts connections."""
        self._pg_ctl("-w", "start")

    def halt(self) -> None:
        """Stop the server as `pg_ctl stop` does (fast: every session is ended)."""
        self._pg_ctl("-m", "fast", "-w", "stop")

    def restart(self) -> None:
        """`pg_ctl restart`: every session ended, the server back when this returns."""
        self._pg_ctl("-m", "fast", "-w", "restart")

    def _pg_ctl(self, *action: str) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c "
            f"unix_socket_directories={self.folder} -c fsync=off"
        )
        options += " -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        # the log file keeps the server's output off this process's pipes
        data, log = str(self.folder / "data"), str(self.folder / "log")
        self._run("pg_ctl", "-D", data, "-l", log, "-o", options, *action)

    def url(self, name: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def database(self) -> str:
        """The URL of a new, empty database of this cluster."""
        import psycopg

        name = f"reactor_{next(self.names)}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [*self.run_as, str(self.bin / tool), *args], capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{tool} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}"
            )
