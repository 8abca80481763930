"""Desktop agents' calls, from the page's link held in the reactor worker (web/agent-socket.js)."""

from __future__ import annotations

from typing import Any

from ..awaiting import is_awaitable, started
from ..cancellation import CancelToken
from ..errors import ProtocolError
from ..json_text import dumps


class AgentCalls:
    """The calls of the person's desktop agents, which come down the page's link held in this
    worker (web/agent-socket.js): run as the chat's callTool runs them (admission, validation,
    the person's approval in the page), without a hop to the page's main thread and back."""

    def __init__(self) -> None:
        self.session: Any = None  # the chat's ChatSession, made on first use (_serve_chat)
        self.running: dict[str, CancelToken] = {}

    def call(self, call_id: str, name: str, args: str) -> Any:
        """The envelope's JSON text, or (a call that waits, e.g. for the person) an awaitable of
        it; what it raises (stopped while the person was asked) is the call's failure. A tool
        the person need not approve runs as the page's own callTool runs it: at once when its
        command is synchronous (the chat's path, a coroutine with its approval step, cost twice
        the time in Pyodide)."""
        if self.session is None:
            raise ProtocolError("The page's chat is not ready yet; its agents call after it is.")
        from ..host import needs_approval

        session, signal = self.session(), CancelToken()
        tool = session.toolbox.tool(name)
        if tool is not None and not needs_approval(tool.side_effect):
            outcome = session.toolbox.call(name, args, signal=signal)
            if not is_awaitable(outcome):
                return dumps(outcome)
            task = started(outcome)
        else:
            task = started(session.call_tool(name, args, signal, agent_call=call_id))
        if task.done():
            return dumps(task.result())
        self.running[call_id] = signal

        async def answer() -> str:
            try:
                return dumps(await task)
            finally:
                self.running.pop(call_id, None)

        return started(answer())

    def cancel(self, call_id: str, reason: str) -> None:
        """The agent stopped the call, or the link went: it stops (its question is withdrawn)."""
        signal = self.running.pop(call_id, None)
        if signal is not None:
            signal.abort(reason)
