"""A loopback stand-in for an OpenAI-compatible provider (the only thing outside this machine),
speaking the real Chat Completions wire format, served by the test's own reactor server."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from reactor.plugin_spec import PluginSpec


def tool_call_turn(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def text_turn(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


class FakeOpenAI:
    """Answers each POST /v1/chat/completions with the next scripted message; records requests."""

    name = "fake-openai"

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.delay = 0.0
        self.disconnected = 0
        self.asked = threading.Event()  # set at the first request: a test waits on it, not a clock
        self.hung_up = threading.Event()  # set when a caller left before the answer
        self.stream = (
            False  # answer requests that ask for a stream with chat.completion.chunk events
        )
        self.hold = threading.Event()  # cleared: a stream's last events wait until it is set
        self.hold.set()
        self.last_sent = threading.Event()

    def spec(self) -> PluginSpec:
        """This server as a plugin of the app under test (its server half is this object)."""
        return PluginSpec(name=self.name, server=lambda: self)

    def setup(self, context: Any, *, seed: bool) -> None:
        pass  # no tables

    def routes(self, context: Any) -> list[Route]:
        async def completions(request: Request) -> Response:
            body = await request.json()
            self.requests.append(body)
            self.asked.set()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.delay
            while loop.time() < deadline:
                if await request.is_disconnected():
                    self.disconnected += 1
                    self.hung_up.set()
                    return Response(status_code=499)
                await asyncio.sleep(0.05)
            if request.headers.get("authorization") != "Bearer test-key":
                return JSONResponse(
                    {
                        "error": {
                            "message": "Incorrect API key provided.",
                            "type": "invalid_request_error",
                            "code": "invalid_api_key",
                        }
                    },
                    401,
                )
            message = self.turns.pop(0) if self.turns else text_turn("Done.")
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            if self.stream and body.get("stream"):
                return StreamingResponse(
                    self._events(message, finish), media_type="text/event-stream"
                )
            return JSONResponse(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            )

        return [Route("/v1/chat/completions", completions, methods=["POST"])]

    async def _events(self, message: dict[str, Any], finish: str) -> Any:
        """The message as OpenAI streams it: a word per chunk, tool calls in pieces, then [DONE]."""

        def chunk(delta: dict[str, Any], reason: str | None = None) -> str:
            return (
                "data: "
                + json.dumps(
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
                    }
                )
                + "\n\n"
            )

        self.last_sent.clear()
        yield chunk({"role": "assistant", "content": ""})
        for word in (message.get("content") or "").split(" "):
            yield chunk({"content": word + " "})
            await asyncio.sleep(0.02)
        for index, call in enumerate(message.get("tool_calls") or []):
            arguments = call["function"]["arguments"]
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {
                                "name": call["function"]["name"],
                                "arguments": arguments[:5],
                            },
                        }
                    ]
                }
            )
            yield chunk(
                {"tool_calls": [{"index": index, "function": {"arguments": arguments[5:]}}]}
            )
        while not self.hold.is_set():
            await asyncio.sleep(0.05)
        yield chunk({}, finish)
        yield "data: [DONE]\n\n"
        self.last_sent.set()
