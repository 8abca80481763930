"""How /mcp answers a 2025-11-25 request: one JSON body when the answer is the first thing the
server has to say for it, an event stream only once something else comes first.

Streamable HTTP lets the server choose per request (a client MUST accept both). The SDK's
2025-11-25 transport commits every request to an event stream before the handler runs; its
2026-07-28 path already defers that choice as this does. Most agent calls are answered by the
page within milliseconds, and an event stream costs about a millisecond more than a JSON body on
each of them (its tasks, its rendezvous stream, chunked framing). A call that waits for the
person still gets its progress notices: the first one opens the stream, and the answer follows on
it.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import pydantic_core
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.streamable_http import (
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID_HEADER,
    REQUEST_STREAM_BUFFER_SIZE,
    EventMessage,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import SessionMessage
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

ANSWERS = (JSONRPCResponse, JSONRPCError)
CLOSED = "The client closed its request."
IDLE_SECONDS = 600.0  # a session no request has used for this long ends (the SDK's own: 30 min)
SESSIONS_PER_TOKEN = 64  # open at once on one process
SESSIONS_PER_PERSON = 256


class SettlingTransport(StreamableHTTPServerTransport):
    """The SDK's transport, with a request's answer mode chosen by what it says first."""

    async def _handle_post_request(
        self, scope: Scope, request: Request, receive: Receive, send: Send
    ) -> None:
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
            if not watched.answered:  # the client closed the stream first: a cancel
                await cancel_request(self, message.id)


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
    POST breaks none of the transport's rules; None sends it the SDK's way, which words refusals."""
    has_json, has_sse = check_accept_headers(request)
    if not (has_json and has_sse):
        return None
    try:
        message = jsonrpc_message_adapter.validate_python(
            pydantic_core.from_json(await request.body()), by_name=False
        )
    except (ValueError, ValidationError):
        return None
    if not isinstance(message, JSONRPCRequest) or message.method == "initialize":
        return None
    return message


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
