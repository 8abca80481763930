"""The CMS commands: the tools' commands (handlers from `tools.py`, contract from the bundle)
and the panel's own commands — sign in, sign out, pick a site, pick an entry — which are not
tools: a model never handles the person's password or chooses where its calls go."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactor import NO_ARGUMENTS, PluginContext
from reactor.errors import NotFoundError, ToolError

from .client import CmsClient
from .panel import CmsPanel
from .state import CmsState

SLUG = {"type": "string", "minLength": 1, "maxLength": 80, "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"}
PANEL_PARAMETERS: dict[str, dict[str, Any]] = {
    "cms.signIn": {
        "type": "object",
        "properties": {
            "username": {"type": "string", "minLength": 1, "maxLength": 200},
            "password": {"type": "string", "minLength": 1, "maxLength": 1000},
        },
        "required": ["username", "password"],
        "additionalProperties": False,
    },
    "cms.selectSite": {
        "type": "object",
        "properties": {"site": {"type": "string", "minLength": 1, "maxLength": 80}},
        "required": ["site"],
        "additionalProperties": False,
    },
    "cms.selectEntry": {"type": "object", "properties": {"slug": SLUG}, "required": ["slug"], "additionalProperties": False},
}


class PanelCommands:
    """Change the live state the tools read; each redraws the panel."""

    def __init__(self, state: CmsState, client: CmsClient, panel: CmsPanel) -> None:
        self.state = state
        self.client = client
        self.panel = panel

    async def sign_in(self, args: dict[str, Any]) -> dict[str, Any]:
        session = await self.client.sign_in(args["username"], args["password"])
        return await self._adopt(session, f"Signed in as {session['user']['username']}.")

    async def restore_session(self, args: dict[str, Any]) -> dict[str, Any]:
        """On load: a session cookie from before the reload still signs the person in."""
        session = await self.client.existing_session()
        if self.state.signed_in:  # the person signed in while we asked: theirs is the newer answer
            return {"signedIn": True, "username": self.state.username, "sites": self.state.sites, "site": self.state.site}
        if session is None:
            self.panel.draw()
            return {"signedIn": False}
        return await self._adopt(session, "")

    async def sign_out(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            await self.client.sign_out()
        finally:
            self.state.sign_out()
            self.panel.draw("Signed out.")
        return {"signedIn": False}

    async def select_site(self, args: dict[str, Any]) -> dict[str, Any]:
        site = args["site"]
        if not self.state.signed_in:
            raise ToolError("not_permitted", "Sign in first: nobody is signed in in this page.")
        if site not in {s["id"] for s in self.state.sites}:
            names = ", ".join(s["id"] for s in self.state.sites) or "none"
            raise NotFoundError(f"User {self.state.username!r} has no site {site!r}; their sites: {names}.")
        self.state.site, self.state.current = site, ""
        entries = (await self.client.list_entries())["entries"]
        self.panel.show_entries(entries, f"Site {site!r} selected ({self.state.role()}).")
        return {"site": site, "role": self.state.role(), "entries": len(entries)}

    def select_entry(self, args: dict[str, Any]) -> dict[str, Any]:
        self.state.require_site()
        self.state.current = args["slug"]
        self.panel.draw(self.panel.message)
        return {"site": self.state.site, "current": args["slug"]}

    async def _adopt(self, session: dict[str, Any], message: str) -> dict[str, Any]:
        state = self.state
        state.username, state.sites = session["user"]["username"], session["sites"]
        if state.site not in {s["id"] for s in state.sites}:
            state.site = state.sites[0]["id"] if state.sites else ""
            state.current = ""
        if state.site:
            entries = (await self.client.list_entries())["entries"]
            self.panel.show_entries(entries, message)
        else:
            self.panel.draw(message or f"User {state.username!r} has no CMS site yet.")
        return {"signedIn": True, "username": state.username, "sites": state.sites, "site": state.site}


def register_cms_commands(
    context: PluginContext,
    handlers: dict[str, Callable[[dict[str, Any]], Any]],
    panel_commands: PanelCommands,
    bundle: dict[str, Any],
) -> None:
    """Every tool's command with the tool's description and parameters; then the panel's."""
    for tool in bundle["commands"]:
        context.register_command(
            tool["command"],
            handlers[tool["command"]],
            label="CMS: " + tool["name"].removeprefix("cms_").replace("_", " ").capitalize(),
            description=tool["description"],
            parameters=tool.get("parameters", NO_ARGUMENTS),
        )
    own: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
        ("cms.signIn", panel_commands.sign_in, "CMS: Sign in"),
        ("cms.restoreSession", panel_commands.restore_session, "CMS: Restore session"),
        ("cms.signOut", panel_commands.sign_out, "CMS: Sign out"),
        ("cms.selectSite", panel_commands.select_site, "CMS: Select site"),
        ("cms.selectEntry", panel_commands.select_entry, "CMS: Select entry"),
    ]
    for id, handler, label in own:
        context.register_command(id, handler, label=label, parameters=PANEL_PARAMETERS.get(id, NO_ARGUMENTS))
