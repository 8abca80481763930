"""What the person saw of a conversation, kept so the chat can draw it again, never run it again.

The chat's events (reactor.host.loop.HostEvent) become items in the shapes the widget draws
(web/chat.js): a message, a tool card as it ended (title, summary, outcome), an approval with
its decision and time, a note (stopped, error). A streamed reply cut short is kept as the text
that came, marked `cut`. The person's own messages are written by the ThreadKeeper, which saves
them before the model is asked; the transcript records what the loop said.

`markdown` writes a conversation for a person to read elsewhere.
"""

from __future__ import annotations

import json
from typing import Any

from .loop import HostEvent

CARD_EVENTS = frozenset(
    {
        "tool_call.started",
        "tool_call.approved",
        "tool_call.finished",
        "tool_call.failed",
        "tool_call.denied",
    }
)
STATUS_WORDS = {
    "tool_call.started": "running",
    "tool_call.approved": "allowed, running",
    "tool_call.finished": "done",
    "tool_call.failed": "failed",
    "tool_call.denied": "not run",
}
DECISION_WORDS = {
    "allow": "Allowed.",
    "always": "Always allowed in this chat.",
    "deny": "Denied; it did not run.",
    "withdrawn": "No longer asked; it did not run.",
}


class Transcript:
    """The items of one conversation: `items` all of them, `unsaved()` those not yet kept."""

    def __init__(self, items: list[dict[str, Any]] | None = None) -> None:
        self.items: list[dict[str, Any]] = list(items or [])
        self.kept = len(self.items)
        self._partial = ""

    def record(self, event: HostEvent) -> None:
        kind, data = event.type, event.data
        if kind == "message.delta":
            self._partial += str(data.get("text", ""))
        elif kind == "message":
            self._partial = ""
            if data.get("role") == "assistant":
                self.items.append({"type": "message", "role": "assistant", "text": data["text"]})
        elif kind in CARD_EVENTS:
            self._card(kind, data)
        elif kind == "approval":
            self.items.append({"type": "approval", **data})
        elif kind in ("stopped", "error"):
            self._cut()
            self.items.append({"type": kind, **data})

    def add(self, item: dict[str, Any]) -> None:
        self.items.append(item)

    def unsaved(self) -> list[dict[str, Any]]:
        return self.items[self.kept :]

    def saved(self) -> None:
        self.kept = len(self.items)

    def _card(self, kind: str, data: dict[str, Any]) -> None:
        """One item per card while it is not kept: its later events update it in place."""
        for item in reversed(self.unsaved()):
            if item["type"] in CARD_EVENTS and item.get("call_id") == data.get("call_id"):
                item.update(data, type=kind)
                return
        self.items.append({"type": kind, **data})

    def _cut(self) -> None:
        if self._partial:
            self.items.append(
                {"type": "message", "role": "assistant", "text": self._partial, "cut": True}
            )
            self._partial = ""


def markdown(thread: dict[str, Any]) -> str:
    """The conversation as the person saw it, in Markdown: messages, each tool's outcome and
    each approval's decision."""
    lines = [f"# {thread.get('title') or 'Conversation'}", ""]
    cards: dict[str, dict[str, Any]] = {}
    for item in thread.get("items") or []:
        kind = item.get("type")
        if kind in CARD_EVENTS:
            cards.setdefault(str(item.get("call_id")), {}).update(item)
    written: set[str] = set()
    for item in thread.get("items") or []:
        kind = item.get("type")
        if kind == "message":
            who = "You" if item.get("role") == "user" else "Assistant"
            cut = " *(cut short)*" if item.get("cut") else ""
            lines += [f"**{who}:**{cut}", "", str(item.get("text", "")), ""]
        elif kind in CARD_EVENTS:
            call = str(item.get("call_id"))
            if call in written:
                continue
            written.add(call)
            card = cards[call]
            title = card.get("title") or card.get("name") or "A tool"
            status = STATUS_WORDS.get(str(card.get("type")), "")
            summary = card.get("summary") or ""
            lines += [f"> **{title}** ({card.get('name')}): {status}. {summary}".rstrip(), ""]
            if card.get("result") is not None:
                shown = json.dumps(card["result"], indent=2, ensure_ascii=False)
                lines += ["```json", shown, "```", ""]
        elif kind == "approval":
            words = DECISION_WORDS.get(str(item.get("decision")), str(item.get("decision")))
            lines += [f"> Asked: {item.get('question', '')} **{words}**", ""]
        elif kind == "stopped":
            lines += [f"*{item.get('reason', 'Stopped.')}*", ""]
        elif kind == "error":
            lines += [f"*{item.get('message', '')}*", ""]
    return "\n".join(lines).rstrip() + "\n"
