"""The CMS commands' code: the tools' handlers (from `tools.py`) and the panel's own commands —
sign in, sign out, pick a site, pick an entry — which agent-tools.json declares as commands that
are no tool: a model never handles the person's password or chooses where its calls go.

The page has one sign-in, the header's form (web/session.js, the `session` view): cms.signIn
asks for that form, cms.signOut signs out and tells it, and the panel follows whatever session
the header has (cms.restoreSession, run on each `reactor:session` event). Every command that
needs someone signed in is disabled while nobody is."""

from __future__ import annotations

import asyncio
from typing import Any

from reactor import CommandOptions
from reactor.commands import Handler
from reactor.errors import NotFoundError, ToolError

from .client import CmsClient
from .panel import CmsPanel, change_questions
from .state import SIGN_IN_FIRST, SIGNED_OUT, CmsState

SESSION_VIEW = "session"  # the header's sign-in (web/session.js)


class PanelCommands:
    """Change the live state the tools read; each redraws the panel."""

    def __init__(self, state: CmsState, client: CmsClient, panel: CmsPanel) -> None:
        self.state = state
        self.client = client
        self.panel = panel
        self._newest: asyncio.Future[dict[str, Any]] | None = (
            None  # the latest restore_session's answer
        )

    def sign_in(self, args: dict[str, Any]) -> dict[str, Any]:
        """Bring the header's sign-in form forward: the page's one sign-in, its password hidden."""
        self.panel.page.show(SESSION_VIEW, {"signIn": True})
        return {"signedIn": False, "shown": "the sign-in form at the top of the page"}

    async def restore_session(self, args: dict[str, Any]) -> dict[str, Any]:
        """Follow the session the page has now (its cookie): on load, and after each sign-in or out.
        Calls may overlap (the page's load and a sign-in): each answers with the newest one's
        outcome."""
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
            # the header, the panels, the palette follow
            self.panel.page.show(SESSION_VIEW, {"signedIn": False})
        return {"signedIn": False}

    async def select_site(self, args: dict[str, Any]) -> dict[str, Any]:
        site = args["site"]
        if not self.state.signed_in:
            raise ToolError("not_permitted", SIGNED_OUT, display=SIGN_IN_FIRST)
        if site not in {s["id"] for s in self.state.sites}:
            names = ", ".join(s["id"] for s in self.state.sites) or "none"
            raise NotFoundError(
                f"User {self.state.username!r} has no site {site!r}; their sites: {names}."
            )
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
        return {
            "signedIn": True,
            "username": state.username,
            "sites": state.sites,
            "site": state.site,
        }

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
            self.panel.draw(message)  # the panel itself says that they are in no site yet
        return self._where()


def cms_handlers(
    tools: dict[str, Handler], panel_commands: PanelCommands
) -> dict[str, Handler | CommandOptions]:
    """The code of each command agent-tools.json declares: the tools' (`tools`), then the
    panel's. All but restoring the session need someone signed in; signing in needs nobody."""
    state = panel_commands.state
    questions = change_questions(state, panel_commands.panel)
    needs_user = {
        **tools,
        "cms.signOut": panel_commands.sign_out,
        "cms.selectSite": panel_commands.select_site,
        "cms.selectEntry": panel_commands.select_entry,
    }
    handlers: dict[str, Handler | CommandOptions] = {
        id: CommandOptions(
            execute,
            is_enabled=lambda args: state.signed_in,
            disabled_reason=SIGNED_OUT,
            disabled_display=SIGN_IN_FIRST,
            confirmation=questions.get(id),
        )
        for id, execute in needs_user.items()
    }
    handlers["cms.signIn"] = CommandOptions(
        panel_commands.sign_in,
        is_enabled=lambda args: not state.signed_in,
        disabled_reason="someone is signed in already; sign out first.",
        disabled_display="You are signed in already.",
    )
    handlers["cms.restoreSession"] = panel_commands.restore_session
    return handlers
