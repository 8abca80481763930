"""Side effects and approval: a tool that writes runs only after the person says so.

Each tool has a side-effect level — none, read, write or destructive — given by the host
(bundles carry no such field). An unknown level counts as write: the safe mistake is to ask.
The approval lives on the tool call: the loop awaits the person's answer before running it,
so nothing depends on the model calling the tool again after the person has answered.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..agent_tools import SIDE_EFFECTS
from ..cancellation import CancelToken

DECISIONS = ("allow", "always", "deny")
log = logging.getLogger("reactor")


def side_effect_level(value: Any) -> str:
    """The level as given, or "write" when it is missing or not one of SIDE_EFFECTS."""
    return value if value in SIDE_EFFECTS else "write"


def needs_approval(level: str) -> bool:
    return side_effect_level(level) in ("write", "destructive")


def tool_annotations(level: str) -> dict[str, bool]:
    """MCP's hints for a level. Page tools act on this page, not the open world."""
    level = side_effect_level(level)
    reads = level in ("none", "read")
    return {
        "readOnlyHint": reads,
        "destructiveHint": level == "destructive",
        "idempotentHint": reads,
        "openWorldHint": False,
    }


@dataclass(frozen=True)
class ApprovalRequest:
    """What the person is asked about: which tool, with which arguments, doing what."""

    call_id: str
    tool: str
    description: str
    arguments: dict[str, Any]
    side_effect: str
    question: str = ""  # what the person is asked, in their words (HostTool.question)
    # A desktop agent's call through the server: the page claims it there before it runs it
    # (server/agents/relay.py), since the agent may have stopped waiting meanwhile.
    agent_call: str = ""


Approve = Callable[[ApprovalRequest], Awaitable[str]]


class ApprovalGate:
    """Asks `approve` for each call that needs it and remembers "always" for the session."""

    def __init__(self, approve: Approve | None = None) -> None:
        self._approve = approve
        self.always: set[str] = set()

    async def decide(self, request: ApprovalRequest, signal: CancelToken) -> str:
        """One of "not_needed", "always" (remembered), "allow", "deny", or "unasked" when no one
        could be asked (no approver, or it failed). Raises AbortedError if stopped while asking."""
        if not needs_approval(request.side_effect):
            return "not_needed"
        if request.tool in self.always:
            return "always"
        if self._approve is None:
            return "unasked"
        try:
            decision = await signal.race(self._approve(request))
        except Exception:
            if signal.aborted:
                raise
            log.exception("Asking to approve %s failed", request.tool)
            return "unasked"
        if decision not in DECISIONS:
            return "deny"  # anything but a clear yes is a no
        if decision == "always":
            self.always.add(request.tool)
        return decision
