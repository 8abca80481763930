"""`/mcp`: desktop agents call the tools of a person's open reactor page, through the server.

An agent (Claude Code, Claude Desktop, Cursor, VS Code) speaks MCP's Streamable HTTP to `/mcp`
(the official `mcp` SDK's low-level `Server`, its session manager run in the app's lifespan),
with an OAuth access token the person allowed (server/agents/oauth/) or an agent token
(server/agents/tokens.py). The page does the work: it holds one WebSocket
to the server (`/api/agent-pages/link`): calls and cancels go down, answers, its tool list and
"the person is using this page" come up, and a claim of a call the person allowed (answered: may
it run, does the agent still wait; server/agents/relay.py).

Why a WebSocket rather than server-sent events down and a POST up for each answer: in Chromium
on loopback a message each way over an open WebSocket takes 0.6–0.8 ms, a fetch POST 3–6 ms,
and an answer is on every call's path. The socket is opened under the rules of a request (the
Host allow-list, this server's or an allowed Origin, the session cookie), and every message
that comes up is checked against the session again, so signing out ends it.

A `tools/call` goes to the person's most recently active connected page (or, by `reactor_call`,
to the page named), which runs `window.reactor.chat.callTool` — the chat's own path: admission,
validation, the person's approval in the page. While it waits, the agent hears progress every
PROGRESS_SECONDS (several clients reset their timeout on it); after `answer_limit` seconds the
call ends as a tool error saying the person did not answer. A page that goes away fails its calls
at once. Never another person's pages: a page is found by the token's user only.

Several server processes on one PostgreSQL share the directory of pages and pass calls and
answers by LISTEN/NOTIFY (server/agents/relay.py, server/agents/bus.py): an agent on any process
reaches a page held by any other. Any process answers any `/mcp` request, so a balancer needs no
affinity: an MCP 2025-11-25 session (`Mcp-Session-Id`) is a row any process adopts
(server/agents/sessions.py); 2026-07-28 has no session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import anyio
import mcp.types as types
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import TransportSecuritySettings
from opentelemetry import trace
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.routing import WebSocketRoute
from starlette.types import Message, Receive, Scope, Send
from starlette.websockets import WebSocket

from ...errors import ApiError, DatabaseError
from ...messages import LINK_CLOSE, LINK_MESSAGE_LIMIT, LINK_UP
from ..api import EVENTS, Call, Declaration, Reply, declare, documented, error_response, routes_of
from ..auth.protection import proxy_fault, same_origin
from ..auth.sessions import Auth, session_token
from ..database import Database
from ..metrics import counted
from .bus import PostgresPageBus
from .oauth.grants import ACCESS_PREFIX, UNKNOWN, Grants
from .oauth.resource import CHALLENGE, REFUSAL, challenge, holder, refusal
from .relay import MAX_PAGES, PageLink, PageRelay, failure
from .sessions import SessionRows, SessionWatch, SharedSessionManager
from .tokens import AgentToken, AgentTokens, bearer_token
from .transport import DirectToolCalls, KernelCapture, SettlingSessionManager

log = logging.getLogger("reactor.server")

PATH = "/mcp"
LINK_PATH = "/api/agent-pages/link"
RECHECK_SECONDS = 15.0  # how often a linked page's session is checked again
RECHECK: dict[str, Any] = {"type": "recheck"}  # the outbox's mark: check the session now
ANSWER_CHECK_SECONDS = 1.0  # an answer reads the session again once its last check is this old
OWN_TOOLS = ("reactor_pages", "reactor_call")
REVOKED = "revoked"  # a bus message: a token was revoked on some process
REVOKE_TRIES, REVOKE_RETRY_SECONDS = 15, 2.0  # the other processes are told for 30 s at most
PASS_WEBSOCKETS = (
    "`proxy_http_version 1.1;`, `proxy_set_header Upgrade $http_upgrade;` and "
    '`proxy_set_header Connection "upgrade";`'
)
NOT_UPGRADED = (
    f"{LINK_PATH} takes a WebSocket only, and this request came without `Upgrade: websocket`: "
    f"a proxy in front of reactor must pass WebSockets on (nginx: {PASS_WEBSOCKETS})."
)


def no_page_sentence(url: str) -> str:
    return f"Open {url}, sign in and switch on *Let my agents use this page*."


def tool_result(envelope: dict[str, Any]) -> dict[str, Any]:
    """A page's envelope as MCP's CallToolResult, in its wire form: the value as
    structuredContent and as JSON text; an `ok: false` as a tool error (isError) with its code
    and sentence, for the model to act on."""
    if envelope.get("ok") is True:
        value = envelope.get("result")
        structured = value if isinstance(value, dict) else {"result": value}
        text = json.dumps(value, ensure_ascii=False)
        return {
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "structuredContent": structured,
        }
    found = envelope.get("error")
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    code, message = str(error.get("code", "failed")), str(error.get("message", "The tool failed."))
    return {
        "content": [{"type": "text", "text": f"{message} (code: {code})"}],
        "isError": True,
        "structuredContent": {"error": error or {"code": code, "message": message}},
    }


OWN_TOOL_LIST = [
    types.Tool(
        name="reactor_pages",
        title="Open reactor pages",
        description="List the person's open reactor pages whose agents switch is on: their ids, "
        "titles (what each shows), routes, addresses and when each was last used, the most "
        "recently used first. A tool called without reactor_call goes to the page marked default.",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        annotations=types.ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    ),
    types.Tool(
        name="reactor_call",
        title="Call a tool on one reactor page",
        description="Call a tool on the reactor page named by `page` (an id from reactor_pages), "
        "with `arguments`. Writes are approved by the person in that page.",
        input_schema={
            "type": "object",
            "required": ["page", "tool"],
            "properties": {
                "page": {"type": "string", "description": "A page id, as reactor_pages lists it."},
                "tool": {"type": "string", "description": "The tool's name on that page."},
                "arguments": {"type": "object", "description": "The tool's arguments."},
            },
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    ),
]


class RelayServer(Server[Any]):
    """The SDK's low-level server, advertising `tools.listChanged` (the page's tools come and
    go)."""

    def create_initialization_options(
        self, notification_options: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), *args, **kwargs
        )


def _agent(ctx: Any) -> AgentToken:
    return ctx.request.scope["reactor.agent"]  # type: ignore[no-any-return]


def mcp_server(relay: PageRelay, page_url: Callable[[Any], str]) -> RelayServer:
    """The MCP server: tools/list and tools/call of the token's person, relayed to their page.
    A session hears of their tool list's changes from its start (server/agents/sessions.py)."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        username = _agent(ctx).user.username
        pages = relay.pages_of(username)
        tools = [_tool(t) for t in (pages[0].tools if pages else [])]
        return types.ListToolsResult(
            tools=[t for t in tools if t is not None and t.name not in OWN_TOOLS] + OWN_TOOL_LIST
        )

    async def answer(ctx: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        username = _agent(ctx).user.username
        if name == "reactor_pages":
            # the first is the most recently used: where a tool called without reactor_call goes
            listed = [
                {**p.describe(), "default": i == 0} for i, p in enumerate(relay.pages_of(username))
            ]
            return tool_result(
                {
                    "ok": True,
                    "result": {
                        "pages": listed,
                        "note": "" if listed else no_page_sentence(page_url(ctx)),
                    },
                }
            )
        if name == "reactor_call":
            page_id, tool, inner = (
                arguments.get("page"),
                arguments.get("tool"),
                arguments.get("arguments", {}),
            )
            if (
                not isinstance(page_id, str)
                or not isinstance(tool, str)
                or not isinstance(inner, dict)
            ):
                return tool_result(
                    failure(
                        "invalid_arguments",
                        "Pass page (an id from reactor_pages), tool (a name) and arguments "
                        "(an object).",
                    )
                )
            page = relay.page_of(username, page_id)
            if page is None:
                return tool_result(
                    failure(
                        "not_found",
                        f"There is no open page {page_id[:40]!r}; reactor_pages lists them.",
                    )
                )
            name, arguments = tool, inner
        else:
            page = relay.first_page(username)
        if page is None:
            return tool_result(failure("unavailable", no_page_sentence(page_url(ctx))))

        async def progress(waited: float, message: str) -> None:
            await ctx.session.report_progress(round(waited, 1), None, message)

        return tool_result(await relay.call(page, name, arguments, progress, _agent(ctx).name))

    answering = counted(answer)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # the SDK's way (transport.py DirectToolCalls takes the plain calls)
        result = await answering(ctx, params.name, dict(params.arguments or {}))
        return types.CallToolResult.model_validate(result)

    server = RelayServer("reactor", version="1", on_list_tools=list_tools, on_call_tool=call_tool)
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        # No tracing is set up in this process (a provider set before the app is made keeps the
        # SDK's spans): the SDK's span around each message would be a no-op costing ~0.05 ms.
        server.middleware = [
            m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)
        ]
    server.middleware += [KernelCapture(server), DirectToolCalls(answering)]
    return server


def _tool(tool: Any) -> types.Tool | None:
    """A tool as the page lists it (`window.reactor.chat.tools()`), as MCP's; None when it is not
    one."""
    if (
        not isinstance(tool, dict)
        or not isinstance(tool.get("name"), str)
        or not isinstance(tool.get("inputSchema"), dict)
    ):
        return None
    given = tool.get("annotations")
    hints: dict[str, Any] = given if isinstance(given, dict) else {}
    try:
        return types.Tool(
            name=tool["name"],
            title=tool.get("title") if isinstance(tool.get("title"), str) else None,
            description=tool.get("description")
            if isinstance(tool.get("description"), str)
            else None,
            input_schema=tool["inputSchema"],
            annotations=types.ToolAnnotations(
                read_only_hint=hints.get("readOnlyHint"),
                destructive_hint=hints.get("destructiveHint"),
                idempotent_hint=hints.get("idempotentHint"),
                open_world_hint=hints.get("openWorldHint"),
            ),
        )
    except ValueError:
        return None


MCP_OPERATION = documented(
    ("GET", "POST", "DELETE"),
    PATH,
    Declaration(
        "MCP's Streamable HTTP for desktop agents (an agent token as bearer; the page's "
        "tools, relayed)",
        description="JSON-RPC as the Model Context Protocol says (2025-11-25 with Mcp-Session-Id, "
        "and 2026-07-28).",
        replies={
            200: Reply(content={"application/json": {"schema": {"type": "object"}}, **EVENTS}),
            202: Reply(),
            # no valid token (a session or cookie is refused): where authorization is, and why
            401: Reply(REFUSAL, headers=CHALLENGE),
        },
        refusals={
            400: "Not a JSON-RPC message MCP's transport takes.",
            403: "A page of a foreign Origin asks.",
            404: "An MCP session that never was, has ended, or is another token's.",
            405: "A method the transport does not take here.",
            406: "An Accept header without what the transport answers.",
            415: "A body that is not JSON.",
            429: "Past the token's rate.",
        },
        name="mcp",
    ),
)


class McpEndpoint:
    """ASGI app at /mcp: the transport's own rules before the SDK sees the request — an Origin,
    when present, must be this server's or an allowed one (403); only an OAuth access token or an
    agent token authenticates (401 naming where authorization is: server/agents/oauth/; no
    cookie, no session token); each is rate-limited (429 with Retry-After)."""

    def __init__(self, tokens: AgentTokens, origins: Iterable[str], grants: Grants) -> None:
        self.tokens, self.origins, self.grants = tokens, frozenset(origins), grants
        self.manager: SettlingSessionManager | None = None  # while the app's lifespan runs
        self.running: dict[str, set[anyio.CancelScope]] = {}  # each token's requests being served

    async def revoked(self, token_id: str) -> None:
        """The token was revoked: its sessions end (their streams close, their calls are withdrawn
        from the pages) and its requests still being served here stop."""
        if self.manager is not None:
            await self.manager.end_sessions_of(token_id)
        for request in self.running.pop(token_id, set()):
            request.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins and not same_origin(origin, scope):
            sentence = proxy_fault(origin, scope)
            await error_response(
                403, sentence or f"Requests from pages of {origin[:100]} may not use {PATH}."
            )(scope, receive, send)
            return
        secret = bearer_token(headers)
        agent, sentence = holder(self.tokens, self.grants, secret, scope)
        if agent is None:
            await challenge(scope, sentence, invalid=bool(secret))(scope, receive, send)
            return
        wait = agent.retry_after
        if wait:
            await error_response(
                429,
                f"Too many requests with this token; try again in {wait} seconds.",
                retry_after=wait,
            )(scope, receive, send)
            return
        if self.manager is None:
            await error_response(
                503, f"{PATH} is not running: the server was started without its lifespan."
            )(scope, receive, send)
            return
        if scope["method"] == "POST" and MCP_SESSION_ID_HEADER not in headers:
            crowded = self.manager.room_for(agent.id, agent.user.username)
            if crowded:  # an `initialize` would open one more session
                await error_response(429, crowded, retry_after=60)(scope, receive, send)
                return
        # The SDK binds an MCP session to the credential that opened it (another token gets 404).
        scope = {
            **scope,
            "reactor.agent": agent,
            "user": AuthenticatedUser(
                AccessToken(
                    token=agent.id, client_id=agent.id, scopes=[], subject=agent.user.username
                )
            ),
        }
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        with anyio.CancelScope() as request:
            running = self.running.setdefault(agent.id, set())
            running.add(request)
            try:
                await self.manager.handle_request(scope, receive, sending)
            finally:
                running.discard(request)
        if request.cancelled_caught and not started:  # revoked while it was being served
            sentence = UNKNOWN if secret.startswith(ACCESS_PREFIX) else refusal(secret)
            await challenge(scope, sentence, invalid=True)(scope, receive, send)


class Agents:
    """Everything /mcp needs, made once per app: the relay, the MCP server and its session manager,
    the page's routes; `lifespan` runs the session manager."""

    def __init__(
        self,
        auth: Auth,
        tokens: AgentTokens,
        origins: Iterable[str],
        database: Database,
        grants: Grants,
        public_url: str = "",
    ) -> None:
        # Processes sharing a PostgreSQL database share their pages by it (server/agents/bus.py).
        self.bus = PostgresPageBus(database) if database.kind == "postgresql" else None
        self.auth, self.tokens, self.grants, self.relay = auth, tokens, grants, PageRelay(self.bus)
        # ...and their MCP sessions (server/agents/sessions.py).
        self.sessions = SessionRows(database) if self.bus is not None else None
        self.server = mcp_server(self.relay, lambda ctx: _page_url(ctx.request, public_url))
        self.server.middleware.append(SessionWatch(self.relay, self.sessions))
        self.endpoint = McpEndpoint(tokens, origins, grants)
        tokens.on_revoke.append(self.revoke)
        grants.on_revoke.append(self.revoke)
        self.relay.hearers[REVOKED] = lambda message: self._revoke_here(message.get("token"))

    def revoke(self, token_id: str) -> None:
        """A token was revoked: what it opened ends on every process (the other processes are
        told again until the database takes the message)."""
        self._revoke_here(token_id)
        if self.bus is not None:
            task = asyncio.ensure_future(self._tell_revoked(token_id))
            self.relay.notices.add(task)  # held until done
            task.add_done_callback(self.relay.notices.discard)

    async def _tell_revoked(self, token_id: str) -> None:
        assert self.bus is not None
        for _ in range(REVOKE_TRIES):
            try:
                await asyncio.to_thread(self.bus.send, "*", {"type": REVOKED, "token": token_id})
                return
            except DatabaseError as error:
                log.warning("Could not tell the other processes of a revoked token: %s", error)
                await asyncio.sleep(REVOKE_RETRY_SECONDS)

    def _revoke_here(self, token_id: Any) -> None:
        if isinstance(token_id, str):
            # no request is served from what this process counted ahead for it (leases.py)
            self.tokens.leases.forget(token_id)
            self.grants.leases.forget(token_id)
            task = asyncio.ensure_future(self.endpoint.revoked(token_id))
            self.relay.notices.add(task)  # held until done
            task.add_done_callback(self.relay.notices.discard)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """The SDK's session manager runs once per instance: a new one for each run of the app."""
        # Host and Origin are checked by the app (HostCheck) and McpEndpoint, for every name it
        # serves.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        manager = (
            SettlingSessionManager(app=self.server, security_settings=security)
            if self.sessions is None
            else SharedSessionManager(
                app=self.server, security_settings=security, rows=self.sessions, relay=self.relay
            )
        )
        if self.bus is not None:
            self.bus.start(self.relay)
        async with contextlib.AsyncExitStack() as stack:
            if self.bus is not None:
                stack.callback(self.bus.stop)
            await stack.enter_async_context(manager.run())
            self.endpoint.manager = manager
            try:
                yield
            finally:
                if self.endpoint.manager is manager:
                    self.endpoint.manager = None

    def stop(self) -> None:
        """The server is stopping (SIGTERM): calls waiting here end with a sentence and are
        withdrawn from their pages, and the pages linked here link again elsewhere."""
        self.relay.stop()

    def own_page(self, scope: Scope) -> bool:
        """Whether a page of this server (or of an allowed origin) asks: the stream is a GET the
        cross-site write check does not see, and a page of another port of the same site (whose
        fetch carries the SameSite=Lax cookie) must not take the person's calls for itself. A
        page refused for what a proxy lost is a line in the log (the browser shows no reason)."""
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is not None:
            own = origin in self.endpoint.origins or same_origin(origin, scope)
            if not own:
                proxy_fault(origin, scope)
            return own
        return headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")

    def routes(self) -> list[Any]:
        return [
            WebSocketRoute(LINK_PATH, self.page_link),
            *routes_of(link_without_upgrade),
        ]

    async def page_link(self, socket: WebSocket) -> None:
        """A connected page's one connection: `hello` {page} first, then `call` and `cancel` go
        down; `answer`, `claim` (answered by `claimed`), `tools` (acknowledged by `listed`),
        `active` and `where` come up. A refusal after the handshake is a close code the page can
        read (reactor/messages.py LINK_CLOSE): signed out, too many pages."""
        if not self.own_page(socket.scope):
            # before the handshake is accepted: the browser sees a 403
            await socket.close(LINK_CLOSE["notOwnPage"])
            return
        token = session_token(socket)
        user = self.auth.user_for_token(token)
        await socket.accept()
        if user is None:
            await socket.close(LINK_CLOSE["signedOut"], "Sign in to let your agents use this page.")
            return
        relay = self.relay
        query = socket.query_params
        page = relay.connect(
            user.username, query.get("title", ""), query.get("url", ""), query.get("route", "")
        )
        if page is None:
            await socket.close(
                LINK_CLOSE["tooManyPages"],
                f"You have {MAX_PAGES} pages connected already; switch one off first.",
            )
            return
        # Either direction may end the link: the page going (up), a refusal or a fault (down).
        down = asyncio.ensure_future(self._down(socket, page, token))
        up = asyncio.ensure_future(self._up(socket, page, token))
        try:
            await asyncio.wait({down, up}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (down, up):
                task.cancel()
            ended = await asyncio.gather(down, up, return_exceptions=True)
            relay.disconnect(page)
        fault = next((e for e in ended if isinstance(e, DatabaseError)), None)
        if fault is not None:  # server/faults.py closes the link with "try again later"
            raise fault
        with contextlib.suppress(Exception):  # a send that failed: the page went
            await socket.close()

    async def _down(self, socket: WebSocket, page: PageLink, token: str) -> None:
        """Calls and cancels to the page; every RECHECK_SECONDS, whatever the traffic, its person
        is checked again (a session signed out elsewhere ends the link). The recheck comes as a
        mark in the outbox, so a call waits on the queue alone (no timeout task per message)."""
        assert page.outbox is not None and page.loop is not None
        await socket.send_text(json.dumps({"type": "hello", "page": page.id}))
        outbox = page.outbox
        recheck = page.loop.call_later(RECHECK_SECONDS, outbox.put_nowait, RECHECK)
        try:
            while True:
                message = await outbox.get()
                if message is RECHECK:
                    if self.auth.user_for_token(token) is None:
                        await socket.close(
                            LINK_CLOSE["signedOut"],
                            "You were signed out; sign in to let your agents use this page.",
                        )
                        return
                    recheck = page.loop.call_later(RECHECK_SECONDS, outbox.put_nowait, RECHECK)
                    continue
                if message is None:
                    # the server ended it: the page connects again
                    await socket.close(LINK_CLOSE["serverStopping"])
                    return
                await socket.send_text(json.dumps(message, ensure_ascii=False))
        finally:
            recheck.cancel()

    async def _up(self, socket: WebSocket, page: PageLink, token: str) -> None:
        """The page's messages until it goes; each one is its person's, checked again: an answer
        just after it is relayed, and only when the last check is ANSWER_CHECK_SECONDS old (a
        call's answer comes every millisecond or two when an agent is busy)."""
        checked = -math.inf  # when the session was last found signed in
        while True:
            received = await socket.receive()
            if received["type"] == "websocket.disconnect":
                return
            text = received.get("text")
            if text is None or len(text) > LINK_MESSAGE_LIMIT:
                await _tell(
                    socket,
                    f"Send each message as JSON text of at most {LINK_MESSAGE_LIMIT:,} characters.",
                )
                continue
            try:
                body = json.loads(text)
            except (ValueError, RecursionError):  # not JSON, or nested past what Python reads
                body = None
            answer = isinstance(body, dict) and body.get("type") == "answer"
            if answer:
                # A call's answer goes to its agent first: the call was sent to this page while
                # its person was signed in. The check follows once the answer is on its way.
                problem = _page_says(self.relay, page, body)  # type: ignore[arg-type]
                await asyncio.sleep(0)
            if not answer or time.monotonic() - checked >= ANSWER_CHECK_SECONDS:
                user = self.auth.user_for_token(token)
                if user is None or user.username != page.username:
                    await socket.close(
                        LINK_CLOSE["signedOut"],
                        "You were signed out; sign in to let your agents use this page.",
                    )
                    return
                checked = time.monotonic()
            if not isinstance(body, dict):
                await _tell(socket, "Send each message as a JSON object.")
                continue
            if not answer:
                problem = _page_says(self.relay, page, body)
            if problem is not None:
                await _tell(socket, problem)
            elif body["type"] == "tools":
                await socket.send_text(json.dumps({"type": "listed", "tools": len(page.tools)}))


@declare(
    "GET",
    LINK_PATH,
    "The page's link for desktop agents, asked without its WebSocket upgrade",
    description="The link is a WebSocket (Upgrade: websocket). A plain GET, which is what a "
    "proxy that does not pass WebSockets on makes of the handshake, is answered 426 with what "
    "to set; the page asks it to say why its WebSocket never opened.",
    replies={},
    refusals={426: NOT_UPGRADED},
)
async def link_without_upgrade(call: Call) -> Any:
    client = call.request.client
    log.warning(
        "GET %s came without `Upgrade: websocket` from %s: the proxy in front of reactor does not "
        "pass WebSockets on; nginx needs %s",
        LINK_PATH,
        client.host if client else "unknown",
        PASS_WEBSOCKETS.replace("`", ""),
    )
    raise ApiError(426, NOT_UPGRADED, headers={"upgrade": "websocket"})


async def _tell(socket: WebSocket, problem: str) -> None:
    """What was wrong with the page's last message (the page logs it for its developer)."""
    await socket.send_text(json.dumps({"type": "problem", "error": problem}))


def _page_says(relay: PageRelay, page: PageLink, body: dict[str, Any]) -> str | None:
    """Act on one message of the page; what is wrong with it, if anything."""
    kind = body.get("type")
    if kind == "answer":
        call, envelope = body.get("call"), body.get("envelope")
        if (
            not isinstance(call, str)
            or not isinstance(envelope, dict)
            or not isinstance(envelope.get("ok"), bool)
        ):
            return 'An answer is {"type": "answer", "call": "…", "envelope": {"ok": …}}.'
        # one nobody waits for any more (given up, or not a call) is dropped
        relay.answer(page, call, envelope)
        return None
    if kind == "claim":
        call = body.get("call")
        if not isinstance(call, str) or not call:
            return 'A claim is {"type": "claim", "call": "…"}: the call the person allowed.'
        relay.claim(page, call)  # answered down the link: `claimed` {call, ok}
        return None
    if kind == "tools":
        tools = body.get("tools")
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            return 'A tool list is {"type": "tools", "tools": [{name, inputSchema, …}]}.'
        relay.set_tools(page, tools)
        return None
    if kind == "active":
        relay.touch(page)
        return None
    if kind == "where":
        title, route = body.get("title"), body.get("route")
        if not isinstance(title, str) or not isinstance(route, str):
            return 'Where a page is: {"type": "where", "title": "…", "route": "#/…"}.'
        relay.locate(page, title, route)
        return None
    return f'Send {{"type": {" | ".join(json.dumps(t) for t in sorted(LINK_UP))}, …}}.'


def _page_url(request: Request | None, public_url: str = "") -> str:
    """The page's address for a person: the one people see (`--public-url`), else as this
    request reached the server (its scheme as a trusted proxy says it)."""
    if public_url:
        return f"{public_url}/"
    if request is None:
        return "the reactor page"
    return f"{request.url.scheme}://{request.headers.get('host', '127.0.0.1')}/"
