"""The CMS plugin for the page: tools bound to the authenticated site, drafts first, publish on
request, show the public page.

Its tools are declared once, in agent-tools.json: this page plugin contributes that bundle and
registers each command with the tool's parameters and a live handler from
`create_cms_agent_tools`; `server.py` serves the same file. Nothing here imports starlette or
`js`; the page's services arrive through the reactor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reactor import AgentTools, PluginContext, PluginError, contribution, define_plugin, load_agent_tools

from .client import CmsClient
from .commands import PanelCommands, register_cms_commands
from .panel import CmsPanel
from .state import CmsState
from .tools import create_cms_agent_tools

CMS_AGENT_TOOLS: dict[str, Any] = load_agent_tools(Path(__file__).with_name("agent-tools.json"))


def _register(context: PluginContext) -> None:
    services = context.reactor.services
    page = services.get("page")
    if page is None:
        raise PluginError("The CMS plugin needs the page service: Reactor(services={'page': ...}).", plugin="cms")
    state = CmsState(api=str(services.get("cms_api") or "/api/cms").rstrip("/"))
    services["cms_state"] = state  # the live state, for the host and for tests
    panel = CmsPanel(page, state)
    client = CmsClient(page, state, on_session_lost=lambda: panel.draw("The session ended; sign in again."))
    handlers = create_cms_agent_tools(state, client, panel, page)
    register_cms_commands(context, handlers, PanelCommands(state, client, panel), CMS_AGENT_TOOLS)
    context.on_dispose(lambda: services.pop("cms_state", None))


CMS_PLUGIN = define_plugin(
    name="cms",
    description="A CMS: sign in, pick a site, crawl sources into drafts, publish on request, show the page.",
    contributes=[contribution(AgentTools, CMS_AGENT_TOOLS, id="cms")],
    register=_register,
)

__all__ = ["CMS_AGENT_TOOLS", "CMS_PLUGIN", "CmsClient", "CmsPanel", "CmsState", "create_cms_agent_tools"]
