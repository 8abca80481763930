"""The CMS plugin for the page: tools bound to the authenticated site, drafts first, publish on
request, show the public page.

Its commands and tools are declared once, in agent-tools.json: this page plugin registers that
bundle with live handlers (`create_cms_agent_tools`, commands.py); `server.py` serves the same file.
Nothing here imports starlette or `js`; the page's services arrive through the reactor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reactor import PluginContext, PluginError, define_plugin, load_agent_tools

from .client import CmsClient
from .commands import PanelCommands, cms_handlers
from .panel import CmsPanel
from .state import CmsState
from .tools import create_cms_agent_tools

CMS_AGENT_TOOLS: dict[str, Any] = load_agent_tools(Path(__file__).with_name("agent-tools.json"))


def _register(context: PluginContext) -> CmsState:
    services = context.reactor.services
    page = services.get("page")
    if page is None:
        raise PluginError(
            "The CMS plugin needs the page service: Reactor(services={'page': ...}).", plugin="cms"
        )
    state = CmsState(api=str(services.get("cms_api") or "/api/cms").rstrip("/"))
    panel = CmsPanel(page, state)
    client = CmsClient(
        page, state, on_session_lost=lambda: panel.draw("The session ended; sign in again.")
    )
    tools = create_cms_agent_tools(state, client, panel, page)
    context.register_bundle(
        CMS_AGENT_TOOLS, cms_handlers(tools, PanelCommands(state, client, panel))
    )
    return state  # its exports: the live state (who is signed in, which site)


CMS_PLUGIN = define_plugin(
    name="cms",
    register=_register,  # its description is the spec's (spec.py): one per plugin
)

__all__ = [
    "CMS_AGENT_TOOLS",
    "CMS_PLUGIN",
    "CmsClient",
    "CmsPanel",
    "CmsState",
    "create_cms_agent_tools",
]
