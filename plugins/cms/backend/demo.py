"""The demo: two sites with a few entries and roles, and the public sources the demo crawls,
served by this server under /demo-sources/ (a blog, an RSS and an Atom feed, a WordPress API).
One demo post carries hostile markup, to show it arrives as text."""

from __future__ import annotations

import json
from html import escape

from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from reactor.server.api import HTML, Call, Reply, declare, routes_of

from .store import SiteStore

SITES = [("acme", "Acme Corp"), ("globex", "Globex")]
ROLES = [
    ("acme", "ada", "publisher"),
    ("globex", "ada", "publisher"),
    ("acme", "bob", "editor"),
    ("globex", "bob", "viewer"),
]
ENTRIES = [
    (
        "acme",
        {
            "slug": "about",
            "collection": "pages",
            "title": "About Acme",
            "excerpt": "Who we are.",
            "body": "Acme makes **everything**.\n\n- Anvils\n- Rockets",
        },
        True,
    ),
    (
        "acme",
        {
            "slug": "welcome",
            "collection": "posts",
            "title": "Welcome to the Acme blog",
            "excerpt": "Our first post.",
            "body": "Hello, world. Read [about us](/sites/acme/about).",
        },
        True,
    ),
    (
        "acme",
        {
            "slug": "roadmap",
            "collection": "posts",
            "title": "Roadmap (draft)",
            "excerpt": "Not public yet.",
            "body": "Next quarter: *more anvils*.",
        },
        False,
    ),
    (
        "globex",
        {
            "slug": "about",
            "collection": "pages",
            "title": "About Globex",
            "excerpt": "Globex, worldwide.",
            "body": "We build the future, quietly.",
        },
        True,
    ),
    (
        "globex",
        {
            "slug": "launch-plan",
            "collection": "posts",
            "title": "Launch plan",
            "excerpt": "Internal.",
            "body": "Draft: launch on Monday.",
        },
        False,
    ),
]

POSTS = [
    (
        "hello-from-the-demo-blog",
        "Hello from the demo blog",
        "2025-01-06T09:00:00",
        "The first post of a blog the demo crawls.",
        "<p>This blog is served by the reactor server itself, under "
        "<code>/demo-sources/</code>.</p>"
        "<h2>Why</h2><ul><li>No network needed</li><li>Same answers every time</li></ul>",
    ),
    (
        "shipping-the-crawler",
        "Shipping the crawler",
        "2025-01-13T09:00:00",
        "How the crawler stays out of private networks.",
        "<p>Every address is checked <strong>before</strong> the crawler connects, and again "
        "after each redirect.</p>",
    ),
    (
        "markup-stays-text",
        "Markup <b>stays</b> text",
        "2025-01-20T09:00:00",
        "A post with hostile markup: <img src=x onerror=alert(1)>",
        '<p>Before.</p><script>window.pwned = 1</script><img src=x onerror="window.pwned=1">'
        '<p>Shown as text: &lt;img src=x onerror="window.pwned=1"&gt; and '
        "&lt;script&gt;alert(1)&lt;/script&gt;</p>",
    ),
]


def seed_demo(store: SiteStore) -> None:
    """Fill empty CMS tables with the demo sites, roles and entries."""
    if not store.is_empty():
        return
    for id, title in SITES:
        store.add_site(id, title)
    for site, username, role in ROLES:
        store.set_role(site, username, role)
    for site, fields, published in ENTRIES:
        store.create_entry(site, fields, published=published)


RENDERED = {
    "type": "object",
    "required": ["rendered"],
    "properties": {"rendered": {"type": "string"}},
}
WORDPRESS_POST = {
    "type": "object",
    "required": ["id", "slug", "date_gmt", "status", "type", "link", "title", "excerpt", "content"],
    "properties": {
        "id": {"type": "integer"},
        "slug": {"type": "string"},
        "date_gmt": {"type": "string"},
        "status": {"type": "string"},
        "type": {"type": "string"},
        "link": {"type": "string"},
        "title": RENDERED,
        "excerpt": RENDERED,
        "content": RENDERED,
    },
}
# The demo's pages run no script and load nothing: what a crawl copies can only ever be text.
SOURCE_HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
    "form-action 'none'"
}


def demo_source_routes() -> list[Route]:
    """The demo's sources: they serve the module's fixed posts, so they need no services."""
    return routes_of(blog_index, blog_post, rss, atom, wordpress)


PAGE = Reply(content=HTML)


# The sources, each declared once at import; a request tries them in this order.
@declare(
    "GET",
    "/demo-sources/blog/",
    "The demo blog's index page (a crawl source)",
    replies={200: PAGE},
)
async def blog_index(call: Call) -> Response:
    articles = "".join(
        f'<article><h2><a href="posts/{slug}.html">{escape(title)}</a></h2>'
        f"<p>{escape(summary)}</p></article>"
        for slug, title, _, summary, _ in POSTS
    )
    return _html("The demo blog", f"<h1>The demo blog</h1>{articles}")


@declare(
    "GET",
    "/demo-sources/blog/posts/{slug}.html",
    "A post of the demo blog",
    replies={200: PAGE, 404: PAGE},
)
async def blog_post(call: Call) -> Response:
    post = next((p for p in POSTS if p[0] == call.path["slug"]), None)
    if post is None:
        return _html("Not found", "<p>No such post.</p>", 404)
    slug, title, date, summary, body = post
    return _html(
        title,
        f"<article><h1>{escape(title)}</h1><time>{date}</time>{body}</article>",
        description=summary,
    )


@declare(
    "GET",
    "/demo-sources/feed.xml",
    "The demo blog as RSS",
    replies={200: Reply(content={"application/rss+xml": {"schema": {"type": "string"}}})},
)
async def rss(call: Call) -> Response:
    base = str(call.request.base_url).rstrip("/")
    items = "".join(
        f"<item><title>{escape(title)}</title><link>{base}/demo-sources/blog/posts/{slug}.html</link>"
        f"<guid>{base}/demo-sources/blog/posts/{slug}.html</guid><pubDate>{date}</pubDate>"
        f"<description>{escape(summary)}</description>"
        f"<content:encoded>{escape(body)}</content:encoded></item>"
        for slug, title, date, summary, body in POSTS
    )
    document = (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0" '
        'xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel>'
        "<title>The demo "
        f"blog</title><link>{base}/demo-sources/blog/</link>{items}</channel></rss>"
    )
    return Response(document, media_type="application/rss+xml")


@declare(
    "GET",
    "/demo-sources/atom.xml",
    "The demo blog as Atom",
    replies={200: Reply(content={"application/atom+xml": {"schema": {"type": "string"}}})},
)
async def atom(call: Call) -> Response:
    base = str(call.request.base_url).rstrip("/")
    entries = "".join(
        f"<entry><title>{escape(title)}</title><link "
        f'href="{base}/demo-sources/blog/posts/{slug}.html"/>'
        f"<id>{base}/demo-sources/blog/posts/{slug}.html</id><updated>{date}Z</updated>"
        f"<summary>{escape(summary)}</summary><content "
        f'type="html">{escape(body)}</content></entry>'
        for slug, title, date, summary, body in POSTS
    )
    document = (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>The demo blog</title>{entries}</feed>"
    )
    return Response(document, media_type="application/atom+xml")


@declare(
    "GET",
    "/demo-sources/wp-json/wp/v2/posts",
    "The demo blog as WordPress's REST API answers it",
    query={"per_page": {"type": "integer", "minimum": 1, "maximum": 100}},
    replies={200: Reply({"type": "array", "items": WORDPRESS_POST})},
)
async def wordpress(call: Call) -> Response:
    base = str(call.request.base_url).rstrip("/")
    per_page = call.query.get("per_page", 10)
    posts = [
        {
            "id": number,
            "slug": slug,
            "date_gmt": date,
            "status": "publish",
            "type": "post",
            "link": f"{base}/demo-sources/wp/{slug}/",
            "title": {"rendered": escape(title)},
            "excerpt": {"rendered": f"<p>{escape(summary)}</p>"},
            "content": {"rendered": body, "protected": False},
        }
        for number, (slug, title, date, summary, body) in enumerate(POSTS, start=1)
    ]
    return Response(json.dumps(posts[:per_page]), media_type="application/json")


def _html(title: str, body: str, status: int = 200, *, description: str = "") -> Response:
    meta = f'<meta name="description" content="{escape(description)}">' if description else ""
    return HTMLResponse(
        "<!doctype html><html><head><meta "
        f'charset="utf-8"><title>{escape(title)}</title>{meta}</head>'
        f'<body><nav><a href="/demo-sources/blog/">Demo blog</a></nav><main>{body}</main>'
        "<footer>Demo content</footer></body></html>",
        status,
        headers=SOURCE_HEADERS,
    )
