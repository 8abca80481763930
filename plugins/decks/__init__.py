"""The decks plugin for the page: slide decks an agent can read, write, show and present.

Its commands and tools are declared once, in agent-tools.json: this page plugin registers that
bundle with the handlers of commands.py, and `server.py` serves the same file.
Nothing here imports starlette or `js`; the page's services arrive through the reactor.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from reactor import PluginContext, PluginError, define_plugin, load_agent_tools

from .commands import DeckCommands, deck_handlers
from .store import DeckStore
from .view import DeckView

DECKS_AGENT_TOOLS: dict[str, Any] = load_agent_tools(Path(__file__).with_name("agent-tools.json"))


def _register(context: PluginContext) -> DeckCommands:
    services = context.reactor.services
    page = services.get("page")
    if page is None:
        raise PluginError(
            "The decks plugin needs the page service: Reactor(services={'page': ...}).",
            plugin="decks",
        )
    store = DeckStore(page, services.get("decks_api"))
    commands = DeckCommands(store, DeckView(page), page)
    context.register_bundle(DECKS_AGENT_TOOLS, deck_handlers(commands))
    return commands


async def _show_the_list(context: PluginContext) -> None:
    # The page opens on the list of decks, not on an empty card. Not awaited: the page is ready
    # without waiting for the decks server (show_first_screen never covers a deck opened meanwhile).
    asyncio.ensure_future(context.exports.show_first_screen())


DECKS_PLUGIN = define_plugin(
    name="decks",
    register=_register,  # its description is the spec's (spec.py): one per plugin
    activate=_show_the_list,
)

__all__ = ["DECKS_AGENT_TOOLS", "DECKS_PLUGIN", "DeckCommands", "DeckStore", "DeckView"]
