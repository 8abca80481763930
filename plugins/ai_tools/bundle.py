"""The AI Tools a user can see, offered to the agent as one ordinary AgentTools bundle, so a
host needs nothing special: the page half contributes it, the server half lists it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reactor.agent_tools import define_agent_tools

AI_TOOLS_BUNDLE_ID = "ai-tools"
AI_TOOLS_PLUGIN = "ai-tools"


def ai_tool_command(record_id: str) -> str:
    """The reactor command behind one AI Tool."""
    return f"aiTools.invoke.{record_id}"


def ai_tool_bundle(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One bundle for the enabled AI Tool records given (already filtered to what the user sees)."""
    tools = [
        {
            "name": record["name"],
            "command": ai_tool_command(record["id"]),
            "label": person_label(record["name"]),
            "description": record["settings"]["tool"]["description"],
            "parameters": record["settings"]["tool"]["inputSchema"],
            "sideEffect": record["settings"]["tool"]["annotations"]["sideEffect"],
        }
        for record in sorted(records, key=lambda r: r["name"])
        if record["location"] == "ai-tool" and record["enabled"]
    ]
    return define_agent_tools(
        id=AI_TOOLS_BUNDLE_ID,
        name="AI Tools",
        description="Functions written for this account; each answers one question.",
        plugin=AI_TOOLS_PLUGIN,
        commands=tools,
    )


def person_label(name: str) -> str:
    """A record's tool name as the palette and a chat card show it: "maintenance_backlog" is
    "AI Tool: Maintenance backlog" (the name stays the model's)."""
    words = name.replace("_", " ").replace("-", " ").strip()
    return f"AI Tool: {words[:1].upper()}{words[1:]}"
