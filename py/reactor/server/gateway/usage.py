"""The tokens an answer used, read from the provider's own events, and what it is charged."""

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
        self.reported = False  # the provider said how many tokens, at least so far

    @property
    def tokens(self) -> int:
        return self.input + self.output

    @property
    def whole(self) -> bool:
        """The answer ended as answers end and the provider reported its usage."""
        return self.complete and self.reported

    def charged(self, input_bound: int, output_bound: int) -> tuple[int, int]:
        """The input and output tokens an answer is charged: the provider's report of the whole
        answer; else, for each, the larger of its bound and what was reported so far."""
        if self.whole:
            return self.input, self.output
        return max(self.input, input_bound), max(self.output, output_bound)

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
            usage = (event.get("message") or {}).get("usage")
            if isinstance(usage, dict):
                self.input = _count(usage.get("input_tokens"))
                self.output = _count(usage.get("output_tokens"))
                self.reported = True
        elif kind == "message_delta":
            usage = event.get("usage")
            if isinstance(usage, dict):
                self.output = max(self.output, _count(usage.get("output_tokens")))
                self.reported = True
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
            self.complete = True
            if self.provider == "openai":
                self._openai(usage)
            elif isinstance(usage, dict):
                self.input, self.output = (
                    _count(usage.get("input_tokens")),
                    _count(usage.get("output_tokens")),
                )
                self.reported = True

    def _openai(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self.input, self.output = (
                _count(usage.get("prompt_tokens")),
                _count(usage.get("completion_tokens")),
            )
            self.reported = True


def _count(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0
