"""Reading a blog, a feed or a WordPress site through the guarded fetcher, and importing what
was read as drafts. A crawl never publishes: publishing is its own call, by a publisher."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from reactor.errors import OutboundFailed, OutboundRefused
from reactor.server.outbound.fetch import Fetched, FetchPolicy, fetch

from .entry import SLUG
from .sources import Item, SourceError, blog_links, blog_post, feed_items, wordpress_items
from .store import SiteStore

KINDS = ("blog", "feed", "wordpress")
MAX_LIMIT = 20
BUDGET_TIMEOUTS = 3  # a whole blog crawl, index included, takes at most three single-fetch timeouts


@dataclass
class Crawl:
    """What a crawl read, and what it could not read (one sentence per skipped source)."""

    items: list[Item] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)


def crawl(kind: str, url: str, limit: int, policy: FetchPolicy) -> Crawl:
    """Read at most `limit` items; OutboundRefused/OutboundFailed/SourceError when the source itself
    fails."""
    readers: dict[str, Callable[[str, int, FetchPolicy], Crawl]] = {
        "blog": _blog,
        "feed": _feed,
        "wordpress": _wordpress,
    }
    return readers[kind](url, limit, policy)


def import_items(store: SiteStore, site: str, items: list[Item], collection: str) -> dict[str, Any]:
    """Create a draft per item; an item already imported from the same source URL is skipped.
    The slug is the source's own when valid, else made from the title; the store takes the next
    free one when another call got there first."""
    imported, skipped = [], []
    for item in items:
        existing = store.has_source(site, item.source_url)
        if existing:
            skipped.append(
                {"source_url": item.source_url, "reason": f"already imported as {existing!r}"}
            )
            continue
        fields = {
            "title": item.title,
            "collection": collection,
            "excerpt": item.excerpt,
            "body": item.body,
            "source_url": item.source_url,
        }
        suggested = item.slug if SLUG.fullmatch(item.slug or "") else ""
        entry = store.create_entry(site, fields, suggested_slug=suggested)
        imported.append(
            {
                "slug": entry["slug"],
                "title": entry["title"],
                "status": entry["status"],
                "source_url": entry["source_url"],
            }
        )
    return {"imported": imported, "skipped": skipped}


def _blog(url: str, limit: int, policy: FetchPolicy) -> Crawl:
    """The index page, then up to `limit` of its articles, all within one budget of time."""
    budget_end = time.monotonic() + policy.timeout * BUDGET_TIMEOUTS
    index = fetch(url, policy, accept="text/html")
    html = _text(index, "text/html", "a blog page")
    result = Crawl()
    links = _article_links(html, index.url, limit, result.skipped)
    if not links and not result.skipped:
        return Crawl([blog_post(html, index.url)])  # a single post, not an index
    for link in links:
        left = budget_end - time.monotonic()
        if left <= 0:
            result.skipped.append(
                {"source_url": link, "reason": "the crawl ran out of time before this page"}
            )
            continue
        try:
            page = fetch(link, policy, accept="text/html", seconds=left)
            result.items.append(blog_post(_text(page, "text/html", "a blog page"), page.url))
        except (OutboundRefused, OutboundFailed, SourceError) as error:
            reason = str(error)
            if isinstance(error, OutboundFailed) and time.monotonic() >= budget_end:
                reason = "the crawl ran out of time while reading this page"
            result.skipped.append({"source_url": link, "reason": reason})
    return result


def _article_links(html: str, base: str, limit: int, skipped: list[dict[str, str]]) -> list[str]:
    """Up to `limit` article links on the index's own site; a link that is not a URL at all
    (urlsplit refuses 'http://[::1/', an unclosed IPv6 bracket) is noted in `skipped`."""
    links: list[str] = []
    for href in blog_links(html):
        try:
            link = urljoin(base, href)
            same_site = _same_site(link, base)
        except ValueError:
            if len(skipped) < MAX_LIMIT:
                skipped.append(
                    {
                        "source_url": href[:200],
                        "reason": f"the link {href[:120]!r} is not a well-formed address",
                    }
                )
            continue
        if same_site and len(links) < limit:
            links.append(link)
    return links


def _feed(url: str, limit: int, policy: FetchPolicy) -> Crawl:
    answer = fetch(
        url, policy, accept="application/rss+xml, application/atom+xml, application/xml, text/xml"
    )
    return Crawl(feed_items(answer.body, answer.url)[:limit])


def _wordpress(url: str, limit: int, policy: FetchPolicy) -> Crawl:
    endpoint = url if "/wp-json/" in url else url.rstrip("/") + "/wp-json/wp/v2/posts"
    if "?" not in endpoint:
        endpoint += f"?per_page={limit}"
    answer = fetch(endpoint, policy, accept="application/json")
    return Crawl(wordpress_items(answer.body, answer.url)[:limit])


def _text(answer: Fetched, expected: str, what: str) -> str:
    kind = answer.content_type.split(";")[0].strip().lower()
    if kind and kind not in (expected, "application/xhtml+xml"):
        raise SourceError(
            f"{answer.url[:120]!r} is {kind!r}, not {what}; use the tool for that kind of source."
        )
    charset = "utf-8"
    for part in answer.content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip('"')
    try:
        return answer.body.decode(charset, errors="replace")
    except LookupError:
        return answer.body.decode("utf-8", errors="replace")


def _same_site(link: str, base: str) -> bool:
    a, b = urlsplit(link), urlsplit(base)
    return (a.scheme, a.netloc) == (b.scheme, b.netloc)
