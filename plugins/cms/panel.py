"""What the CMS panel shows, drawn with `page.show("cms", state)` after every change.

Plain data for panel.js: who is signed in, their sites, the selected one, its entries with
their status, and a message. The renderer sets all of it as text.
"""

from __future__ import annotations

from typing import Any

from reactor.page import Page

from .state import CmsState

VIEW = "cms"
SHOWN = ("slug", "title", "collection", "status", "url", "updated_at")


class CmsPanel:
    """Redraws the panel from the live state and the last listed entries."""

    def __init__(self, page: Page, state: CmsState) -> None:
        self.page = page
        self.state = state
        self.entries: list[dict[str, Any]] = []
        self.message = ""

    def show_entries(self, entries: list[dict[str, Any]], message: str = "") -> None:
        self.entries = [{key: entry.get(key) for key in SHOWN} for entry in entries]
        self.draw(message)

    def draw(self, message: str = "") -> None:
        self.message = message
        if not self.state.signed_in:
            self.entries = []
        self.page.show(VIEW, self.snapshot())

    def snapshot(self) -> dict[str, Any]:
        state = self.state
        return {
            "signedIn": state.signed_in,
            "username": state.username,
            "sites": [{"id": s["id"], "title": s["title"], "role": s["role"]} for s in state.sites],
            "site": state.site,
            "role": state.role(),
            "entries": self.entries if state.site else [],
            "current": state.current,
            "message": self.message,
        }
