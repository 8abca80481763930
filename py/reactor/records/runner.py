"""Running an AI Tool's code on CPython, for tests and for the server tier.

The page does not use this: there the code runs in a Web Worker with its own Pyodide, which can
be terminated when it blocks (`reactor.browser`, `web/tool-workers.js`). Here a sync `invoke` runs
in a thread, so a timeout still frees the caller; nothing can stop the thread itself.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from ..cancellation import CancelToken
from ..errors import ToolError
from ..http import Send, fetch_json, urllib_send
from .context import ToolContext


def load_code(record_id: str, code: str) -> dict[str, Any]:
    """Run a Python record's code as a module of its own; its top-level names (`invoke`, `run`)."""
    namespace: dict[str, Any] = {"__name__": f"plugin_{record_id.replace('-', '_')}"}
    exec(compile(code, f"<plugin {record_id}>", "exec"), namespace)
    return namespace


class InProcessRunner:
    """Executes Python `invoke(args, context)`; `base_url` is where `context.fetch_json` goes,
    through `send` (reactor.http)."""

    def __init__(
        self, base_url: str = "", headers: dict[str, str] | None = None, send: Send = urllib_send
    ) -> None:
        self.base_url = base_url
        self.headers = dict(headers or {})
        self.send = send

    def warm(self) -> None:
        """Nothing to start: the code runs in this process."""

    async def run(
        self,
        record: dict[str, Any],
        args: dict[str, Any],
        context: dict[str, Any],
        signal: CancelToken,
    ) -> Any:
        if record["language"] != "python":
            raise ToolError(
                "unavailable", f"{record['name']} is JavaScript; it runs only in the page."
            )
        invoke = load_code(record["id"], record["code"])["invoke"]
        tool_context = ToolContext(context["config"], context["view_id"], signal, self._fetch)
        if inspect.iscoroutinefunction(invoke):
            return await invoke(args, tool_context)
        return await asyncio.to_thread(invoke, args, tool_context)

    async def _fetch(
        self, url: str, *, method: str, body: Any, headers: dict[str, str], signal: CancelToken
    ) -> Any:
        return await signal.race(
            fetch_json(self.send, method, self.base_url + url, body, {**self.headers, **headers})
        )
