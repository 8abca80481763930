"""One AI Tool call, as the platform enforces it: the record re-read with the user's session,
the model's arguments validated, the timeout that frees the caller, the result capped.

Every failure is a ToolError whose code the envelope carries: not_permitted, invalid_arguments,
timeout, aborted, failed, too_large, unavailable.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..arguments import parse_tool_arguments
from ..cancellation import CancelToken
from ..errors import AbortedError, DeclarationError, ToolError
from .declaration import check_ai_tool_record

_TIMEOUT = "timeout"

RecordReader = Callable[[str], Awaitable[dict[str, Any]]]


class Runner(Protocol):
    """Runs a record's code: `invoke(args, context)`; returns its value, raises what it raised."""

    async def run(
        self,
        record: dict[str, Any],
        args: dict[str, Any],
        context: dict[str, Any],
        signal: CancelToken,
    ) -> Any: ...

    def warm(self) -> None:
        """Get ready for a first call soon (the page boots a tool worker); may do nothing."""


class AiToolCaller:
    """Calls AI Tools by record id; `read_record` must raise ToolError("not_permitted") when the
    user's session may not see the record, and must not answer from a cache."""

    def __init__(
        self,
        read_record: RecordReader,
        runner: Runner,
        *,
        view_id: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.read_record = read_record
        self.runner = runner
        self.view_id = view_id

    async def call(
        self, record_id: str, raw_args: Any, *, signal: CancelToken | None = None
    ) -> Any:
        """The tool's result, or a ToolError the envelope reports."""
        record = await self.read_record(record_id)
        try:
            record = check_ai_tool_record(record)
        except DeclarationError as error:
            raise ToolError(
                "unavailable", f"The plugin {record_id!r} is misdeclared on the server: {error}"
            ) from None
        if record["location"] != "ai-tool" or not record["enabled"]:
            raise ToolError(
                "unavailable", f"The plugin {record['name']!r} is not an enabled AI Tool now."
            )
        tool = record["settings"]["tool"]
        args = parse_tool_arguments(record["name"], raw_args, tool["inputSchema"])
        timeout_ms = tool["annotations"]["timeoutMs"]
        token = (signal or CancelToken()).child()
        timer = asyncio.get_running_loop().call_later(timeout_ms / 1000, token.abort, _TIMEOUT)
        context = {"config": record["settings"]["config"], "view_id": self.view_id()}
        try:
            result = await token.race(self.runner.run(record, args, context, token))
        except AbortedError:
            if token.reason == _TIMEOUT:
                raise ToolError(
                    "timeout",
                    f"{record['name']} did not finish within {timeout_ms} ms and was "
                    "stopped; nothing was returned.",
                    timeoutMs=timeout_ms,
                ) from None
            raise ToolError(
                "aborted", f"{record['name']} was stopped before it finished."
            ) from None
        except ToolError:
            raise
        except Exception as error:
            message = str(error).strip() or type(error).__name__
            raise ToolError(
                "failed", f"{record['name']} failed: {message}", type=type(error).__name__
            ) from None
        finally:
            timer.cancel()
        return capped(record["name"], result, tool["maxResultBytes"])


def capped(name: str, result: Any, cap: int) -> Any:
    """The result if it is JSON data within `cap` bytes; otherwise say so — never cut it
    silently."""
    try:
        size = len(json.dumps(result, allow_nan=False, ensure_ascii=False).encode())
    except (TypeError, ValueError) as error:
        raise ToolError(
            "failed", f"{name} returned a value that is not JSON data: {error}."
        ) from None
    if size > cap:
        raise ToolError(
            "too_large",
            f"{name} returned {size} bytes, over its cap of {cap} bytes, so nothing was returned. "
            "Ask for less (a smaller limit or a narrower question).",
            size=size,
            cap=cap,
        )
    return result
