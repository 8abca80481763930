"""Tools and tool results in each provider's wire format, rendered in one place.

Plugins declare one JSON Schema per tool; what a provider will not take is adjusted here,
not in every plugin. The model may see a simplified schema — the host still validates the
arguments against the full one before anything runs (arguments.py).

    OpenAI Chat Completions  {type: "function", function: {name, description, parameters}}
    OpenAI Responses         {type: "function", name, description, parameters}
    Anthropic Messages       {name, description, input_schema}
    MCP tools/list           {name, title?, description, inputSchema, annotations}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..envelope import envelope_text, is_failure
from ..json_text import copied
from .approval import tool_annotations
from .tools import HostTool

# OpenAI and Anthropic refuse these at the top of a function's schema; both want an object
# with properties. Dropping them only loosens what the model is shown.
_TOP_LEVEL_REFUSED = (
    "$schema",
    "$id",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "enum",
    "const",
    "if",
    "then",
    "else",
)


def model_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """The schema OpenAI and Anthropic accept: a plain top-level object with `properties`."""
    schema = {k: copied(v) for k, v in parameters.items() if k not in _TOP_LEVEL_REFUSED}
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return schema


def openai_chat_tools(tools: Iterable[HostTool]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": model_schema(t.parameters),
            },
        }
        for t in tools
    ]


def responses_tools(tools: Iterable[HostTool]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": model_schema(t.parameters),
        }
        for t in tools
    ]


def anthropic_tools(tools: Iterable[HostTool]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": model_schema(t.parameters)}
        for t in tools
    ]


def mcp_list_tools(tools: Iterable[HostTool]) -> dict[str, Any]:
    """A `tools/list` result. MCP takes the whole schema, so it is passed whole."""
    listed = []
    for t in tools:
        entry: dict[str, Any] = {"name": t.name}
        if t.title:
            entry["title"] = t.title
        entry.update(
            description=t.description,
            inputSchema=copied(t.parameters),
            annotations=tool_annotations(t.side_effect),
        )
        listed.append(entry)
    return {"tools": listed}


def openai_chat_result(call_id: str, envelope: dict[str, Any]) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": envelope_text(envelope)}


def responses_result(call_id: str, envelope: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": envelope_text(envelope)}


def anthropic_result(call_id: str, envelope: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": envelope_text(envelope),
        "is_error": is_failure(envelope),
    }


def mcp_call_result(envelope: dict[str, Any]) -> dict[str, Any]:
    """A `tools/call` result: errors are results with isError, so the model can correct itself."""
    return {
        "content": [{"type": "text", "text": envelope_text(envelope)}],
        "structuredContent": envelope,
        "isError": is_failure(envelope),
    }
