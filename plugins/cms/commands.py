"""The CMS commands: the tools' commands (handlers from `tools.py`, contract from the bundle)
and the panel's own commands — sign in, sign out, pick a site, pick an entry — which are not
tools: a model never handles the person's password or chooses where its calls go.

The page has one sign-in, the header's form (web/session.js, the `session` view): cms.signIn
asks for that form, cms.signOut signs out and tells it, and the panel follows whatever session
the header has (cms.restoreSession, run on each `reactor:session` event). Every command that
needs someone signed in is disabled while nobody is."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from reactor import NO_ARGUMENTS, PluginContext
from reactor.errors import NotFoundError, ToolError

from .client import CmsClient
from .panel import CmsPanel, change_questions
from .state import SIGN_IN_FIRST, SIGNED_OUT, CmsState

SLUG = {"type": "string", "minLength": 1, "maxLength": 80, "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"}
PANEL_PARAMETERS: dict[str, dict[str, Any]] = {
    "cms.selectSite": {
        "type": "object",
        "properties": {"site": {"type": "string", "minLength": 1, "maxLength": 80}},
        "required": ["site"],
        "additionalProperties": False,
    },
    "cms.selectEntry": {"type": "object", "properties": {"slug": SLUG}, "required": ["slug"], "additionalProperties": False},
}
SESSION_VIEW = "session"  # the header's sign-in (web/session.js)


class PanelCommands:
    """Change the live state the tools read; each redraws the panel."""

    def __init__(self, state: CmsState, client: CmsClient, panel: CmsPanel) -> None:
        self.state = state
        self.client = client
        self.panel = panel
        self._newest: asyncio.Future[dict[str, Any]] | None = None  # the latest restore_session's answer

    def sign_in(self, args: dict[str, Any]) -> dict[str, Any]:
        """Bring the header's sign-in form forward: the page's one sign-in, its password hidden."""
        self.panel.page.show(SESSION_VIEW, {"signIn": True})
        return {"signedIn": False, "shown": "the sign-in form at the top of the page"}

    async def restore_session(self, args: dict[str, Any]) -> dict[str, Any]:
        """Follow the session the page has now (its cookie): on load, and after each sign-in or out.
        Calls may overlap (the page's load and a sign-in): each answers with the newest one's outcome."""
        answer = asyncio.get_running_loop().create_future()
        self._newest = answer
        try:
            session = await self.client.existing_session()
            if self._newest is answer:
                answer.set_result(await self._follow(session))
        except Exception as error:
            if self._newest is answer and not answer.done():
                answer.set_exception(error)
        finally:  # stopped midway (cancelled): those waiting for this answer are not left waiting
            if self._newest is answer and not answer.done():
                answer.cancel()
        while True:  # a later call asked meanwhile: its answer is about the newer session
            newest = self._newest
            assert newest is not None
            result = await asyncio.shield(newest)
            if newest is self._newest:
                return result

    async def _follow(self, session: dict[str, Any] | None) -> dict[str, Any]:
        if session is None:
            was_signed_in = self.state.signed_in
            self.state.sign_out()
            self.panel.draw("Signed out." if was_signed_in else self.panel.message)
            return {"signedIn": False}
        return await self._adopt(session, "")

    async def sign_out(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            await self.client.sign_out()
        finally:
            self.state.sign_out()
            self.panel.draw("Signed out.")
            self.panel.page.show(SESSION_VIEW, {"signedIn": False})  # the header, the panels, the palette follow
        return {"signedIn": False}

    async def select_site(self, args: dict[str, Any]) -> dict[str, Any]:
        site = args["site"]
        if not self.state.signed_in:
            raise ToolError("not_permitted", SIGNED_OUT, display=SIGN_IN_FIRST)
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

    def _where(self) -> dict[str, Any]:
        state = self.state
        if not state.signed_in:
            return {"signedIn": False}
        return {"signedIn": True, "username": state.username, "sites": state.sites, "site": state.site}

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
        return self._where()


def register_cms_commands(
    context: PluginContext,
    handlers: dict[str, Callable[[dict[str, Any]], Any]],
    panel_commands: PanelCommands,
    bundle: dict[str, Any],
) -> None:
    """Every tool's command with the tool's description and parameters; then the panel's. All
    but restoring the session need someone signed in, and signing in needs nobody to be."""
    state = panel_commands.state

    def signed_in() -> bool:
        return state.signed_in

    needs_user: dict[str, Any] = {
        "is_enabled": signed_in,
        "disabled_reason": SIGNED_OUT,
        "disabled_display": SIGN_IN_FIRST,
    }
    questions = change_questions(state, panel_commands.panel)
    for tool in bundle["commands"]:
        context.register_command(
            tool["command"],
            handlers[tool["command"]],
            label="CMS: " + tool["name"].removeprefix("cms_").replace("_", " ").capitalize(),
            description=tool["description"],
            parameters=tool.get("parameters", NO_ARGUMENTS),
            confirmation=questions.get(tool["command"]),
            **needs_user,
        )
    context.register_command(
        "cms.signIn",
        panel_commands.sign_in,
        label="CMS: Sign in",
        parameters=NO_ARGUMENTS,
        is_enabled=lambda: not state.signed_in,
        disabled_reason="someone is signed in already; sign out first.",
        disabled_display="You are signed in already.",
    )
    context.register_command(
        "cms.restoreSession", panel_commands.restore_session, label="CMS: Restore session", parameters=NO_ARGUMENTS
    )
    own: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
        ("cms.signOut", panel_commands.sign_out, "CMS: Sign out"),
        ("cms.selectSite", panel_commands.select_site, "CMS: Select site"),
        ("cms.selectEntry", panel_commands.select_entry, "CMS: Select entry"),
    ]
    for id, handler, label in own:
        context.register_command(id, handler, label=label, parameters=PANEL_PARAMETERS.get(id, NO_ARGUMENTS), **needs_user)
