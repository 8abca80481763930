"""The AI Tools plugin, declared: a page half only (the records API is the server's own)."""

from reactor.ai_tools.bundle import AI_TOOLS_PLUGIN
from reactor.plugin_spec import PluginSpec

PLUGIN = PluginSpec(
    name=AI_TOOLS_PLUGIN,
    description="Functions written for this account, offered to the agent as tools, and UI "
    "plugins shown as panels.",
    page="reactor_plugins.ai_tools:AI_TOOLS_PAGE_PLUGIN",
)
