"""Loopback stand-ins for the two model providers (the only things a test cannot have on its
machine), each speaking its real streaming wire format: OpenAI's Chat Completions
(`chat.completion.chunk` events, tool calls in pieces by index, usage when asked, `[DONE]`) and
Anthropic's Messages (`message_start` … `content_block_delta` … `message_delta` with usage,
`message_stop`). A test scripts the next answers and failures, holds a stream, and reads what
arrived: the requests, their headers, and whether the caller hung up."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from reactor.server.loopback import LoopbackServer

ERRORS: dict[str, dict[int, dict[str, Any]]] = {
    "openai": {
        401: {
            "error": {
                "message": "Incorrect API key provided.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        },
        429: {
            "error": {
                "message": "Rate limit reached for requests.",
                "type": "requests",
                "code": "rate_limit_exceeded",
            }
        },
        500: {"error": {"message": "The server had an error.", "type": "server_error"}},
        503: {"error": {"message": "The engine is currently overloaded.", "type": "server_error"}},
    },
    "anthropic": {
        401: {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        },
        429: {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "Number of requests has exceeded your rate limit.",
            },
        },
        500: {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
        529: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    },
}


def text(words: str) -> dict[str, Any]:
    """An answer of text."""
    return {"text": words, "calls": []}


def call(
    name: str, arguments: dict[str, Any], call_id: str = "call_1", words: str = ""
) -> dict[str, Any]:
    """An answer that calls a tool (after `words`, if any)."""
    return {
        "text": words,
        "calls": [{"id": call_id, "name": name, "arguments": json.dumps(arguments)}],
    }


class StandIn:
    """One provider on http://127.0.0.1:<port>: OpenAI's paths under /v1, Anthropic's
    /v1/messages."""

    def __init__(self, provider: str, key: str, *, cors: bool = False) -> None:
        self.provider, self.key = provider, key
        self.answers: list[dict[str, Any]] = []
        self.failures: list[
            int
        ] = []  # statuses to answer the next requests with, in the provider's error shape
        self.cut_next = False  # the next stream drops its connection after its first text
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        # cleared: a stream waits after its `hold_after`-th text (its first) until it is set
        self.hold = threading.Event()
        self.hold.set()
        self.hold_after = 1
        self.first_text_sent = threading.Event()
        self.hung_up = threading.Event()  # the caller closed its connection before the answer ended
        self.sent_at: list[float] = []  # when each text delta was written (time.time())
        self.delta_gap = 0.0  # seconds between text deltas
        self.usage = (10, 20)  # input and output tokens reported per answer
        path = "/v1/chat/completions" if provider == "openai" else "/v1/messages"
        # With `cors`, pages of any origin may call it, as the providers' own APIs allow (the
        # bench's direct path).
        middleware = (
            [
                Middleware(
                    CORSMiddleware, allow_origins=["*"], allow_methods=["POST"], allow_headers=["*"]
                )
            ]
            if cors
            else []
        )
        self.server = LoopbackServer(
            Starlette(routes=[Route(path, self.answer, methods=["POST"])], middleware=middleware)
        )
        self.url = self.server.url + ("/v1" if provider == "openai" else "")

    def stop(self) -> None:
        self.hold.set()
        self.server.stop()

    async def answer(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        given = (
            request.headers.get("authorization", "")
            if self.provider == "openai"
            else request.headers.get("x-api-key", "")
        )
        if given not in (f"Bearer {self.key}", self.key):
            return JSONResponse(ERRORS[self.provider][401], 401)
        if self.failures:
            status = self.failures.pop(0)
            headers = {"retry-after": "7"} if status == 429 else {}
            return JSONResponse(ERRORS[self.provider][status], status, headers=headers)
        answer = self.answers.pop(0) if self.answers else text("Done.")
        if not body.get("stream"):
            return JSONResponse(self.whole(answer, body))
        cut, self.cut_next = self.cut_next, False
        return Streamed(self, self.events(answer, body), cut)

    def whole(self, answer: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if self.provider == "openai":
            message: dict[str, Any] = {"role": "assistant", "content": answer["text"] or None}
            if answer["calls"]:
                message["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in answer["calls"]
                ]
            return {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if answer["calls"] else "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": self.usage[0],
                    "completion_tokens": self.usage[1],
                    "total_tokens": sum(self.usage),
                },
            }
        content: list[dict[str, Any]] = (
            [{"type": "text", "text": answer["text"]}] if answer["text"] else []
        )
        content += [
            {
                "type": "tool_use",
                "id": c["id"],
                "name": c["name"],
                "input": json.loads(c["arguments"]),
            }
            for c in answer["calls"]
        ]
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if answer["calls"] else "end_turn",
            "usage": {"input_tokens": self.usage[0], "output_tokens": self.usage[1]},
        }

    def events(self, answer: dict[str, Any], body: dict[str, Any]) -> list[tuple[str, Any]]:
        """The answer as the provider streams it: ("text", event) marks a text delta."""
        words = [w + " " for w in answer["text"].split(" ")] if answer["text"] else []
        if self.provider == "openai":

            def chunk(delta: dict[str, Any], reason: str | None = None, **extra: Any) -> str:
                choices = (
                    [{"index": 0, "delta": delta, "finish_reason": reason}]
                    if delta is not None
                    else []
                )
                event = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "model": body["model"],
                    "choices": choices,
                    **extra,
                }
                return f"data: {json.dumps(event)}\n\n"

            out: list[tuple[str, Any]] = [("", chunk({"role": "assistant", "content": ""}))]
            out += [("text", chunk({"content": w})) for w in words]
            for index, c in enumerate(answer["calls"]):
                first = {
                    "index": index,
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"][:4]},
                }
                out.append(("", chunk({"tool_calls": [first]})))
                out.append(
                    (
                        "",
                        chunk(
                            {
                                "tool_calls": [
                                    {"index": index, "function": {"arguments": c["arguments"][4:]}}
                                ]
                            }
                        ),
                    )
                )
            out.append(("", chunk({}, "tool_calls" if answer["calls"] else "stop")))
            if (body.get("stream_options") or {}).get("include_usage"):
                usage = {
                    "prompt_tokens": self.usage[0],
                    "completion_tokens": self.usage[1],
                    "total_tokens": sum(self.usage),
                }
                out.append(("", chunk(None, usage=usage)))  # type: ignore[arg-type]
            return [*out, ("", "data: [DONE]\n\n")]

        def event(kind: str, payload: dict[str, Any]) -> str:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **payload})}\n\n"

        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [],
        }
        out = [
            (
                "",
                event(
                    "message_start",
                    {
                        "message": {
                            **message,
                            "usage": {"input_tokens": self.usage[0], "output_tokens": 1},
                        }
                    },
                ),
            )
        ]
        index = 0
        if words:
            out.append(
                (
                    "",
                    event(
                        "content_block_start",
                        {"index": 0, "content_block": {"type": "text", "text": ""}},
                    ),
                )
            )
            out += [
                (
                    "text",
                    event(
                        "content_block_delta",
                        {"index": 0, "delta": {"type": "text_delta", "text": w}},
                    ),
                )
                for w in words
            ]
            out.append(("", event("content_block_stop", {"index": 0})))
            index = 1
        for c in answer["calls"]:
            block = {"type": "tool_use", "id": c["id"], "name": c["name"], "input": {}}
            out.append(("", event("content_block_start", {"index": index, "content_block": block})))
            for piece in (c["arguments"][:4], c["arguments"][4:]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                out.append(("", event("content_block_delta", {"index": index, "delta": delta})))
            out.append(("", event("content_block_stop", {"index": index})))
            index += 1
        stop = {"stop_reason": "tool_use" if answer["calls"] else "end_turn", "stop_sequence": None}
        out.append(
            ("", event("message_delta", {"delta": stop, "usage": {"output_tokens": self.usage[1]}}))
        )
        return [*out, ("", event("message_stop", {}))]


class Streamed(Response):
    """A stream written event by event, that notices at once when its caller hangs up."""

    def __init__(self, stand_in: StandIn, events: list[tuple[str, Any]], cut: bool) -> None:
        super().__init__()
        self.stand_in, self.events, self.cut = stand_in, events, cut

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        writing = asyncio.ensure_future(self.write(send))
        left = asyncio.ensure_future(_hang_up(receive))
        await asyncio.wait({writing, left}, return_when=asyncio.FIRST_COMPLETED)
        if left.done() and not writing.done():
            self.stand_in.hung_up.set()
        for task in (writing, left):
            task.cancel()
        await asyncio.gather(writing, left, return_exceptions=True)
        if writing.done() and not writing.cancelled() and writing.exception() is not None:
            raise writing.exception()  # type: ignore[misc]  # the cut: the connection drops mid-stream

    async def write(self, send: Any) -> None:
        stand_in = self.stand_in
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        texts = 0
        for kind, event in self.events:
            if kind == "text":
                if texts and stand_in.delta_gap:
                    await asyncio.sleep(stand_in.delta_gap)
                stand_in.sent_at.append(time.time())
            await send({"type": "http.response.body", "body": event.encode(), "more_body": True})
            if kind != "text":
                continue
            texts += 1
            if texts == 1:
                stand_in.first_text_sent.set()
                if self.cut:
                    raise ConnectionResetError("the stand-in drops the connection mid-stream")
            if texts == stand_in.hold_after:
                while not stand_in.hold.is_set():
                    await asyncio.sleep(0.01)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _hang_up(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
