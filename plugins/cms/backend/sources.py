"""Source material as items to import: a blog's pages, an RSS or Atom feed, WordPress's REST
answer. Pure parsing, no network: `crawl.py` fetches, these functions read what came back."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from typing import Any

from reactor.errors import ReactorError

from .entry import LIMITS
from .html_text import html_to_markdown, page_text, parse_html

ATOM = "{http://www.w3.org/2005/Atom}"
CONTENT = "{http://purl.org/rss/1.0/modules/content/}encoded"


class SourceError(ReactorError, ValueError):
    """The source was read but is not what the tool expects (not a feed, not WordPress JSON)."""


@dataclass(frozen=True)
class Item:
    """One piece of source material, ready to become a draft."""

    title: str
    body: str
    excerpt: str
    source_url: str
    slug: str = ""
    published: str = ""

    def describe(self) -> dict[str, str]:
        return {
            "title": self.title,
            "excerpt": self.excerpt,
            "source_url": self.source_url,
            "published": self.published,
        }


def blog_links(html: str) -> list[str]:
    """The links of an index page's articles (first link of each <article>, or rel=bookmark)."""
    return parse_html(html).article_links


def blog_post(html: str, url: str) -> Item:
    page = parse_html(html)
    title = page.heading or page.title or url
    body = page.markdown()
    return _item(title, body, page.description or page.first_paragraph(), url)


def feed_items(raw: bytes, url: str) -> list[Item]:
    """Items of an RSS 2.0 or Atom document; SourceError for anything else."""
    head = raw[:4096].lower()
    if b"<!doctype" in head or b"<!entity" in raw.lower():
        # Entities are how XML bombs and external-entity reads start; feeds do not need them.
        raise SourceError(
            f"The feed at {url[:120]!r} declares a DOCTYPE or entities; the crawler does not "
            "read those."
        )
    try:
        root = ElementTree.fromstring(raw)
    except ElementTree.ParseError as error:
        raise SourceError(
            f"The document at {url[:120]!r} is not a feed: its XML is broken ({error})."
        ) from None
    if root.tag == "rss" or root.find("channel") is not None:
        return [_rss_item(node, url) for node in root.iter("item")]
    if root.tag == f"{ATOM}feed":
        return [_atom_item(node, url) for node in root.iter(f"{ATOM}entry")]
    raise SourceError(
        f"The document at {url[:120]!r} is XML but neither RSS nor Atom (its root is "
        f"{root.tag[:60]!r})."
    )


def wordpress_items(raw: bytes, url: str) -> list[Item]:
    """Posts from WordPress's /wp-json/wp/v2/posts answer."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise SourceError(
            f"The answer of {url[:120]!r} is not JSON; is this a WordPress site?"
        ) from None
    if not isinstance(data, list):
        raise SourceError(
            f"The answer of {url[:120]!r} is not a list of posts; is this a WordPress REST API?"
        )
    items = []
    for post in data:
        if not isinstance(post, dict):
            continue
        title = page_text(_rendered(post.get("title")))
        items.append(
            _item(
                title or "Untitled",
                html_to_markdown(_rendered(post.get("content"))),
                page_text(_rendered(post.get("excerpt"))),
                _text(post.get("link")) or url,
                slug=_text(post.get("slug")),
                published=_text(post.get("date_gmt") or post.get("date")),
            )
        )
    return items


def _rss_item(node: Any, url: str) -> Item:
    content = node.findtext(CONTENT) or node.findtext("description") or ""
    return _item(
        page_text(node.findtext("title") or "") or "Untitled",
        html_to_markdown(content),
        page_text(node.findtext("description") or ""),
        (node.findtext("link") or node.findtext("guid") or url).strip(),
        published=(node.findtext("pubDate") or "").strip(),
    )


def _atom_item(node: Any, url: str) -> Item:
    link = next(
        (
            link.get("href")
            for link in node.findall(f"{ATOM}link")
            if link.get("rel", "alternate") == "alternate"
        ),
        None,
    )
    content = node.findtext(f"{ATOM}content") or node.findtext(f"{ATOM}summary") or ""
    return _item(
        page_text(node.findtext(f"{ATOM}title") or "") or "Untitled",
        html_to_markdown(content),
        page_text(node.findtext(f"{ATOM}summary") or ""),
        (link or url).strip(),
        published=(
            node.findtext(f"{ATOM}updated") or node.findtext(f"{ATOM}published") or ""
        ).strip(),
    )


def _item(
    title: str, body: str, excerpt: str, source_url: str, *, slug: str = "", published: str = ""
) -> Item:
    """Cut every field to what an entry may hold: the source decides nothing about our limits."""
    excerpt = " ".join(excerpt.split())
    if len(excerpt) > 300:
        excerpt = excerpt[:299].rstrip() + "…"
    return Item(
        " ".join(title.split())[: LIMITS["title"]],
        body[: LIMITS["body"]],
        excerpt,
        source_url[: LIMITS["source_url"]],
        slug[: LIMITS["slug"]],
        published[:40],
    )


def _rendered(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("rendered")
    return value if isinstance(value, str) else ""


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
