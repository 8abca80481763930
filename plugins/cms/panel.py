"""What the CMS panel shows, drawn with `page.show("cms", state)` after every change.

Plain data for panel.js: who is signed in, their sites, the selected one, its entries with
their status, and a message. The renderer sets all of it as text.
"""

from __future__ import annotations

from collections.abc import Callable
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


def change_questions(
    state: CmsState, panel: CmsPanel
) -> dict[str, Callable[[dict[str, Any]], str]]:
    """What the person is asked before each change an assistant makes, by command id: the entry's
    title as the panel lists it and the site's name, read when asked."""

    def site() -> str:
        return next(
            (s["title"] for s in state.sites if s["id"] == state.site),
            state.site or "the selected site",
        )

    def entry(args: dict[str, Any]) -> str:
        slug = str(args.get("slug", ""))
        return "‘" + next((str(e["title"]) for e in panel.entries if e["slug"] == slug), slug) + "’"

    def crawl(kind: str) -> Callable[[dict[str, Any]], str]:
        def question(args: dict[str, Any]) -> str:
            if args.get("dry_run"):
                return f"Look at the {kind} at {args['url']} without importing anything?"
            limit = args.get("limit")
            what = f"{limit} post{'' if limit == 1 else 's'}" if isinstance(limit, int) else "posts"
            return f"Import {what} from the {kind} at {args['url']} into {site()} as drafts?"

        return question

    return {
        "cms.crawlBlog": crawl("blog"),
        "cms.crawlFeed": crawl("feed"),
        "cms.crawlWordpress": crawl("WordPress site"),
        "cms.createSitePage": lambda args: (
            f"Create and publish ‘{args['title']}’ on {site()}?"
            if args.get("publish") is True
            else f"Create the draft ‘{args['title']}’ on {site()}?"
        ),
        "cms.updateSitePage": lambda args: f"Change {entry(args)} on {site()}?",
        "cms.publishSitePage": lambda args: f"Publish {entry(args)} on {site()}?",
        "cms.unpublishSitePage": lambda args: (
            f"Unpublish {entry(args)} on {site()}? Its public page goes away."
        ),
        "cms.deleteSitePage": lambda args: (
            f"Delete {entry(args)} from {site()}? This cannot be undone."
        ),
    }
