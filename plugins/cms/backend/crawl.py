"""Reading a blog, a feed or a WordPress site through the guarded fetcher, and importing what
was read as drafts. A crawl never publishes: publishing is its own call, by a publisher."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urljoin, urlsplit

from .entry import free_slug, slugify, SLUG
from .fetch import CrawlFailed, Fetched, FetchPolicy, fetch
from .guard import CrawlRefused
from .sources import Item, SourceError, blog_links, blog_post, feed_items, wordpress_items
from .store import SiteStore

KINDS = ("blog", "feed", "wordpress")
MAX_LIMIT = 20
BUDGET_TIMEOUTS = 3  # a whole blog crawl may take three single-request timeouts, not limit + 1


@dataclass
class Crawl:
    """What a crawl read, and what it could not read (one sentence per skipped source)."""

    items: list[Item] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)


def crawl(kind: str, url: str, limit: int, policy: FetchPolicy) -> Crawl:
    """Read at most `limit` items; CrawlRefused/CrawlFailed/SourceError when the source itself fails."""
    readers: dict[str, Callable[[str, int, FetchPolicy], Crawl]] = {
        "blog": _blog, "feed": _feed, "wordpress": _wordpress,
    }
    return readers[kind](url, limit, policy)


def import_items(store: SiteStore, site: str, items: list[Item], collection: str) -> dict[str, Any]:
    """Create a draft per item; an item already imported from the same source URL is skipped."""
    imported, skipped = [], []
    taken = {entry["slug"] for entry in store.list_entries(site)}
    for item in items:
        existing = store.has_source(site, item.source_url)
        if existing:
            skipped.append({"source_url": item.source_url, "reason": f"already imported as {existing!r}"})
            continue
        base = item.slug if SLUG.fullmatch(item.slug or "") else slugify(item.title)
        slug = free_slug(base, taken)
        taken.add(slug)
        fields = {"title": item.title, "slug": slug, "collection": collection, "excerpt": item.excerpt,
                  "body": item.body, "source_url": item.source_url}
        entry = store.create_entry(site, fields)
        imported.append({"slug": entry["slug"], "title": entry["title"], "status": entry["status"],
                         "source_url": entry["source_url"]})
    return {"imported": imported, "skipped": skipped}


def _blog(url: str, limit: int, policy: FetchPolicy) -> Crawl:
    index = fetch(url, policy, accept="text/html")
    html = _text(index, "text/html", "a blog page")
    links = [link for link in (urljoin(index.url, href) for href in blog_links(html)) if _same_site(link, index.url)]
    if not links:
        return Crawl([blog_post(html, index.url)])  # a single post, not an index
    result = Crawl()
    budget_end = time.monotonic() + policy.timeout * BUDGET_TIMEOUTS
    for link in links[:limit]:
        if time.monotonic() > budget_end:
            result.skipped.append({"source_url": link, "reason": "the crawl ran out of time before this page"})
            continue
        try:
            page = fetch(link, policy, accept="text/html")
            result.items.append(blog_post(_text(page, "text/html", "a blog page"), page.url))
        except (CrawlRefused, CrawlFailed, SourceError) as error:
            result.skipped.append({"source_url": link, "reason": str(error)})
    return result


def _feed(url: str, limit: int, policy: FetchPolicy) -> Crawl:
    answer = fetch(url, policy, accept="application/rss+xml, application/atom+xml, application/xml, text/xml")
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
        raise SourceError(f"{answer.url[:120]!r} is {kind!r}, not {what}; use the tool for that kind of source.")
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
