"""The decks plugin, declared: what the page loads, what the server runs, the agent's tools."""

from pathlib import Path
from typing import Any

from reactor.plugin_spec import PluginSpec

PLUGIN = PluginSpec(
    name="decks",
    description="Slide decks: stored on the server, edited from the page, printable.",
    page="reactor_plugins.decks:DECKS_PLUGIN",
    server=lambda: _server(),
    folder=Path(__file__).parent,
    assets=("view.js", "decks.css"),  # the view's renderer and its styles
    page_services={"decks_api": "/api/decks"},
    agent_tools="agent-tools.json",
)


def _server() -> Any:  # Starlette is imported when an app is made, not when the spec is read
    from .server import DecksServerPlugin

    return DecksServerPlugin()
