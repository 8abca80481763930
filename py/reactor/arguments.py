"""Model-written arguments are untrusted text: parse them and check them before a handler runs.

Providers and local servers send arguments as an object, a JSON string, a JSON string of a
JSON string, `""` or null for a tool without parameters (some local servers send `""` where
`{}` was meant). All of these become an object or a tool error whose
problems the model can fix and call again.
"""

from __future__ import annotations

from typing import Any

from .errors import ToolError
from .json_schema import Validator
from .json_text import loads
from .schema import NO_ARGUMENTS, argument_problems


def parse_tool_arguments(
    tool: str, raw: Any, schema: dict[str, Any] | Validator | None
) -> dict[str, Any]:
    """The arguments as an object that fits `schema` (or its compiled Validator; none: no
    arguments), or ToolError("invalid_arguments", problems=[...])."""
    value = decoded_arguments(tool, raw)
    problems = argument_problems(schema or NO_ARGUMENTS, value)
    if problems:
        raise invalid_arguments(tool, problems)
    return value


def decoded_arguments(tool: str, raw: Any) -> dict[str, Any]:
    """The arguments as an object, not yet checked against a schema, or
    ToolError("invalid_arguments")."""
    value = raw
    for _ in range(2):  # a JSON string holding a JSON string is unwrapped once more
        if not isinstance(value, str):
            break
        text = value.strip()
        if not text:
            value = None
            break
        try:
            value = loads(text)
        except (ValueError, RecursionError) as error:
            raise invalid_arguments(
                tool, [{"path": "$", "message": f"not valid JSON ({error}); send one JSON object"}]
            ) from None
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise invalid_arguments(
            tool, [{"path": "$", "message": f"expected a JSON object, got {json_kind(value)}"}]
        )
    return value


def invalid_arguments(tool: str, problems: list[dict[str, str]]) -> ToolError:
    """The model's answer for arguments that do not fit: each problem, and that nothing ran."""
    listed = "; ".join(f"{p['path']}: {p['message']}" for p in problems)
    return ToolError(
        "invalid_arguments",
        f"The arguments for {tool} were refused and it did not run: {listed}. Fix them and "
        "call it again.",
        problems=problems,
    )


def json_kind(value: Any) -> str:
    """What a decoded JSON value is, in JSON's words: "an object", "an array", "a string"…; for
    the sentences that refuse a value of the wrong kind."""
    kinds = {
        dict: "an object",
        list: "an array",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
    }
    return "null" if value is None else kinds.get(type(value), type(value).__name__)
