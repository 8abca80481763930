"""AI Tool code, run in the page's tool workers: asked of the page from the reactor worker
(`WorkerRunner`), run inside a tool worker (`run_ai_tool`, web/ai-tool-worker.js)."""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

from ..answer import failure_text, success_text
from ..cancellation import CancelToken
from ..errors import ToolError
from ..protocol import WorkerEndpoint
from .server_link import ServerLink
from .signals import JsSignal


class WorkerRunner:
    """Runs AI Tool code in the page's tool worker (the page starts and terminates those); the
    signal's abort reaches it."""

    def __init__(self, endpoint: WorkerEndpoint) -> None:
        self._endpoint = endpoint

    def warm(self) -> None:
        """Have the page start a tool worker now, so the first call does not wait for its boot."""
        self._endpoint.notify("aiTool.warm")

    async def run(
        self,
        record: dict[str, Any],
        args: dict[str, Any],
        context: dict[str, Any],
        signal: CancelToken,
    ) -> Any:
        job = {
            "id": record["id"],
            "language": record["language"],
            "code": record["code"],
            "args": args,
            "config": context["config"],
            "viewId": context["view_id"],
        }
        answer = json.loads(
            await self._endpoint.ask("aiTool.run", signal=signal, job=json.dumps(job))
        )
        if answer["ok"]:
            return answer["value"]
        error = answer["error"]
        raise ToolError(
            "failed", f"{record['name']} failed: {error['message']}", type=error["type"]
        )


def run_ai_tool(job_json: str, signal: Any, server: str) -> Any:
    """Inside the tool worker: run a job's Python `invoke`, its root-relative URLs meaning the
    reactor server at `server`; the answer is JSON text."""
    return asyncio.ensure_future(
        _run_ai_tool(json.loads(job_json), JsSignal(signal), ServerLink(server))
    )


async def _run_ai_tool(job: dict[str, Any], signal: JsSignal, server: ServerLink) -> str:
    from ..records.context import ToolContext
    from ..records.runner import load_code

    try:
        context = ToolContext(job["config"], job["viewId"], signal, server.fetch_json)
        result = load_code(job["id"], job["code"])["invoke"](job["args"], context)
        if inspect.isawaitable(result):
            result = await result
        return success_text(result)
    except Exception as error:
        return failure_text(error)
