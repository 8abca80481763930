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

from typing import Any

import anyio
import pydantic_core
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
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    JSONRPCError,
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
            first = await reader.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            await self._clean_up_memory_streams(request_id)
            await _session_ended(message)(scope, receive, send)
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

        async def forward() -> None:
            opening = self._create_event_data(first)
            await self._run_sse_writer(request_id, events, reader, opening)  # type: ignore[arg-type]

        try:
            await EventSourceResponse(
                content=stream, data_sender_callable=forward, headers=headers
            )(scope, receive, send)
        finally:
            await stream.aclose()


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
    """The SDK's session manager, its sessions on SettlingTransport."""

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if transport is not None:
            transport.__class__ = (
                SettlingTransport  # the same object and state: only the POST handling differs
            )
        return transport
