"""The decks plugin for the page: slide decks an agent can read, write, show and present.

Its tools are declared once, in agent-tools.json: this page plugin contributes that bundle and
registers each command with the tool's parameters, and `server.py` serves the same file.
Nothing here imports starlette or `js`; the page's services arrive through the reactor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reactor import AgentTools, CommandError, PluginContext, contribution, define_plugin, load_agent_tools

from .commands import DeckCommands, register_deck_commands
from .store import DeckStore
from .view import DeckView

DECKS_AGENT_TOOLS: dict[str, Any] = load_agent_tools(Path(__file__).with_name("agent-tools.json"))


def _register(context: PluginContext) -> None:
    services = context.reactor.services
    page = services.get("page")
    if page is None:
        raise LookupError("The decks plugin needs the page service: Reactor(services={'page': ...}).")
    store = DeckStore(page, services.get("decks_api"))
    register_deck_commands(context, DeckCommands(store, DeckView(page), page), DECKS_AGENT_TOOLS)


async def _show_the_list(context: PluginContext) -> None:
    # The page opens on the list of decks, each with its Open button, not on an empty card.
    # Activation runs before the page can send a command, so this never covers a deck it opened.
    try:
        await context.reactor.execute_command("decks.list")
    except CommandError as error:  # the plugin still works; the screen says why there is no list
        context.reactor.services["page"].show("decks", {"message": f"The decks could not be listed: {error}"})


DECKS_PLUGIN = define_plugin(
    name="decks",
    description="Slide decks: list, open, present and print them; read and write their slides.",
    contributes=[contribution(AgentTools, DECKS_AGENT_TOOLS, id="decks")],
    register=_register,
    activate=_show_the_list,
)

__all__ = ["DECKS_AGENT_TOOLS", "DECKS_PLUGIN", "DeckCommands", "DeckStore", "DeckView"]
