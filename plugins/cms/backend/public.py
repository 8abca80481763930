"""The public site, Astro-style: one real page per published entry at /sites/{site}/{slug}, and
an index per site. Drafts, unknown sites and unknown slugs are the same 404. The pages run no
script and load nothing, and every value is escaped."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from reactor.server.api import HTML, Call, Reply, declare, routes_of
from reactor.server.markdown import markdown_html

from .store import SiteStore, public_path

HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
    "form-action 'none'",
    "x-content-type-options": "nosniff",
}
PAGE = Reply(content=HTML)
STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:42rem;margin:2rem auto;padding:0 "
    "1rem;line-height:1.55;"
    "color:#1d2330}header "
    "a{color:#556;text-decoration:none}pre{background:#f3f4f6;padding:.6rem;overflow:auto}"
    ".excerpt{color:#556;font-size:1.1rem}"
)


def public_routes(store: SiteStore) -> list[Route]:
    return routes_of(site_index, entry_page, services=PublicServices(store))


@dataclass(frozen=True)
class PublicServices:
    """What the public pages read, one set per app (`call.services`, routes_of)."""

    store: SiteStore


def _store(call: Call) -> SiteStore:
    services: PublicServices = call.services
    return services.store


# The pages, each declared once at import; a request tries them in this order.
@declare(
    "GET",
    "/sites/{site}/",
    "A site's public index: its published entries",
    replies={200: PAGE, 404: PAGE},
)
async def site_index(call: Call) -> Response:
    site, store = call.path["site"], _store(call)
    title = await run_in_threadpool(store.site_title, site)
    if title is None:
        return _not_found()
    entries = await run_in_threadpool(lambda: store.list_entries(site, status="published"))
    items = "".join(
        f'<li><a href="{escape(public_path(site, e["slug"]))}">{escape(e["title"])}</a>'
        f" <small>{escape(e['collection'])}</small></li>"
        for e in entries
    )
    return _page(title, f"<h1>{escape(title)}</h1><ul>{items}</ul>", site, title)


@declare(
    "GET",
    "/sites/{site}/{slug}",
    "A published entry as its public page",
    replies={200: PAGE, 404: PAGE},
)
async def entry_page(call: Call) -> Response:
    site, slug, store = call.path["site"], call.path["slug"], _store(call)
    entry = await run_in_threadpool(store.get_entry, site, slug)
    if entry is None or entry["status"] != "published":
        return _not_found()
    site_title = await run_in_threadpool(store.site_title, site) or site
    excerpt = f'<p class="excerpt">{escape(entry["excerpt"])}</p>' if entry["excerpt"] else ""
    body = (
        f'<article data-collection="{escape(entry["collection"])}">'
        f"<h1>{escape(entry['title'])}</h1>"
        f"{excerpt}{markdown_html(entry['body'])}</article>"
    )
    return _page(f"{entry['title']} — {site_title}", body, site, site_title)


def _page(title: str, body: str, site: str, site_title: str) -> HTMLResponse:
    header = f'<header><a href="{escape(f"/sites/{site}/")}">{escape(site_title)}</a></header>'
    document = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{header}<main>{body}</main></body></html>"
    )
    return HTMLResponse(document, headers=HEADERS)


def _not_found() -> HTMLResponse:
    return HTMLResponse(
        "<!doctype html><title>Not found</title><p>There is no such page.</p>", 404, headers=HEADERS
    )
