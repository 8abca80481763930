"""The one answer shape of a request from the page, and the one place an error's detail is made.

    success  {"ok": true, "value": V}
    failure  {"ok": false, "error": {"type", "message", "command"?, "problems"?, "display"?}}

The worker protocol's answer is this object with its envelope's `v` and `re` added
(reactor.protocol); the facade's answers (reactor.facade) and an AI Tool worker's are this object.
A tool call's envelope (reactor.envelope) is a value inside it: the contract a model reads.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import (
    CommandError,
    CommandFailedError,
    CommandUnavailableError,
    InvalidArgumentsError,
    ToolError,
)
from .json_text import dumps

NOTHING = '{"ok": true, "value": null}'


def error_detail(error: BaseException, **context: Any) -> dict[str, Any]:
    """What a caller reads of a failure: its class name and sentence, the command it concerns
    (`context` may name it for errors that do not), its problems, its sentence for a person."""
    detail: dict[str, Any] = {"type": type(error).__name__, "message": str(error), **context}
    if isinstance(error, CommandError):
        detail["command"] = error.command_id
    if isinstance(error, InvalidArgumentsError):
        detail["problems"] = error.problems
    display = _display(error)
    if display:
        detail["display"] = display
    return detail


def success_text(value: Any) -> str:
    """The success answer as JSON text; TypeError or ValueError for a value that is not JSON."""
    return NOTHING if value is None else dumps({"ok": True, "value": value}, allow_nan=False)


def failure_text(error: BaseException, **context: Any) -> str:
    return json.dumps({"ok": False, "error": error_detail(error, **context)})


def _display(error: BaseException) -> str:
    """The failure in a person's words, when the command gave them (a ToolError's `display`, a
    disabled command's `disabled_display`): what a palette or a view shows instead of `message`."""
    if isinstance(error, CommandUnavailableError):
        return error.display
    cause = error.cause if isinstance(error, CommandFailedError) else error
    said = cause.details.get("display") if isinstance(cause, ToolError) else ""
    return said if isinstance(said, str) else ""
