"""The live handlers behind the CMS tools: `create_cms_agent_tools` binds each tool of the
bundle to this page's state, read at call time (the API, the signed-in user, the selected site).

The bundle (agent-tools.json) stays the contract with the model; these are the handlers. Each
takes the tool's arguments, already checked against the bundle's schema, and returns what the
model needs next. Drafts are the default everywhere; publishing is a separate, explicit call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from reactor.errors import ToolError
from reactor.page import Page

from .client import CmsClient
from .panel import CmsPanel
from .state import CmsState

Handler = Callable[[dict[str, Any]], Awaitable[Any]]
DRAFT_NOTE = (
    "It is a draft, not public. Publish it with cms_publish_site_page only when the person asks."
)


def create_cms_agent_tools(
    state: CmsState, client: CmsClient, panel: CmsPanel, page: Page
) -> dict[str, Handler]:
    """Handlers by command id, for every command the CMS bundle names."""

    async def refresh(message: str = "") -> list[dict[str, Any]]:
        """Redraw the panel; a failure here must not turn a done change into a failed call."""
        try:
            entries = (await client.list_entries())["entries"]
        except (ToolError, LookupError, ValueError, ConnectionError) as error:
            panel.draw(str(error))
            return []
        panel.show_entries(entries, message)
        return entries

    def crawler(kind: str) -> Handler:
        async def crawl(args: dict[str, Any]) -> dict[str, Any]:
            answer = await client.crawl(kind, args)
            if not args.get("dry_run"):
                count = len(answer.get("imported", []))
                answer["note"] = (
                    f"{count} draft{'' if count == 1 else 's'} imported; nothing was published."
                )
                await refresh(answer["note"])
            return answer

        return crawl

    async def list_site_pages(args: dict[str, Any]) -> dict[str, Any]:
        answer = await client.list_entries(
            collection=args.get("collection", ""), status=args.get("status", "")
        )
        if not args:
            panel.show_entries(answer["entries"], panel.message)
        return answer

    async def read_site_page(args: dict[str, Any]) -> dict[str, Any]:
        entry = await client.read_entry(args["slug"])
        state.current = entry["slug"]
        return entry

    async def get_current_site_page(args: dict[str, Any]) -> dict[str, Any]:
        site = state.require_site()
        if not state.current:
            raise ToolError(
                "unavailable",
                f"No entry of site {site!r} is selected in the CMS panel; read one by slug "
                "with cms_read_site_page.",
                display="Pick an entry in the CMS panel first.",
            )
        return await read_site_page({"slug": state.current})

    async def create_site_page(args: dict[str, Any]) -> dict[str, Any]:
        fields = dict(args)
        if fields.get("publish") is not True:
            fields.pop("publish", None)  # only an explicit true publishes; anything else is a draft
        entry = await client.create_entry(fields)
        state.current = entry["slug"]
        note = (
            DRAFT_NOTE
            if entry["status"] == "draft"
            else f"Published at {entry['url']}, as the call asked."
        )
        await refresh(f"Created ‘{entry['title']}’ ({entry['status']}).")
        return {**entry, "note": note}

    async def update_site_page(args: dict[str, Any]) -> dict[str, Any]:
        changes = {key: value for key, value in args.items() if key != "slug"}
        if not changes:
            raise ToolError(
                "invalid_arguments",
                "Say what to change: pass a new title, excerpt, body, collection or source_url.",
            )
        try:
            entry = await client.update_entry(args["slug"], changes)
        except ToolError as error:
            # someone else's change came first: show the entry as it is now
            if error.code == "conflict":
                await refresh(str(error))
            raise
        state.current = entry["slug"]
        await refresh(f"Saved ‘{entry['title']}’.")
        return entry

    def publisher(published: bool) -> Handler:
        async def set_published(args: dict[str, Any]) -> dict[str, Any]:
            entry = await client.set_published(args["slug"], published)
            state.current = entry["slug"]
            await refresh(f"{'Published' if published else 'Unpublished'} ‘{entry['title']}’.")
            return entry

        return set_published

    async def delete_site_page(args: dict[str, Any]) -> dict[str, Any]:
        if args.get("confirm") is not True:
            raise ToolError(
                "invalid_arguments", "Deleting needs confirm: true, after the person confirmed it."
            )
        answer = await client.delete_entry(args["slug"])
        if state.current == args["slug"]:
            state.current = ""
        await refresh(f"Deleted ‘{args['slug']}’.")
        return answer

    async def show_site_page(args: dict[str, Any]) -> dict[str, Any]:
        entry = await client.read_entry(args["slug"])
        if entry["status"] != "published":
            raise ToolError(
                "failed",
                f"The entry {entry['slug']!r} of site {entry['site']!r} is a draft, so it has no "
                "public page yet; publish it with cms_publish_site_page if the person asks.",
                display=f"‘{entry['title']}’ is a draft, so it has no public page yet: publish it "
                "first.",
            )
        url = client.public_url(entry["url"])
        state.current = entry["slug"]
        answer: dict[str, Any] = {
            "site": entry["site"],
            "slug": entry["slug"],
            "url": url,
            "opened": await page.open_tab(url),
        }
        if answer["opened"]:
            answer["shown"] = entry["title"]  # what the new tab shows (the card's line names it)
        else:
            answer["message"] = f"The browser blocked the new tab; the page is at {url}"
        panel.draw(answer.get("message", f"Opened {url}."))
        return answer

    async def refresh_site_view(args: dict[str, Any]) -> dict[str, Any]:
        answer = await client.list_entries()
        panel.show_entries(
            answer["entries"], f"Site {answer['site']!r}: {len(answer['entries'])} entries."
        )
        return answer

    return {
        "cms.crawlBlog": crawler("blog"),
        "cms.crawlFeed": crawler("feed"),
        "cms.crawlWordpress": crawler("wordpress"),
        "cms.listSitePages": list_site_pages,
        "cms.readSitePage": read_site_page,
        "cms.getCurrentSitePage": get_current_site_page,
        "cms.createSitePage": create_site_page,
        "cms.updateSitePage": update_site_page,
        "cms.publishSitePage": publisher(True),
        "cms.unpublishSitePage": publisher(False),
        "cms.deleteSitePage": delete_site_page,
        "cms.showSitePage": show_site_page,
        "cms.refreshSiteView": refresh_site_view,
    }
