"""The chat loop: ask the model, run the tools it calls, give it the results, until it answers.

Each user message runs at most `max_steps` model requests. Tool calls of one turn run one
after another, in the order the model gave, so each sees the page as the previous one left
it. Every call is answered in the history — run, refused, denied or stopped — so the
conversation stays one a provider accepts. `stop()` aborts the model request and the running
tool; whatever either returns after that is dropped, and the calls left are answered as
aborted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..cancellation import CancelToken
from ..envelope import is_failure, tool_failure
from ..errors import AbortedError
from ..events import Emitter
from .approval import ApprovalGate, ApprovalRequest, Approve
from .errors import HostError, SettingsError
from .model import MAX_TOKENS, Model, ModelRequest, ModelTurn, ToolCall
from .tools import Toolbox, outcome_line

PRESSED_STOP = "The person pressed stop."  # why a call stopped, as its answer tells the model


@dataclass(frozen=True)
class HostEvent:
    """For a UI. type: message, message.delta (a streamed piece of text),
    tool_call.started|approved|denied|finished|failed, stopped, error."""

    type: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LoopOutcome:
    """How one `send` ended: done, stopped, step_limit or error; the last text; model requests
    made."""

    status: str
    text: str = ""
    steps: int = 0
    stop_reason: str = ""
    error: str = ""


class ChatLoop:
    """One conversation between a person, a model and the admitted tools."""

    def __init__(
        self,
        model: Model,
        toolbox: Toolbox,
        *,
        approve: Approve | None = None,
        instructions: str | None = None,
        max_steps: int = 10,
        tool_timeout: float | None = None,
        on_event: Callable[[HostEvent], object] | None = None,
        history: list[dict[str, Any]] | None = None,
    ) -> None:
        if max_steps < 1:
            raise SettingsError(f"max_steps must be at least 1, not {max_steps!r}.")
        self.model = model
        self.toolbox = toolbox
        self.instructions = toolbox.spec.instructions if instructions is None else instructions
        self.max_steps = max_steps
        self.tool_timeout = tool_timeout
        self.history: list[dict[str, Any]] = list(history or [])
        self.approvals = ApprovalGate(approve)
        self.events: Emitter[HostEvent] = Emitter()
        if on_event is not None:
            self.events.connect(on_event)
        self._token: CancelToken | None = None

    @property
    def running(self) -> bool:
        return self._token is not None

    def stop(self, reason: str = PRESSED_STOP) -> None:
        """Abort the model request and the running tool; a no-op when nothing runs."""
        if self._token is not None:
            self._token.abort(reason)

    async def send(self, text: str) -> LoopOutcome:
        """Add the person's message and run the model and its tools until it answers."""
        if self._token is not None:
            raise HostError("The chat is still answering the last message; stop it or wait for it.")
        token = self._token = CancelToken()
        try:
            self.history.append({"role": "user", "content": text})
            self._emit("message", role="user", text=text)
            return await self._run(token)
        finally:
            self._token = None

    async def _run(self, token: CancelToken) -> LoopOutcome:
        for step in range(1, self.max_steps + 1):
            request = ModelRequest(
                self.instructions,
                list(self.history),
                self.toolbox.tools(),
                on_text=lambda text: (
                    token.aborted or self._emit("message.delta", role="assistant", text=text)
                ),
            )
            try:
                turn = await token.race(self.model.complete(request, token))
            except AbortedError:
                return self._stopped(token, step)
            except Exception as error:
                self._emit(
                    "error",
                    message=str(error),
                    kind=getattr(error, "kind", "") or type(error).__name__,
                )
                return LoopOutcome("error", steps=step, error=str(error))
            self.history.append(turn.as_message())
            if turn.text:
                self._emit(
                    "message", role="assistant", text=turn.text, stop_reason=turn.stop_reason
                )
            if not turn.tool_calls:
                return LoopOutcome("done", turn.text, step, turn.stop_reason)
            last = step == self.max_steps
            for call in turn.tool_calls:
                result = await self._answer(call, turn, token, last)
                self.history.append(
                    {"role": "tool", "tool_call_id": call.id, "name": call.name, "result": result}
                )
            if token.aborted:
                return self._stopped(token, step)
        reason = f"The step limit of {self.max_steps} model requests for one message was reached."
        self._emit("stopped", reason=reason, step_limit=True)
        return LoopOutcome("step_limit", turn.text, self.max_steps, turn.stop_reason)

    async def _answer(
        self, call: ToolCall, turn: ModelTurn, token: CancelToken, last: bool
    ) -> dict[str, Any]:
        if token.aborted:
            return tool_failure("aborted", f"{call.name} did not run: the person stopped the chat.")
        if last:
            return tool_failure(
                "aborted",
                f"{call.name} did not run: the step limit of {self.max_steps} model "
                "requests was reached. Tell the person what is left to do.",
            )
        tool = self.toolbox.tool(call.name)
        self._emit(
            "tool_call.started",
            call_id=call.id,
            name=call.name,
            arguments=call.arguments,
            title=tool.title if tool is not None else "",
        )
        result = await self._run_call(call, turn, token)
        summary = outcome_line(tool, call.arguments, result)
        if result.get("error", {}).get("code") == "denied":
            self._emit(
                "tool_call.denied", call_id=call.id, name=call.name, result=result, summary=summary
            )
        else:
            self._emit(
                "tool_call.failed" if is_failure(result) else "tool_call.finished",
                call_id=call.id,
                name=call.name,
                result=result,
                summary=summary,
            )
        return result

    async def _run_call(
        self, call: ToolCall, turn: ModelTurn, token: CancelToken
    ) -> dict[str, Any]:
        if turn.stop_reason == MAX_TOKENS:
            return tool_failure(
                "invalid_arguments",
                f"The answer was cut off by the token limit, so the arguments "
                f"of {call.name} may be incomplete; it did not run. Call it again.",
                problems=[{"path": "$", "message": "cut off by the token limit"}],
            )
        prepared = self.toolbox.prepare(call.name, call.arguments)
        if isinstance(prepared, dict):
            return prepared
        tool, args = prepared
        request = ApprovalRequest(
            call.id, tool.name, tool.description, args, tool.side_effect, tool.question(args)
        )
        try:
            decision = await self.approvals.decide(request, token)
        except AbortedError:
            return tool_failure(
                "aborted",
                f"{tool.name} did not run: the chat was stopped while asking to approve it.",
            )
        if decision == "deny":
            return tool_failure(
                "denied",
                f"The person declined to run {tool.name}; it did not run. Do not call it "
                "again unless they ask; say what you meant to do instead.",
            )
        if decision == "unasked":
            return tool_failure(
                "denied",
                f"{tool.name} changes things and needs the person's approval, which this "
                "host could not ask for; it did not run.",
            )
        if decision in ("allow", "always"):
            self._emit("tool_call.approved", call_id=call.id, name=tool.name, decision=decision)
        return await self.toolbox.run(tool, args, signal=token, timeout=self.tool_timeout)

    def _stopped(self, token: CancelToken, step: int) -> LoopOutcome:
        reason = token.reason if isinstance(token.reason, str) else "Stopped."
        # The model reads the reason in its tools' answers; the chat shows the person their own
        # words.
        self._emit(
            "stopped", reason="You stopped the assistant." if reason == PRESSED_STOP else reason
        )
        return LoopOutcome("stopped", steps=step)

    def _emit(self, type: str, **data: Any) -> None:
        self.events.emit(HostEvent(type, data))
