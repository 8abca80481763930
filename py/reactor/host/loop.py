"""The chat loop: ask the model, run the tools it calls, give it the results, until it answers.

Each user message runs at most `max_steps` model requests. Tool calls of one turn run one
after another, in the order the model gave, so each sees the page as the previous one left
it. Every call is answered in the history — run, refused, denied or stopped — so the
conversation stays one a provider accepts. `stop()` aborts the model request and the running
tool; whatever either returns after that is dropped, and the calls left are answered as
aborted.

`keep(stage, history)`, when given, keeps the conversation as it goes (reactor.host.threads):
"start" once the person's message is in the history and before the model is asked (a refusal
there takes the message back and fails the send), "model" after each model turn, "approved"
when the person allowed a call (before it runs), "tool" after each call's answer, "end" when
the turn ends. `resume` goes on with a turn a reload cut (the page's conversation restored).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..cancellation import CancelToken
from ..envelope import is_failure, tool_failure
from ..errors import AbortedError
from ..events import Emitter
from .approval import ApprovalGate, ApprovalRequest, Approve, needs_approval
from .errors import HostError, SettingsError
from .model import MAX_TOKENS, TOOL_USE, Model, ModelRequest, ModelTurn, ToolCall
from .tools import Toolbox, outcome_line

PRESSED_STOP = "The person pressed stop."  # why a call stopped, as its answer tells the model
Keep = Callable[[str, list[dict[str, Any]]], Awaitable[None]]


@dataclass(frozen=True)
class HostEvent:
    """For a UI. type: message, message.delta (a streamed piece of text),
    tool_call.started|approved|denied|finished|failed, approval (the person's decision, once
    asked), stopped, error."""

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
        keep: Keep | None = None,
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
        self._keep = keep

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
            self._close_pending()
            self.history.append({"role": "user", "content": text})
            if self._keep is not None:
                try:
                    await self._keep("start", self.history)
                except BaseException:
                    self.history.pop()
                    raise
            self._emit("message", role="user", text=text)
            return await self._ended(await self._run(token))
        finally:
            self._token = None

    def pending_calls(self) -> list[ToolCall]:
        """The calls of the last model turn that have no answer in the history (a reload cut the
        turn while they waited or ran)."""
        answered = set()
        for message in reversed(self.history):
            if message["role"] == "tool":
                answered.add(message["tool_call_id"])
            elif message["role"] == "assistant":
                return [
                    ToolCall(c["id"], c["name"], c.get("arguments"))
                    for c in message.get("tool_calls") or []
                    if c["id"] not in answered
                ]
            else:
                return []
        return []

    async def resume(self, *, ask_again: bool) -> LoopOutcome:
        """Go on with the turn a reload cut: its calls left unanswered are answered (the first
        one asked for again when `ask_again`, as it waited for the person and did not run; else
        answered as interrupted, since it may have run), then the model is asked again."""
        if self._token is not None:
            raise HostError("The chat is still answering the last message; stop it or wait for it.")
        token = self._token = CancelToken()
        try:
            pending = self.pending_calls()
            if pending:
                last = self.history[self._last_assistant()]
                turn = ModelTurn(str(last.get("content") or ""), tuple(pending), TOOL_USE)
                for index, call in enumerate(pending):
                    if index == 0 and not ask_again:
                        result = self._interrupted(call)
                    else:
                        result = await self._answer(call, turn, token, False)
                    self.history.append(
                        {
                            "role": "tool",
                            "tool_call_id": call.id,
                            "name": call.name,
                            "result": result,
                        }
                    )
                    problem = await self._kept("tool")
                    if problem:
                        return await self._ended(self._failed(problem, 1))
                if token.aborted:
                    return await self._ended(self._stopped(token, 1))
            return await self._ended(await self._run(token))
        finally:
            self._token = None

    def _last_assistant(self) -> int:
        return max(i for i, m in enumerate(self.history) if m["role"] == "assistant")

    def _close_pending(self) -> None:
        """Calls a reload left unanswered, answered as interrupted before the next message: a
        provider takes no conversation with a call and no answer."""
        for call in self.pending_calls():
            result = self._interrupted(call)
            self.history.append(
                {"role": "tool", "tool_call_id": call.id, "name": call.name, "result": result}
            )

    def _interrupted(self, call: ToolCall) -> dict[str, Any]:
        result = tool_failure(
            "aborted",
            f"{call.name} was interrupted: the page was reloaded while it waited or ran, so it "
            "may or may not have taken effect. Check before calling it again.",
            display="Interrupted when the page was reloaded; it may or may not have run.",
        )
        tool = self.toolbox.tool(call.name)
        self._emit(
            "tool_call.failed",
            call_id=call.id,
            name=call.name,
            title=tool.title if tool is not None else "",
            arguments=call.arguments,
            result=result,
            summary="Interrupted when the page was reloaded; it may or may not have run.",
        )
        return result

    async def _kept(self, stage: str) -> str:
        """Keep the conversation at `stage`; the person's sentence if it could not be kept."""
        if self._keep is None:
            return ""
        try:
            await self._keep(stage, self.history)
        except HostError as error:
            return str(error)
        return ""

    async def _ended(self, outcome: LoopOutcome) -> LoopOutcome:
        problem = await self._kept("end")
        if problem and outcome.status != "error":
            self._emit("error", message=problem, kind="ThreadRefused")
            return LoopOutcome("error", outcome.text, outcome.steps, error=problem)
        return outcome

    def _failed(self, problem: str, step: int) -> LoopOutcome:
        self._emit("error", message=problem, kind="ThreadRefused")
        return LoopOutcome("error", steps=step, error=problem)

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
            problem = await self._kept("model")
            if problem:
                self._close_pending()
                return self._failed(problem, step)
            last = step == self.max_steps
            for call in turn.tool_calls:
                result = await self._answer(call, turn, token, last)
                self.history.append(
                    {"role": "tool", "tool_call_id": call.id, "name": call.name, "result": result}
                )
                problem = await self._kept("tool")
                if problem:
                    self._close_pending()
                    return self._failed(problem, step)
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
        known = tool.name in self.approvals.always
        question = ""
        if needs_approval(tool.side_effect) and not known:
            try:  # the words may wait on the page (a deck's title); the person is not asked yet
                question = await token.race(tool.question(args))
            except AbortedError:
                return _stopped_asking(tool.name)
        request = ApprovalRequest(
            call.id, tool.name, tool.description, args, tool.side_effect, question
        )
        try:
            decision = await self.approvals.decide(request, token)
        except AbortedError:
            self._asked(request, "withdrawn")
            return _stopped_asking(tool.name)
        if decision in ("allow", "deny") or (decision == "always" and not known):
            self._asked(request, decision)
            if decision != "deny":
                problem = await self._kept("approved")
                if problem:
                    return tool_failure("aborted", f"{tool.name} did not run: {problem}")
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

    def _asked(self, request: ApprovalRequest, decision: str) -> None:
        """The person's decision on a call they were asked about, for the transcript."""
        if not needs_approval(request.side_effect):
            return
        self._emit(
            "approval",
            call_id=request.call_id,
            tool=request.tool,
            question=request.question,
            arguments=request.arguments,
            side_effect=request.side_effect,
            decision=decision,
            at=time.time(),
        )

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


def _stopped_asking(tool: str) -> dict[str, Any]:
    return tool_failure(
        "aborted", f"{tool} did not run: the chat was stopped while asking to approve it."
    )
