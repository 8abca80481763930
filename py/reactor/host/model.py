"""What the loop says to a model and what it hears back, whichever model it is.

The conversation is a list of plain dicts, one shape for every provider, so the page can
keep, show and save it; each provider renders it to its own wire format:

    {"role": "user", "content": "open the meeting notes"}
    {"role": "assistant", "content": "text, maybe empty",
     "tool_calls": [{"id", "name", "arguments"}]}
    {"role": "tool", "tool_call_id": "...", "name": "notes_open", "result": <envelope>}

`arguments` is kept as the model sent it (a JSON string, an object, ""), since it is the
model's own words; the host parses it only to run the call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..cancellation import CancelToken
from .tools import HostTool

# Stop reasons, the same for every provider.
END_TURN, TOOL_USE, MAX_TOKENS, REFUSAL, OTHER = (
    "end_turn",
    "tool_use",
    "max_tokens",
    "refusal",
    "other",
)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: Any

    def as_message_part(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class ModelTurn:
    """One answer: text, the tool calls to run in order, and why the model stopped."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str = END_TURN
    provider_stop_reason: str = ""

    def as_message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [call.as_message_part() for call in self.tool_calls]
        return message


@dataclass(frozen=True)
class ModelRequest:
    system: str
    messages: list[dict[str, Any]]
    tools: list[HostTool] = field(default_factory=list)
    # A model that streams hands each piece of its text here as it arrives (the chat shows it).
    on_text: Callable[[str], object] | None = field(default=None, compare=False, repr=False)


class Model(Protocol):
    """A model the loop can ask. `label` is what a model picker shows."""

    label: str

    async def complete(self, request: ModelRequest, signal: CancelToken) -> ModelTurn:
        """Answer the conversation; raise ProviderError on a provider failure, AbortedError when
        stopped."""
