"""How /mcp answers a 2025-11-25 request: one JSON body when the answer is the first thing the
server has to say for it, an event stream only once something else comes first.

Streamable HTTP lets the server choose per request (a client MUST accept both). The SDK's
2025-11-25 transport commits every request to an event stream before the handler runs; its
2026-07-28 path already defers that choice as this does. Most agent calls are answered by the
page within milliseconds, and an event stream costs about a millisecond more than a JSON body on
each of them (its tasks, its rendezvous stream, chunked framing). A call that waits for the
person still gets its progress notices: the first one opens the stream, and the answer follows on
it.

A request of a session this process has served before runs in the request's own task, by the
session's own kernel (the SDK's ServerRunner over the session's Connection, registered with its
dispatcher as in flight, so a client's `notifications/cancelled` reaches it): not through the
session loop's streams and a task of its own, which took ~0.2 ms of each call. Only a request
still running after WATCH_AFTER gets a second task, which notices a client that closed the
request and opens the event stream when a progress notice comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pydantic_core
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.runner import MODERN_PROTOCOL_VERSIONS, ServerRunner
from mcp.server.streamable_http import (
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID_HEADER,
    REQUEST_CANCELLED,
    REQUEST_STREAM_BUFFER_SIZE,
    EventMessage,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import (
    JSONRPCDispatcher,
    _InFlight,
    _JSONRPCDispatchContext,
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp.shared.message import SessionMessage
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

log = logging.getLogger("reactor.server")
ANSWERS = (JSONRPCResponse, JSONRPCError)
CLOSED = "The client closed its request."
# Seconds a request runs before a task watches its client and its progress. With 20 agents on two
# cores a call takes 50-120 ms: at 0.02 s nearly every call paid for a watch (three tasks and their
# cancel scopes, 5% of a process's CPU: bench/proxy.py --profile). A client that closed its
# request, or the first progress notice, waits at most this long to be noticed.
WATCH_AFTER = 0.25
TRANSPORT = "reactor.transport"  # the scope's key for the transport serving the request
IDLE_SECONDS = 600.0  # a session no request has used for this long ends (the SDK's own: 30 min)
SESSIONS_PER_TOKEN = 64  # open at once on one process
SESSIONS_PER_PERSON = 256


class Kernel:
    """What a session's requests run on when served in their own task: its runner (the SDK's
    handler kernel over the session's Connection) and its dispatcher (which holds the requests in
    flight, for `notifications/cancelled`)."""

    __slots__ = ("dispatcher", "runner")

    def __init__(self, runner: ServerRunner[Any], dispatcher: JSONRPCDispatcher[Any]) -> None:
        self.runner, self.dispatcher = runner, dispatcher


class KernelCapture:
    """The MCP server's middleware: a session's first request through the SDK's loop hands its
    kernel to the session's transport, which serves the next ones in their own task."""

    def __init__(self, server: Server[Any]) -> None:
        self.server = server

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        request = ctx.request
        transport = None if request is None else request.scope.get(TRANSPORT)
        if isinstance(transport, SettlingTransport) and transport.kernel is None:
            # mcp 2.3 offers the session's connection and dispatcher under no public name.
            connection = getattr(ctx.session, "_connection", None)
            outbound = getattr(ctx.session, "_request_outbound", None)
            dispatcher = getattr(outbound, "_dispatcher", None)
            if isinstance(connection, Connection) and isinstance(dispatcher, JSONRPCDispatcher):
                runner = ServerRunner(self.server, connection, ctx.lifespan_context)
                transport.kernel = Kernel(runner, dispatcher)
        return await call_next(ctx)


class DirectToolCalls:
    """The MCP server's middleware: a `tools/call` of a 2025-11-25 (or older) session
    whose params are plain — a name, an object of arguments, at most a progress token in `_meta` —
    goes to `answer` (name, arguments: the result's wire form) without the SDK validating the
    params against the spec's model and the result against it again (two pydantic round trips,
    a twentieth of a call's CPU in the server). Anything else takes the SDK's way, which words
    the refusals: other methods and params, a session not yet initialized, the 2026-07-28 era
    (whose results the SDK stamps)."""

    def __init__(self, answer: Callable[..., Awaitable[dict[str, Any]]]) -> None:
        self.answer = answer

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params
        if (
            ctx.method != "tools/call"
            or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
            or not _plain_call(params)
        ):
            return await call_next(ctx)
        connection = getattr(ctx.session, "_connection", None)  # no public name in mcp 2.3
        if not isinstance(connection, Connection) or not connection.initialize_accepted:
            return await call_next(ctx)
        assert params is not None
        return await self.answer(ctx, params["name"], dict(params.get("arguments") or {}))


def _plain_call(params: Any) -> bool:
    """Whether tools/call params hold only what CallToolRequestParams takes, each of its type."""
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        return False
    if not params.keys() <= {"name", "arguments", "_meta"}:
        return False
    arguments, meta = params.get("arguments"), params.get("_meta", {})
    if arguments is not None and not isinstance(arguments, dict):
        return False
    if not isinstance(meta, dict) or not meta.keys() <= {"progressToken"}:
        return False
    token = meta.get("progressToken", "")
    return isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool))


class SettlingTransport(StreamableHTTPServerTransport):
    """The SDK's transport, with a request's answer mode chosen by what it says first."""

    kernel: Kernel | None = None  # once a request went through the session's loop
    serving: set[anyio.CancelScope] | None = None  # the requests running in their own task

    async def terminate(self) -> None:
        """The session ends: the requests running in their own task stop (the SDK's loop stops
        its own)."""
        self._terminated = True
        for running in list(self.serving or ()):
            running.cancel()
        await super().terminate()

    async def _handle_post_request(
        self, scope: Scope, request: Request, receive: Receive, send: Send
    ) -> None:
        scope[TRANSPORT] = self  # request.scope: KernelCapture finds the transport by it
        message = await _plain_request(request) if self._check_content_type(request) else None
        if message is None:  # initialize, a notification, a response, a refusal: the SDK's way
            await super()._handle_post_request(scope, request, receive, send)
            return
        if not await self._validate_request_headers(request, send):
            return
        request_id = str(message.id)
        writer, reader = anyio.create_memory_object_stream[EventMessage](REQUEST_STREAM_BUFFER_SIZE)
        self._request_streams[request_id] = (writer, reader)
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
        if self.kernel is not None and not self._terminated:
            served = ServedHere(self, self.kernel, message, writer, reader)
            try:
                await served.run(
                    self._create_session_message(message, request, request_id, version),
                    scope,
                    receive,
                    send,
                )
            finally:
                await self._clean_up_memory_streams(request_id)
            return
        # The session is connected: its headers were valid.
        assert self._read_stream_writer is not None
        await self._read_stream_writer.send(
            self._create_session_message(message, request, request_id, version)
        )
        try:
            first = await _first_unless_gone(reader, receive)
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            await self._clean_up_memory_streams(request_id)
            await _session_ended(message)(scope, receive, send)
            return
        if first is None:  # the client closed its request before anything came: a cancel
            await self._clean_up_memory_streams(request_id)
            await cancel_request(self, message.id)
            return
        if isinstance(first.message, ANSWERS):
            await self._clean_up_memory_streams(request_id)
            await self._create_json_response(first.message)(scope, receive, send)
            return
        # A progress notice (or a request to the client) came first: the rest is an event stream,
        # that message its first event, ended by the answer.
        if not await self._stream_events(request_id, first, reader, scope, receive, send):
            await cancel_request(self, message.id)  # the client closed the stream first

    async def _stream_events(
        self,
        request_id: str,
        first: EventMessage,
        reader: MemoryObjectReceiveStream[EventMessage],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> bool:
        """Answer with an event stream: `first`, then what comes from `reader` up to the answer;
        whether the answer went."""
        events, stream = anyio.create_memory_object_stream[dict[str, Any]](0)
        self._sse_stream_writers[request_id] = events
        headers = {
            "Cache-Control": "no-cache, no-transform",
            "Connection": "keep-alive",
            "Content-Type": CONTENT_TYPE_SSE,
        }
        if self.mcp_session_id:
            headers[MCP_SESSION_ID_HEADER] = self.mcp_session_id

        watched = AnswerWatch(reader)

        async def forward() -> None:
            opening = self._create_event_data(first)
            await self._run_sse_writer(request_id, events, watched, opening)  # type: ignore[arg-type]

        try:
            await EventSourceResponse(
                content=stream, data_sender_callable=forward, headers=headers
            )(scope, receive, send)
        finally:
            await stream.aclose()
        return watched.answered


class ServedHere:
    """One request of a session, run in its own task by the session's kernel, answered in JSON;
    after WATCH_AFTER a watch task notices its client closing it (the call is cancelled, and
    withdrawn from the page) and opens the event stream when a progress notice comes (the answer
    then follows on it)."""

    def __init__(
        self,
        transport: SettlingTransport,
        kernel: Kernel,
        message: JSONRPCRequest,
        writer: MemoryObjectSendStream[EventMessage],
        reader: MemoryObjectReceiveStream[EventMessage],
    ) -> None:
        self.transport, self.kernel, self.message = transport, kernel, message
        self.writer, self.reader = writer, reader
        self.running = anyio.CancelScope()
        self.watch: asyncio.Future[None] | None = None
        self.gone = False  # the client closed the request: nobody to answer
        self.streaming = False  # the watch answers with an event stream

    async def run(self, framed: SessionMessage, scope: Scope, receive: Receive, send: Send) -> None:
        message, dispatcher, transport = self.message, self.kernel.dispatcher, self.transport
        metadata = framed.metadata
        dctx = _JSONRPCDispatchContext(
            transport=dispatcher._transport_builder(metadata),
            _dispatcher=dispatcher,
            _request_id=message.id,
            message_metadata=metadata,
            _progress_token=progress_token_from_params(message.params),
        )
        key = coerce_request_id(message.id)
        dispatcher._in_flight[key] = _InFlight(scope=self.running, dctx=dctx)
        serving = transport.serving = transport.serving or set()
        serving.add(self.running)
        timer = asyncio.get_running_loop().call_later(
            WATCH_AFTER, self._start_watch, scope, receive, send
        )
        answer: JSONRPCResponse | JSONRPCError | None = None
        try:
            with self.running:
                try:
                    runner = self.kernel.runner
                    result = await runner.on_request(dctx, message.method, message.params)
                    answer = JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
                except Exception as error:  # as the SDK's dispatcher words a handler's failure
                    data = handler_exception_to_error_data(error)
                    if data is None:
                        log.exception("handler for %r raised", message.method)
                        data = ErrorData(code=0, message=str(error))
                    answer = JSONRPCError(jsonrpc="2.0", id=message.id, error=data)
                finally:
                    timer.cancel()
                    dctx.close()
                    entry = dispatcher._in_flight.get(key)
                    if entry is not None and entry.dctx is dctx:
                        del dispatcher._in_flight[key]
            if dctx.cancel_requested.is_set():  # the client's notifications/cancelled
                cancelled = ErrorData(code=REQUEST_CANCELLED, message="Request cancelled")
                answer = JSONRPCError(jsonrpc="2.0", id=message.id, error=cancelled)
            if self.streaming:
                if answer is not None:
                    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                        await self.writer.send(EventMessage(answer))
                assert self.watch is not None
                await self.watch
                return
            await self._stop_watch()
            if self.gone:
                return
            if answer is None:  # the session ended while the request ran
                await _session_ended(message)(scope, receive, send)
                return
            await transport._create_json_response(answer)(scope, receive, send)
        finally:
            serving.discard(self.running)
            await self._stop_watch()

    def _start_watch(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.watch = asyncio.ensure_future(self._watching(scope, receive, send))

    async def _stop_watch(self) -> None:
        if self.watch is not None and not self.watch.done():
            self.watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.watch

    async def _watching(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            first = await _first_unless_gone(self.reader, receive)
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return  # the session ended: the request's task answers
        if first is None:  # the client closed its request: the call stops
            self.gone = True
            self.running.cancel()
            return
        self.streaming = True
        answered = await self.transport._stream_events(
            str(self.message.id), first, self.reader, scope, receive, send
        )
        if not answered:  # the client closed the stream first: the call stops
            self.gone = True
            self.running.cancel()


async def _first_unless_gone(
    reader: MemoryObjectReceiveStream[EventMessage], receive: Receive
) -> EventMessage | None:
    """The first message the session has for this request; None when the client closes the
    request first (its body is read: what `receive` has left is its disconnect)."""
    first: EventMessage | None = None
    ended: Exception | None = None
    async with anyio.create_task_group() as watch:

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            watch.cancel_scope.cancel()

        watch.start_soon(gone)
        try:
            first = await reader.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError) as error:
            ended = error  # raised out here: inside, the task group would wrap it in a group
        finally:
            watch.cancel_scope.cancel()
    if ended is not None:
        raise ended
    return first


class AnswerWatch:
    """A request's stream of messages, noting whether its answer went through."""

    def __init__(self, reader: MemoryObjectReceiveStream[EventMessage]) -> None:
        self.reader, self.answered = reader, False

    async def __aenter__(self) -> AnswerWatch:
        await self.reader.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.reader.__aexit__(*exc)

    def __aiter__(self) -> AnswerWatch:
        return self

    async def __anext__(self) -> EventMessage:
        message = await self.reader.__anext__()
        if isinstance(message.message, ANSWERS):
            self.answered = True
        return message


async def cancel_request(
    transport: StreamableHTTPServerTransport, request_id: Any, reason: str = CLOSED
) -> None:
    """Cancel a request of the transport's session as a `notifications/cancelled` from its client
    would: the session's loop stops its handler, whose call the relay then withdraws from the
    page. A request whose client has gone is cancelled so, whatever the protocol's era."""
    # The transport's own stream into its session loop: the dispatcher there applies the cancel.
    writer = transport._read_stream_writer
    if writer is None:
        return
    params = {"requestId": request_id, **({"reason": reason} if reason else {})}
    notice = JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params=params)
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        await writer.send(SessionMessage(notice))


async def _plain_request(request: Request) -> JSONRPCRequest | None:
    """The request this POST carries, when it is one a session answers (not initialize) and the
    POST breaks none of the transport's rules; None sends it the SDK's way, which words refusals
    (and reads whatever else JSON-RPC allows)."""
    has_json, has_sse = check_accept_headers(request)
    if not (has_json and has_sse):
        return None
    try:
        body = pydantic_core.from_json(await request.body())
    except ValueError:
        return None
    if not isinstance(body, dict) or not body.keys() <= {"jsonrpc", "id", "method", "params"}:
        return None
    key, method, params = body.get("id"), body.get("method"), body.get("params")
    if (
        body.get("jsonrpc") != "2.0"
        or not isinstance(method, str)
        or method == "initialize"
        or not (isinstance(key, str) or (isinstance(key, int) and not isinstance(key, bool)))
        or not (params is None or isinstance(params, dict))
    ):
        return None
    # what the SDK's own reading makes of such a message, without validating it again
    return JSONRPCRequest.model_construct(jsonrpc="2.0", id=key, method=method, params=params)


def _session_ended(message: JSONRPCRequest) -> JSONResponse:
    error = {
        "code": -32600,
        "message": "The MCP session ended before this request was answered; start a new one.",
    }
    return JSONResponse({"jsonrpc": "2.0", "id": message.id, "error": error}, status_code=404)


class SettlingSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, its sessions on SettlingTransport; sessions bounded per token
    and per person (one person's flood of sessions never refuses another person), ended early
    when idle, and ended at once when their token is revoked."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("session_idle_timeout", IDLE_SECONDS)
        super().__init__(**options)

    def room_for(self, token_id: str, username: str) -> str:
        """ "" when the token and its person may open another session here; else the sentence
        that says why not."""
        owners = list(self._session_owners.values())
        if sum(owner["client_id"] == token_id for owner in owners) >= SESSIONS_PER_TOKEN:
            return (
                f"This agent token has {SESSIONS_PER_TOKEN} MCP sessions open, as many as one "
                "token may: end one (the client's DELETE) or wait for one to go unused for "
                f"{IDLE_SECONDS / 60:g} minutes."
            )
        if sum(owner["subject"] == username for owner in owners) >= SESSIONS_PER_PERSON:
            return (
                f"Your agents have {SESSIONS_PER_PERSON} MCP sessions open, as many as one person "
                "may: end some, or revoke a token you no longer use."
            )
        return ""

    async def end_sessions_of(self, token_id: str) -> None:
        """End every session the token opened: their streams close, their requests end."""
        for session_id, owner in list(self._session_owners.items()):
            transport = self._server_instances.get(session_id)
            if owner["client_id"] == token_id and transport is not None:
                await self._discard_session(session_id, transport)

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if transport is not None:
            transport.__class__ = (
                SettlingTransport  # the same object and state: only the POST handling differs
            )
        return transport
