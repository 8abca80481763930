"""Streamed replies: server-sent events read as they arrive, assembled into one ModelTurn.

`EventStream` cuts text chunks (split anywhere, even inside a line) into events as the SSE
standard does. `OpenAIStream` and `AnthropicStream` turn each provider's events into text
deltas, handed on at once, and tool calls, kept until complete: OpenAI's `chat.completion.chunk`
with `tool_calls` pieces assembled by index and `[DONE]`; Anthropic's `message_start`,
`content_block_start/delta/stop` (`text_delta`, `input_json_delta`), `message_delta` and
`message_stop`. Local servers' variants (llama.cpp, Ollama: no index, a call in one piece,
arguments as an object) are read too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .errors import ProviderError
from .model import ToolCall


class EventStream:
    """Server-sent events from text chunks: `feed(chunk)` returns the events it completed, as
    (event type, data); comments and retry lines are skipped."""

    def __init__(self) -> None:
        self._buffer = ""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: str) -> list[tuple[str, str]]:
        self._buffer += chunk
        events: list[tuple[str, str]] = []
        while True:
            cut = min(
                (i for i in (self._buffer.find("\n"), self._buffer.find("\r")) if i >= 0),
                default=-1,
            )
            if cut < 0:
                return events
            if self._buffer[cut] == "\r" and cut + 1 == len(self._buffer):
                return events  # a "\r" may be the first half of "\r\n": wait for the next chunk
            line = self._buffer[:cut]
            self._buffer = self._buffer[cut + (2 if self._buffer.startswith("\r\n", cut) else 1) :]
            if not line:
                if self._data:
                    events.append((self._event or "message", "\n".join(self._data)))
                self._event, self._data = "", []
            elif not line.startswith(":"):
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "data":
                    self._data.append(value)
                elif field == "event":
                    self._event = value

    def close(self) -> list[tuple[str, str]]:
        """The last event, if the stream ended without its blank line."""
        events = self.feed("\n\n") if self._buffer or self._data else []
        return events


def _json(data: str, provider: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise ProviderError(
            f"{provider} streamed an event that is not JSON: {data[:200]!r}.",
            provider=provider,
            status=200,
            kind="bad_response",
        ) from None


class OpenAIStream:
    """One streamed Chat Completions answer."""

    def __init__(self, provider: str, on_text: Callable[[str], object]) -> None:
        self.provider, self.on_text = provider, on_text
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason = ""
        self.done = False

    def event(self, kind: str, data: str) -> None:
        if data.strip() == "[DONE]":
            self.done = True
            return
        chunk = _json(data, self.provider)
        if isinstance(chunk, dict) and chunk.get("error"):
            error = chunk["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ProviderError(
                f"{self.provider} stopped mid-answer ({str(message).rstrip('.')}); send your "
                "message again to retry.",
                provider=self.provider,
                status=200,
                kind="server",
                detail=str(message),
            )
        for choice in (chunk.get("choices") or []) if isinstance(chunk, dict) else []:
            delta = choice.get("delta") or choice.get("message") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text.append(content)
                self.on_text(content)
            for piece in delta.get("tool_calls") or []:
                index = piece.get("index")
                # Ollama sends whole calls without an index: a new id is a new call
                if index is None:
                    last = max(self.calls, default=-1)
                    index = (
                        last + 1
                        if last < 0
                        or piece.get("id") != self.calls[last]["id"]
                        or not piece.get("id")
                        else last
                    )
                call = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                call["id"] = piece.get("id") or call["id"]
                function = piece.get("function") or {}
                call["name"] += function.get("name") or ""
                arguments = function.get("arguments")
                call["arguments"] += (
                    arguments
                    if isinstance(arguments, str)
                    else json.dumps(arguments)
                    if arguments
                    else ""
                )
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    @property
    def complete(self) -> bool:
        """Whether the answer ended as answers end ([DONE], or at least a finish reason)."""
        return self.done or bool(self.finish_reason)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(c["id"] or f"call_{i}", c["name"], c["arguments"] or "{}")
            for i, c in sorted(self.calls.items())
        )


class AnthropicStream:
    """One streamed Messages answer."""

    def __init__(self, provider: str, on_text: Callable[[str], object]) -> None:
        self.provider, self.on_text = provider, on_text
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stop_reason = ""
        self.done = False

    def event(self, kind: str, data: str) -> None:
        payload = _json(data, self.provider)
        kind = payload.get("type", kind) if isinstance(payload, dict) else kind
        if kind == "error":
            error = payload.get("error") or {}
            overloaded = error.get("type") == "overloaded_error"
            said = str(error.get("message") or error.get("type") or "an error").rstrip(".")
            raise ProviderError(
                f"{self.provider} is overloaded and stopped mid-answer; send your message "
                "again in a minute."
                if overloaded
                else f"{self.provider} stopped mid-answer ({said}); send your message again to "
                "retry.",
                provider=self.provider,
                status=200,
                kind="overloaded" if overloaded else "server",
                detail=str(error.get("message") or ""),
            )
        if kind == "content_block_start":
            block = dict(payload.get("content_block") or {})
            block.setdefault("text", "")
            block["json"] = ""
            self.blocks[payload.get("index", len(self.blocks))] = block
        elif kind == "content_block_delta":
            block = self.blocks.setdefault(
                payload.get("index", 0), {"type": "text", "text": "", "json": ""}
            )
            delta = payload.get("delta") or {}
            if delta.get("type") == "text_delta" and delta.get("text"):
                block["text"] += delta["text"]
                self.on_text(delta["text"])
            elif delta.get("type") == "input_json_delta":
                block["json"] += delta.get("partial_json", "")
        elif kind == "message_delta":
            self.stop_reason = str(
                (payload.get("delta") or {}).get("stop_reason") or self.stop_reason
            )
        elif kind == "message_stop":
            self.done = True

    @property
    def complete(self) -> bool:
        return self.done or bool(self.stop_reason)

    def content(self) -> list[dict[str, Any]]:
        """The answer's content blocks, as the non-streamed answer would hold them."""
        content = []
        for _, block in sorted(self.blocks.items()):
            if block.get("type") == "tool_use":
                text = block["json"].strip()
                try:
                    arguments = json.loads(text) if text else block.get("input") or {}
                except ValueError:  # cut off by max_tokens: the loop asks the model to call again
                    arguments = text
                content.append(
                    {
                        "type": "tool_use",
                        "id": block.get("id", ""),
                        "name": block.get("name", ""),
                        "input": arguments,
                    }
                )
            elif block.get("type") == "text":
                content.append({"type": "text", "text": block["text"]})
        return content
