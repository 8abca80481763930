"""Direct links between the server processes of one site on one host: a message to one process
(a call to the process holding the page, the answer back) goes down a Unix socket instead of
through PostgreSQL's NOTIFY.

A NOTIFY costs a statement on the sender, the database's work, and a thread's wake-up on the
receiver: for an agent's call that crosses processes, twice (bench/proxy.py: a tenth of a
server process's CPU, and nearly all the database's). Each process listens on
`<folder>/<its name>.sock`, the folder one per site and user (named by a hash of the database's
address without its password; mode 0700, refused if anyone else's); a process sends to another
on this host by a connection it keeps, one JSON message a line, read on the receiver's loop.
A process elsewhere has no socket here, and is sent to by NOTIFY as before (server/agents/bus.py),
as is a message to every process, one sent from a worker thread, and one over LINE_LIMIT.

The order of one process's messages to another holds: while a link is being made its messages
wait for it, and go by NOTIFY, in order, if it cannot be made; a link that breaks is made again
for the next message (its failure sends that one by NOTIFY for RETRY_SECONDS). A process that
dies takes its socket's connections with it; what was sent to it is lost, as a NOTIFY to it is,
and the bus's watch ends what waited on it. A stale socket (a killed process's) refuses the
connection, and is removed at the next start of a process of the site.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import socket
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("reactor")
ENABLED = True  # tests turn it off to take the path processes on several hosts take
LINE_LIMIT = 64 * 1024 * 1024  # a page's answer is at most LINK_MESSAGE_LIMIT characters: fits
RETRY_SECONDS = 5.0  # a link that could not be made is not tried again sooner
PATH_LIMIT = 100  # a Unix socket's path is at most 107 bytes


def folder_of(target: str) -> Path:
    """The folder of a site's sockets on this host: one per database and user. Its name hashes
    the database's address without its password (anyone may list the temporary folder)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(target)
        parts.pop("password", None)
        named = json.dumps(sorted((k, str(v)) for k, v in parts.items()))
    except Exception:  # not an address psycopg reads: no password of it is kept either
        named = target.partition("@")[2] or target.partition("://")[0]
    digest = hashlib.sha256(named.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"reactor-bus-{os.getuid()}-{digest}"


class Link:
    """This process's connection to another: its messages wait in `pending` while it is made."""

    def __init__(self) -> None:
        self.writer: asyncio.StreamWriter | None = None
        # (the message, its line) while the link is made; None once it could not be made
        self.pending: list[tuple[dict[str, Any], bytes]] | None = []
        self.failed_at = 0.0


class Peers:
    """The direct links of this process (`name`) to the others of its site on this host."""

    def __init__(
        self,
        folder: Path,
        name: str,
        heard: Callable[[dict[str, Any]], None],
        fallback: Callable[[str, dict[str, Any]], None],
    ) -> None:
        self.folder, self.name = folder, name
        self.heard, self.fallback = heard, fallback  # a message in; NOTIFY out
        self.links: dict[str, Link] = {}
        self.server: asyncio.AbstractServer | None = None
        self.listening: socket.socket | None = None
        self.tasks: set[asyncio.Future[Any]] = set()

    def path(self, process: str) -> Path:
        return self.folder / f"{process}.sock"

    def start(self) -> bool:
        """Listen on this process's socket (on the running loop); False when this host gives
        no safe place for it (the processes then speak by NOTIFY alone)."""
        own = self.path(self.name)
        if not ENABLED or len(str(own)) > PATH_LIMIT:
            return False
        if not self._safe_folder():
            log.warning(
                "Direct links between server processes are off: %s is not this user's alone "
                "(mode 0700); the processes speak by the database",
                self.folder,
            )
            return False
        self._sweep()
        # Made under another name and renamed once it listens: a process starting meanwhile
        # never finds it refusing, and so never sweeps it away.
        making = self.folder / f"{self.name}.making"
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with contextlib.suppress(FileNotFoundError):
                making.unlink()
            listening.bind(str(making))
            os.chmod(making, 0o600)
            listening.listen(128)
            os.rename(making, own)
        except OSError as error:
            listening.close()
            log.warning("Direct links between server processes are off: %s", error)
            return False
        self.listening = listening
        self._run(self._serve_on(listening))
        return True

    def stop(self) -> None:
        """What waits for a link goes by NOTIFY; the links and the socket close."""
        for process, link in list(self.links.items()):
            self._failed(process, link)
            if link.writer is not None:
                link.writer.close()
        self.links.clear()
        for task in list(self.tasks):
            task.cancel()
        if self.server is not None:
            self.server.close()
        if self.listening is not None:
            self.listening.close()
            self.listening = None
            with contextlib.suppress(OSError):
                self.path(self.name).unlink()

    def send(self, process: str, message: dict[str, Any]) -> bool:
        """Send to another process of this host directly; False when it has no socket here, its
        link failed of late, or the message is over LINE_LIMIT: the caller sends by NOTIFY."""
        # encoded here: a message that cannot be is the caller's fault, as over NOTIFY
        line = json.dumps(message, ensure_ascii=False).encode() + b"\n"
        if len(line) > LINE_LIMIT:
            return False
        link = self.links.get(process)
        if link is not None and link.pending is None:  # it could not be made
            if time.monotonic() - link.failed_at < RETRY_SECONDS:
                return False
            link = None
        if link is None:
            if self.listening is None or not self.path(process).exists():
                return False
            link = self.links[process] = Link()
            self._run(self._connect(process, link))
        if link.writer is not None:
            link.writer.write(line)
        else:
            assert link.pending is not None
            link.pending.append((message, line))
        return True

    async def _connect(self, process: str, link: Link) -> None:
        """Make the link, send what waited for it, and keep it until the other end closes."""
        writer: asyncio.StreamWriter | None = None
        try:
            reader, writer = await asyncio.open_unix_connection(str(self.path(process)))
            if self.links.get(process) is not link:  # stopped meanwhile
                return
            for _, line in link.pending or ():
                writer.write(line)
            link.pending, link.writer = [], writer
            await reader.read()  # nothing comes back: this returns when the other end closes
        except OSError:
            if link.writer is None:  # it could not be made: what waited goes by NOTIFY
                self._failed(process, link)
                return
        finally:
            if writer is not None:
                writer.close()
            if link.writer is not None and self.links.get(process) is link:
                del self.links[process]  # broken or closed: the next message makes it again

    def _failed(self, process: str, link: Link) -> None:
        """The link could not be made: what waited for it goes by NOTIFY, in order."""
        waiting, link.pending, link.failed_at = link.pending or [], None, time.monotonic()
        for message, _ in waiting:
            try:
                self.fallback(process, message)
            except Exception as error:  # the database is away: as a NOTIFY that failed
                log.warning("A message to server process %s was lost: %s", process, error)

    async def _serve_on(self, listening: socket.socket) -> None:
        try:
            self.server = await asyncio.start_unix_server(
                self._serve, sock=listening, limit=LINE_LIMIT
            )
        except OSError as error:  # nothing accepts: the others find no socket and use NOTIFY
            log.warning("Direct links between server processes are off: %s", error)
            listening.close()
            self.listening = None
            with contextlib.suppress(OSError):
                self.path(self.name).unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One other process's messages, a line each, until it closes its link; a message that
        cannot be read or acted on is logged and the next one read, as over NOTIFY."""
        try:
            while line := await reader.readline():
                try:
                    message = json.loads(line)
                    if isinstance(message, dict):
                        self.heard(message)
                except Exception:
                    log.exception("A message from another server process could not be read")
        except (OSError, asyncio.LimitOverrunError, ValueError) as error:
            log.warning("A direct link from another server process broke: %s", error)
        finally:
            writer.close()

    def _run(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Future[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("A direct link between server processes failed", exc_info=task.exception())

    def _safe_folder(self) -> bool:
        """The folder, made if need be: this user's alone (another user's could listen in)."""
        try:
            self.folder.mkdir(mode=0o700, exist_ok=True)
            found = self.folder.lstat()
        except OSError:
            return False
        return (
            stat.S_ISDIR(found.st_mode)
            and found.st_uid == os.getuid()
            and stat.S_IMODE(found.st_mode) == 0o700
        )

    def _sweep(self) -> None:
        """Remove the sockets of processes that are gone (killed: nothing removed them)."""
        for path in self.folder.glob("*.sock"):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.settimeout(0.2)
                probe.connect(str(path))
            except (ConnectionRefusedError, FileNotFoundError):
                with contextlib.suppress(OSError):
                    path.unlink()
            except OSError:
                pass
            finally:
                probe.close()
