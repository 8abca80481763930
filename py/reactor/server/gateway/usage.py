"""The tokens an answer used, read from the provider's own events."""

from __future__ import annotations

import json
from typing import Any


class Usage:
    """The tokens an answer used, as the provider reports them, and whether it ended as answers
    end."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.input = self.output = 0
        self.complete = False

    @property
    def tokens(self) -> int:
        return self.input + self.output

    def read_event(self, kind: str, data: str) -> str | None:
        """Note what the event says; the provider's error text when it is an error event."""
        if data.strip() == "[DONE]":
            self.complete = True
            return None
        try:
            event = json.loads(data)
        except ValueError:
            return None
        if not isinstance(event, dict):
            return None
        if self.provider == "openai":
            if event.get("error"):
                return json.dumps(event["error"])
            self._openai(event.get("usage"))
            if any(
                isinstance(c, dict) and c.get("finish_reason") for c in event.get("choices") or []
            ):
                self.complete = True
            return None
        kind = event.get("type", kind)
        if kind == "error":
            return json.dumps(event.get("error"))
        if kind == "message_start":
            usage = (event.get("message") or {}).get("usage") or {}
            self.input = _count(usage.get("input_tokens"))
            self.output = _count(usage.get("output_tokens"))
        elif kind == "message_delta":
            self.output = max(self.output, _count((event.get("usage") or {}).get("output_tokens")))
        elif kind == "message_stop":
            self.complete = True
        return None

    def read_whole(self, text: str) -> None:
        try:
            answer = json.loads(text)
        except ValueError:
            return
        if isinstance(answer, dict):
            usage = answer.get("usage")
            if self.provider == "openai":
                self._openai(usage)
            elif isinstance(usage, dict):
                self.input, self.output = (
                    _count(usage.get("input_tokens")),
                    _count(usage.get("output_tokens")),
                )

    def _openai(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self.input, self.output = (
                _count(usage.get("prompt_tokens")),
                _count(usage.get("completion_tokens")),
            )


def _count(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0
