"""The AI Tools plugin: the user's plugin records in the page, AI Tools offered to the agent and
UI plugins shown as panels. The mechanisms (save-time rules, the call, the runners) are the core's,
in `reactor.records`; the records API is the server's (`reactor.server.plugins.records`)."""

from .page import AI_TOOLS_PAGE_PLUGIN

__all__ = ["AI_TOOLS_PAGE_PLUGIN"]
