"""The one envelope every tool call answers with, whatever the provider.

    success  {"ok": true,  "result": <what the command returned>}
             (a command returning None adds "note": "The command ran; it returns no value.")
    failure  {"ok": false, "error": {"code": <CODE>, "message": <a sentence>, ...details}}

Codes (FAILURE_CODES, in errors.py beside ToolError): invalid_arguments (with problems:
[{path, message}] when the schema refused them; without, a plugin's refusal of a request the schema
could not express), unknown_tool, not_admitted, not_permitted, not_found, conflict (the call
collides with what is there: a taken id, or a change someone else made since it was read: read it
again), denied, unavailable, failed, aborted, timeout, too_large.
The model reads the envelope as JSON text; the message is written for it to act on. Formats only
re-wrap it per provider. A failure may add `display`: the same failure in the person's words, which
a chat card shows instead of `message` ("Sign in at the top of the page first." beside "Nobody is
signed in…").
"""

from __future__ import annotations

import json
from typing import Any

from .errors import check_failure_code
from .json_text import dumps

RAN_WITHOUT_VALUE = "The command ran; it returns no value."


def tool_success(result: Any) -> dict[str, Any]:
    """Wrap a value; a value that is not JSON data becomes a `failed` answer, never a crash."""
    if result is None:
        return {"ok": True, "result": None, "note": RAN_WITHOUT_VALUE}
    if type(result) not in (str, int, bool):  # those are JSON data whatever they hold
        try:
            dumps(result, allow_nan=False)
        except (TypeError, ValueError) as error:
            return tool_failure(
                "failed", f"The tool answered with a value that is not JSON data: {error}."
            )
    return {"ok": True, "result": result}


def tool_failure(code: str, message: str, **details: Any) -> dict[str, Any]:
    check_failure_code(code, "tool_failure")
    return {"ok": False, "error": {"code": code, "message": message, **details}}


def is_failure(envelope: dict[str, Any]) -> bool:
    return envelope.get("ok") is not True


def envelope_text(envelope: dict[str, Any]) -> str:
    """The envelope as the text a model reads (UTF-8 kept readable, nothing truncated)."""
    return json.dumps(envelope, ensure_ascii=False)
