"""The AI Tools plugin, declared: a page half, and a server half that only lists the user's
AI Tools (the records API is the server's own)."""

from typing import Any

from reactor.plugin_spec import PluginSpec

from .bundle import AI_TOOLS_PLUGIN


def _server() -> Any:
    from .server import AiToolsServer

    return AiToolsServer()


PLUGIN = PluginSpec(
    name=AI_TOOLS_PLUGIN,
    description="Functions written for this account, offered to the agent as tools, and UI "
    "plugins shown as panels.",
    page="reactor_plugins.ai_tools:AI_TOOLS_PAGE_PLUGIN",
    server=_server,
    preload=("/plugins",),  # the records its page half lists as it starts (page.py RECORDS_API)
)
