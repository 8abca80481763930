"""The AI Tools plugin on the server: the AgentTools bundle of the AI Tool records a user can
see, as the page half builds it (the records and their API are the server's own)."""

from __future__ import annotations

from typing import Any

from reactor.server.auth.sessions import User
from reactor.server.plugins.context import ServerContext

from .bundle import ai_tool_bundle


class AiToolsServer:
    """No tables and no routes of its own: only the user's bundle, made for each request."""

    def setup(self, context: ServerContext, *, seed: bool) -> None:
        pass

    def routes(self, context: ServerContext) -> list[Any]:
        return []

    def agent_tools(self, context: ServerContext, user: User | None) -> list[dict[str, Any]]:
        """The user's AI Tools as one bundle; none when they see no enabled AI Tool."""
        offered = [
            r for r in context.records.visible(user) if r["location"] == "ai-tool" and r["enabled"]
        ]
        return [ai_tool_bundle(offered)] if offered else []
