"""Anthropic Messages: POST {base_url}/v1/messages with `tools` as {name, description,
input_schema}.

The answer's content holds text and `tool_use` blocks (`input` is already an object);
results go back in the next user message as `tool_result` blocks, first in its content.
The API wants user and assistant turns to alternate and no empty text blocks, so the
history is rendered with adjacent user parts merged. The browser may call the API directly
only with the `anthropic-dangerous-direct-browser-access` header — the key is the caller's.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import ProviderError
from .formats import anthropic_result, anthropic_tools
from .model import END_TURN, MAX_TOKENS, OTHER, REFUSAL, TOOL_USE, ModelRequest, ModelTurn, ToolCall
from .streaming import AnthropicStream
from .transport import Send
from .wire import WireModel

_STOPS = {
    "end_turn": END_TURN,
    "stop_sequence": END_TURN,
    "tool_use": TOOL_USE,
    "max_tokens": MAX_TOKENS,
    "refusal": REFUSAL,
}


class AnthropicModel(WireModel):
    """A Claude model over the Messages API; the key stays with the caller."""

    provider = "Anthropic"
    path = "/v1/messages"

    def __init__(
        self,
        *,
        model: str,
        send: Send,
        api_key: str,
        base_url: str = "https://api.anthropic.com",
        max_tokens: int = 4096,
        version: str = "2023-06-01",
        label: str = "",
        stream: bool = False,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.label = label or model
        self.max_tokens = max_tokens
        self.version = version
        self._send = send
        self._api_key = api_key
        self.stream = stream  # ask for server-sent events; an answer in one piece still works

    def __repr__(self) -> str:  # never the key
        return f"AnthropicModel(base_url={self.base_url!r}, model={self.model!r})"

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": _messages(request.messages),
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = anthropic_tools(request.tools)
        return body

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self.version}
        # a key typed in the page goes straight to Anthropic, which asks this header of browsers
        if self._api_key:
            headers |= {
                "x-api-key": self._api_key,
                "anthropic-dangerous-direct-browser-access": "true",
            }
        return headers

    def new_stream(self, on_text: Any) -> AnthropicStream:
        return AnthropicStream(self.provider, on_text)

    def streamed_turn(self, stream: AnthropicStream) -> ModelTurn:
        return self.parse_response({"content": stream.content(), "stop_reason": stream.stop_reason})

    def parse_response(self, data: dict[str, Any]) -> ModelTurn:
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise ProviderError(
                f"Anthropic answered without a content list: {json.dumps(data)[:200]}.",
                provider=self.provider,
                status=200,
                kind="bad_response",
            )
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        calls = tuple(
            ToolCall(b["id"], b["name"], b.get("input"))
            for b in blocks
            if b.get("type") == "tool_use"
        )
        reason = str(data.get("stop_reason") or "")
        return ModelTurn(text, calls, _STOPS.get(reason, OTHER), reason)


def _messages(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rendered: list[dict[str, Any]] = []
    for message in history:
        role, parts = _parts(message)
        if not parts:
            continue  # an empty assistant turn would be refused
        if rendered and rendered[-1]["role"] == role:
            rendered[-1]["content"] += parts
        else:
            rendered.append({"role": role, "content": parts})
    for message in rendered:  # tool results must come first in a user turn
        message["content"].sort(key=lambda part: part.get("type") != "tool_result")
    return rendered


def _parts(message: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    if message["role"] == "tool":
        return "user", [anthropic_result(message["tool_call_id"], message["result"])]
    text = message.get("content") or ""
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for call in message.get("tool_calls") or []:
        parts.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": call["name"],
                "input": _input(call["arguments"]),
            }
        )
    return message["role"], parts


def _input(arguments: Any) -> dict[str, Any]:
    # History written by another provider may hold arguments as text; tool_use.input must be an
    # object.
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = {}
    return arguments if isinstance(arguments, dict) else {}
