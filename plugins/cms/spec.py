"""The CMS plugin, declared; `cms_plugin(crawl_allow=..., ...)` passes options to its server
half."""

from pathlib import Path
from typing import Any

from reactor.plugin_spec import PluginSpec


def cms_plugin(**options: Any) -> PluginSpec:
    """The CMS with its server half made by `CmsServerPlugin(**options)` (crawl limits,
    allow-list)."""

    def server() -> Any:
        from .server import CmsServerPlugin

        return CmsServerPlugin(**options)

    return PluginSpec(
        name="cms",
        description="A CMS: sites with pages and posts, drafts first, publish on request, public "
        "pages.",
        page="reactor_plugins.cms:CMS_PLUGIN",
        server=server,
        folder=Path(__file__).parent,
        assets=("panel.js", "cms.css"),
        page_services={"cms_api": "/api/cms"},
        agent_tools="agent-tools.json",
    )


PLUGIN = cms_plugin()
