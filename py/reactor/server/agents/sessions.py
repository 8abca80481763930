"""The MCP 2025-11-25 sessions of `/mcp` in the database, so that any server process answers any
session's request: a balancer in front of several processes needs no affinity (open-source nginx
cannot route on `Mcp-Session-Id`: an agent's first request has none).

Why the session's state rather than the SDK's stateless mode: stateless, each request gets a
transport of its own and no session id, so a 2025-11-25 client has no GET stream and never hears
`notifications/tools/list_changed` (the page's tools come and go), nor can the server ask it
anything. A session's state is small and fixed once `initialize` is answered: the client's
initialize params and the negotiated version. So it is a row of `mcp_sessions`, written before the
InitializeResult leaves (SessionWatch), and a process that gets a request for a session it does not
hold *adopts* it (SharedSessionManager): the SDK's transport under that id, served by a
connection born initialized from the row. The row names the agent token that opened the session;
another token's request is answered as for an unknown session (404).

What crosses between processes, by the page bus (server/agents/bus.py):
- "session ended": a DELETE on any process deletes the row, and every process drops its copy;
- "cancelled": a `notifications/cancelled` may reach another process than the request it
  cancels; each process holding the session hands it to its own copy, which cancels the request
  if it runs there (the SDK's own way), and PageRelay.call tells the page.
List changes need nothing more: every copy of a session listens for its person's changes from its
start, and PageRelay.changed reaches every process, so the one holding the client's GET stream
sends the notice on it.

Each process's copy idles out on its own after the SDK's idle time (and is adopted again when
asked). A row lives while some process uses its session: each process marks the sessions it
served, or still serves, once a minute in one statement (`used_at`), and a row unused for the
idle time and that minute is no longer adopted, and is deleted. With SQLite there is one process:
the SDK's own sessions, no rows.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
from anyio.abc import TaskStatus
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    ErrorData,
    InitializeRequestParams,
    JSONRPCError,
)
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ...errors import DatabaseError
from ..database import Database
from .relay import PageRelay
from .transport import IDLE_SECONDS, SettlingSessionManager, SettlingTransport, cancel_request

log = logging.getLogger("reactor")
TOUCH_SECONDS = 60.0  # how often a process marks the sessions it used
PARAMS_LIMIT = 100_000  # characters of a client's initialize params kept in a row
ENDED, CANCELLED = "mcp-session-ended", "mcp-cancelled"  # their messages on the page bus
STEPS = [
    """
    CREATE TABLE IF NOT EXISTS mcp_sessions (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        username TEXT NOT NULL,
        protocol_version TEXT NOT NULL,
        client_params TEXT NOT NULL,
        created_at REAL NOT NULL,
        used_at REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS mcp_sessions_by_use ON mcp_sessions (used_at);
    """,
]


@dataclass(frozen=True)
class StoredSession:
    """One session as its row keeps it: whose (`owner`, the agent token's id), and what its
    `initialize` settled."""

    id: str
    owner: str
    username: str
    protocol_version: str
    client_params: dict[str, Any]


class SessionRows:
    """The table `mcp_sessions`: the sessions any process may adopt."""

    def __init__(self, database: Database, idle_seconds: float = IDLE_SECONDS):
        self.database = database
        database.migrate("mcp_sessions", STEPS)
        self.lifetime = idle_seconds + TOUCH_SECONDS  # unused for longer: no process holds it

    def record(self, session: StoredSession) -> None:
        now = time.time()
        with self.database.transaction() as db:
            db.execute(
                "INSERT INTO mcp_sessions (id, owner, username, protocol_version, client_params, "
                "created_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "protocol_version = excluded.protocol_version, "
                "client_params = excluded.client_params, used_at = excluded.used_at",
                (
                    session.id,
                    session.owner,
                    session.username,
                    session.protocol_version,
                    json.dumps(session.client_params, ensure_ascii=False),
                    now,
                    now,
                ),
            )
            db.execute("DELETE FROM mcp_sessions WHERE used_at < ?", (now - self.lifetime,))

    def find(self, session_id: str, owner: str) -> StoredSession | None:
        """The session of this id opened by this token, while it lives."""
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT id, owner, username, protocol_version, client_params FROM mcp_sessions "
                "WHERE id = ? AND owner = ? AND used_at >= ?",
                (session_id, owner, time.time() - self.lifetime),
            ).fetchone()
        if row is None:
            return None
        return StoredSession(
            row["id"],
            row["owner"],
            row["username"],
            row["protocol_version"],
            json.loads(row["client_params"]),
        )

    def touch(self, session_ids: list[str]) -> None:
        now = time.time()
        with self.database.transaction() as db:
            db.executemany(
                "UPDATE mcp_sessions SET used_at = ? WHERE id = ?", [(now, i) for i in session_ids]
            )

    def remove(self, session_id: str) -> None:
        with self.database.transaction() as db:
            db.execute("DELETE FROM mcp_sessions WHERE id = ?", (session_id,))


def listen(relay: PageRelay, username: str, connection: Connection) -> None:
    """Tell this MCP connection when its person's tool list may have changed."""
    relay.listeners.setdefault(username, weakref.WeakSet()).add(connection)


class SessionWatch:
    """The MCP server's middleware: a session listens for its person's tool changes from its
    `initialize`. With rows (PostgreSQL), the session is recorded before its InitializeResult
    leaves (a client may send its next request to another process at once), and a
    `notifications/cancelled` that came over HTTP goes to the other processes too."""

    def __init__(self, relay: PageRelay, rows: SessionRows | None) -> None:
        self.relay, self.rows = relay, rows

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        request = ctx.request
        if request is None:  # not over HTTP: a cancel handed over by another process
            return await call_next(ctx)
        if ctx.method == "initialize" and self.rows is not None:
            size = len(json.dumps(ctx.params or {}))
            if size > PARAMS_LIMIT:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"The initialize params are {size:,} characters; this server keeps at "
                    f"most {PARAMS_LIMIT:,}. Declare fewer capabilities.",
                )
        result = await call_next(ctx)
        # The connection outlives the request; the context offers it under no public name in
        # mcp 2.3.
        connection = getattr(ctx.session, "_connection", None)
        agent = request.scope.get("reactor.agent")
        if ctx.method == "initialize" and isinstance(connection, Connection) and agent is not None:
            listen(self.relay, agent.user.username, connection)
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            if self.rows is not None and connection.session_id:
                stored = StoredSession(
                    connection.session_id,
                    agent.id,
                    agent.user.username,
                    str(version or connection.protocol_version),
                    dict(ctx.params or {}),
                )
                try:
                    await anyio.to_thread.run_sync(self.rows.record, stored)
                except DatabaseError:
                    log.exception("Could not record an MCP session")
                    raise MCPError(
                        code=INTERNAL_ERROR,
                        message="The server could not keep this session: its database did not "
                        "answer. Initialize again in a moment.",
                    ) from None
        elif ctx.method == "notifications/cancelled" and self.relay.bus is not None:
            session_id = request.headers.get(MCP_SESSION_ID_HEADER)
            if session_id and isinstance(ctx.params, dict):
                message = {"type": CANCELLED, "session": session_id, "params": dict(ctx.params)}
                try:
                    self.relay.bus.send("*", message)
                except DatabaseError:  # the cancel still applies on this process
                    log.exception("Could not pass a cancel to the other processes")
        return result


class SharedSessionManager(SettlingSessionManager):
    """The SDK's session manager (its sessions on SettlingTransport), whose sessions every process
    shares by their rows: one it does not hold is adopted, a DELETE ends it everywhere."""

    def __init__(self, *, rows: SessionRows, relay: PageRelay, **options: Any) -> None:
        super().__init__(**options)
        self.rows, self.relay = rows, relay
        self.used: set[str] = set()  # the sessions served since the last touch
        self.in_flight: Counter[str] = Counter()  # the requests of each being served

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with super().run():
            assert self._task_group is not None
            self._task_group.start_soon(self._touch_every_minute)
            hearers = {ENDED: self._heard_ended, CANCELLED: self._heard_cancelled}
            self.relay.hearers.update(hearers)
            try:
                yield
            finally:
                for kind, hearer in hearers.items():
                    if self.relay.hearers.get(kind) == hearer:
                        del self.relay.hearers[kind]

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        user, agent = scope.get("user"), scope.get("reactor.agent")
        if session_id is None or not isinstance(user, AuthenticatedUser) or agent is None:
            await super()._handle_stateful_request(scope, receive, send)
            return
        if session_id not in self._server_instances:
            try:
                refusal = await self._adopt(session_id, agent.id, user)
            except DatabaseError:
                log.exception("Could not look up an MCP session")
                refusal = _refusal(
                    "The server's database did not answer; send this request again in a moment.",
                    503,
                )
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        transport = self._server_instances.get(session_id)
        if transport is None or self._session_owners.get(session_id) != authorization_context(user):
            await super()._handle_stateful_request(scope, receive, send)  # the SDK's 404
            return
        self.used.add(session_id)
        self.in_flight[session_id] += 1
        try:
            await super()._handle_stateful_request(scope, receive, send)
        finally:
            self.in_flight[session_id] -= 1
            if not self.in_flight[session_id]:
                del self.in_flight[session_id]
        if scope["method"] == "DELETE" and transport.is_terminated:
            try:
                await anyio.to_thread.run_sync(self._ended_everywhere, session_id)
            except DatabaseError:  # the other processes' copies idle out, the row expires
                log.exception("Could not end an MCP session on the other processes")

    def _ended_everywhere(self, session_id: str) -> None:
        self.rows.remove(session_id)
        if self.relay.bus is not None:
            self.relay.bus.send("*", {"type": ENDED, "session": session_id})

    async def _adopt(self, session_id: str, owner: str, user: AuthenticatedUser) -> Response | None:
        """Serve a session this process does not hold, when it is this token's; a refusal to
        send, if any (no such session: the SDK's 404 follows)."""
        if len(session_id) > 100:
            return None
        # read off the event loop: a database that is slow to answer holds up this request only
        stored = await anyio.to_thread.run_sync(self.rows.find, session_id, owner)
        if stored is None:
            return None
        async with self._session_creation_lock:
            if session_id in self._server_instances:
                return None
            if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
                log.warning("Not adopting a session: %d are open", self.max_sessions)
                return _refusal("Too many open sessions", 503)
            transport = SettlingTransport(
                mcp_session_id=session_id,
                is_json_response_enabled=self.json_response,
                event_store=self.event_store,
                security_settings=self.security_settings,
                retry_interval=self.retry_interval,
                idle_timeout=self.session_idle_timeout,
            )
            self._server_instances[session_id] = transport
            self._session_owners[session_id] = authorization_context(user)
            try:
                assert self._task_group is not None
                await self._task_group.start(partial(self._serve_adopted, transport, stored))
            except BaseException:
                await self._discard_session(session_id, transport)
                raise
        return None

    async def _serve_adopted(
        self,
        transport: StreamableHTTPServerTransport,
        stored: StoredSession,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """The SDK's session loop (`run_server` of its manager), with a connection that starts
        where the session's `initialize` left it."""
        try:
            async with transport.connect() as (read_stream, write_stream):
                dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
                    read_stream, write_stream, inline_methods=frozenset({"initialize"})
                )
                connection = Connection.for_loop(
                    dispatcher, session_id=stored.id, protocol_version_hint=stored.protocol_version
                )
                with contextlib.suppress(ValidationError):
                    connection.client_params = InitializeRequestParams.model_validate(
                        stored.client_params, by_name=False
                    )
                connection.initialized.set()
                listen(self.relay, stored.username, connection)
                task_status.started()
                idle = transport.idle_scope or anyio.CancelScope()
                with idle:
                    await serve_connection(
                        self.app,
                        dispatcher,
                        connection=connection,
                        lifespan_state=self._lifespan_state,
                    )
        except Exception:
            log.exception("An adopted MCP session failed")
        finally:
            await self._discard_session(stored.id, transport)

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        self.used.discard(session_id)
        await super()._discard_session(session_id, transport)

    def _heard_ended(self, message: dict[str, Any]) -> None:
        """Another process ended a session (DELETE): drop this process's copy."""
        session_id = message.get("session")
        transport = self._server_instances.get(session_id) if isinstance(session_id, str) else None
        if transport is not None and self._task_group is not None:
            self._task_group.start_soon(self._discard_session, session_id, transport)

    def _heard_cancelled(self, message: dict[str, Any]) -> None:
        """A cancel that reached another process: to this process's copy, whose loop cancels the
        request if it runs here."""
        session_id, params = message.get("session"), message.get("params")
        transport = self._server_instances.get(session_id) if isinstance(session_id, str) else None
        request = params.get("requestId") if isinstance(params, dict) else None
        if transport is not None and request is not None and self._task_group is not None:
            reason = params.get("reason") if isinstance(params, dict) else None
            self._task_group.start_soon(
                cancel_request, transport, request, reason if isinstance(reason, str) else ""
            )

    async def _touch_every_minute(self) -> None:
        while True:
            await anyio.sleep(TOUCH_SECONDS)
            used, self.used = self.used | set(self.in_flight), set()
            if used:
                try:
                    await anyio.to_thread.run_sync(self.rows.touch, sorted(used))
                except Exception:  # the database is away: the next minute tries again
                    log.exception("Could not mark the MCP sessions used")
                    self.used |= used


def _refusal(message: str, status: int) -> Response:
    body = JSONRPCError(
        jsonrpc="2.0", id=None, error=ErrorData(code=INTERNAL_ERROR, message=message)
    )
    return Response(
        body.model_dump_json(by_alias=True, exclude_unset=True),
        status_code=status,
        media_type="application/json",
    )
