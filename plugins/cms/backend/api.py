"""The CMS JSON API, each call declared once (reactor.server.api): the declaration checks the
session (401), then the query and the body (400, 413, 422 naming the field; a cookie write that
is not JSON is refused before, by the server's one cross-site guard); the handler checks the role
on the site (403) and the state (404, 409), and for a crawl, room to run it (429, crawl_pool.py).
A database too busy to answer is 503, not 500. The handlers are module-level, declared once at
import (`ENDPOINTS`); each takes the app's store, access and crawl pool from `call.services`
(`CmsServices`, given by `api_routes`).

    GET    /api/cms/session                              who is signed in, and their sites and roles
    GET    /api/cms/sites/{site}/entries                 summaries (?collection=pages|posts,
                                                         ?status=draft|published)
    POST   /api/cms/sites/{site}/entries                 create a draft (publish: true needs
                                                         publisher)
    GET    /api/cms/sites/{site}/entries/{slug}          one entry, with its body
    PATCH  /api/cms/sites/{site}/entries/{slug}          change fields (a published entry needs
                                                         publisher)
    DELETE /api/cms/sites/{site}/entries/{slug}?confirm={slug}   drafts only
    POST   /api/cms/sites/{site}/entries/{slug}/publish|unpublish   publisher
    POST   /api/cms/sites/{site}/crawl                   {kind, url, limit?, collection?,
                                                         dry_run?}: import drafts
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route

from reactor.errors import ApiError, OutboundFailed, OutboundRefused
from reactor.server.api import Call, Endpoint, Reply, declare, routes_of, services_of
from reactor.server.outbound.fetch import FetchPolicy
from reactor.server.requests import STALE_SCHEMA

from .access import Access, Grant
from .crawl import KINDS, MAX_LIMIT, crawl, import_items
from .crawl_pool import CrawlPool
from .entry import COLLECTIONS, LIMITS, SLUG, STATUSES
from .sources import SourceError
from .store import SiteStore, SlugTaken

MAX_BODY_BYTES = 512 * 1024
TEXT = {"type": "string"}
ENTRY = {  # an entry as the API answers it; `body` only when one entry is read
    "type": "object",
    "required": [
        "site",
        "slug",
        "collection",
        "status",
        "title",
        "excerpt",
        "source_url",
        "created_at",
        "updated_at",
        "url",
    ],
    "properties": {
        "site": TEXT,
        "slug": TEXT,
        "collection": {"enum": list(COLLECTIONS)},
        "status": {"enum": list(STATUSES)},
        "title": TEXT,
        "excerpt": TEXT,
        "body": TEXT,
        "source_url": TEXT,
        "created_at": TEXT,
        "updated_at": TEXT,
        "published_at": {"type": ["string", "null"]},
        "url": {"type": ["string", "null"]},
        "version": {"type": "integer"},
    },
}
VISIBLE = "[^ \\t\\n\\r]"  # holds something besides spaces
FIELDS: dict[
    str, dict[str, Any]
] = {  # what a write may send, and the sentence when a value breaks it
    "title": {
        "type": "string",
        "minLength": 1,
        "maxLength": LIMITS["title"],
        "pattern": VISIBLE,
        "x-refusal": f"Give the entry a title: 1 to {LIMITS['title']} characters, not only spaces.",
    },
    "slug": {
        "type": "string",
        "maxLength": LIMITS["slug"],
        "pattern": f"^{SLUG.pattern}$",
        "x-refusal": "The slug {value} is not valid: use lowercase letters, digits and single "
        f"hyphens, like 'hello-world' (at most {LIMITS['slug']}).",
    },
    "collection": {
        "enum": list(COLLECTIONS),
        "x-refusal": "The collection {value} does not exist; use 'pages' or 'posts'.",
    },
    "excerpt": {
        "type": "string",
        "maxLength": LIMITS["excerpt"],
        "x-refusal": f"The excerpt is text of at most {LIMITS['excerpt']} characters.",
    },
    "body": {
        "type": "string",
        "maxLength": LIMITS["body"],
        "x-refusal": f"The body is text of at most {LIMITS['body']} characters.",
    },
    "source_url": {
        "type": "string",
        "maxLength": LIMITS["source_url"],
        "anyOf": [{"const": ""}, {"pattern": "^https?://"}],
        "x-refusal": f"The source URL {{value}} must be empty or start with http:// or https:// "
        f"(at most {LIMITS['source_url']} characters).",
    },
}
CREATE = {
    "type": "object",
    "required": ["title"],
    "additionalProperties": False,
    "properties": {
        **FIELDS,
        "publish": {"type": "boolean", "x-refusal": "publish must be true or false."},
    },
    "x-unknown": "{field} is not a field you can set here; use collection, title, slug, excerpt, "
    "body, source_url, publish.",
}
CHANGEABLE = [k for k in FIELDS if k != "slug"]
CHANGE = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **{k: FIELDS[k] for k in CHANGEABLE},
        "version": {
            "type": "integer",
            "minimum": 1,
            "description": "the version the change is based on",
            "x-refusal": "version must be the entry's version you read, a whole number from 1.",
        },
    },
    "anyOf": [{"required": [k]} for k in CHANGEABLE],
    "x-unknown": "{field} is not a field you can change here; send title, excerpt, body, "
    "collection or source_url.",
    "x-refusal": "Say what to change: send title, excerpt, body, collection or source_url.",
}
CRAWL = {
    "type": "object",
    "required": ["kind", "url"],
    "additionalProperties": False,
    "properties": {
        "kind": {
            "enum": list(KINDS),
            "x-refusal": "The kind {value} is not one the crawler reads; use blog, feed or "
            "wordpress.",
        },
        "url": {
            "type": "string",
            "maxLength": 2000,
            "anyOf": [{"pattern": "^https?://"}, {"pattern": "^ */[^/]"}],
            "x-refusal": "Say what to crawl: send the source's address as `url` (http://, "
            "https://, or a path of this server).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": 5,
            "x-refusal": f"The limit {{value}} must be a whole number from 1 to {MAX_LIMIT}.",
        },
        "collection": {**FIELDS["collection"], "default": "posts"},
        "dry_run": {
            "type": "boolean",
            "default": False,
            "x-refusal": "dry_run must be true or false.",
        },
    },
    "x-unknown": "{field} is not a crawl field; use kind, url, limit, collection, dry_run.",
}
CRAWLED = {
    "type": "object",
    "required": ["site", "kind", "source", "found", "skipped"],
    "properties": {
        "site": TEXT,
        "kind": {"enum": list(KINDS)},
        "source": TEXT,
        "found": {"type": "integer"},
        "imported": {"type": "array"},
        "items": {"type": "array"},
        "skipped": {"type": "array"},
    },
}
SESSION = {
    "type": "object",
    "required": ["user", "sites"],
    "properties": {
        "user": {"type": "object", "required": ["username"], "properties": {"username": TEXT}},
        "sites": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "title", "role"],
                "properties": {"id": TEXT, "title": TEXT, "role": TEXT},
            },
        },
    },
}
LISTED = {
    "type": "object",
    "required": ["site", "role", "entries"],
    "properties": {"site": TEXT, "role": TEXT, "entries": {"type": "array", "items": ENTRY}},
}
DELETED = {
    "type": "object",
    "required": ["deleted", "site"],
    "properties": {"deleted": TEXT, "site": TEXT},
}
SIGNED_IN = {401: "Nobody is signed in."}
READ = {**SIGNED_IN, 403: "The user has no role on the site."}
WRITE = {**SIGNED_IN, 403: "The user's role on the site does not allow this."}
ONE = {404: "The site has no entry with that slug."}
# What reading a source can fail with, as the route answers it.
CRAWL_FAILURES: dict[type[Exception], int] = {
    OutboundRefused: 422,
    SourceError: 422,
    OutboundFailed: 502,
    SlugTaken: 409,
}


@dataclass(frozen=True)
class CrawlJob:
    """A handler's answer still to be worked out on the crawl pool: it reads the network."""

    username: str
    run: Callable[[], Any]


Handler = Callable[[Call], Any]


@dataclass(frozen=True)
class CmsServices:
    """What the API's handlers work with, one set per app: they take it from the call
    (`call.services`, routes_of)."""

    store: SiteStore
    access: Access
    policy_for: Callable[[Request], FetchPolicy]
    crawls: CrawlPool


def api_routes(
    store: SiteStore,
    access: Access,
    policy_for: Callable[[Request], FetchPolicy],
    crawls: CrawlPool,
) -> list[Route]:
    return routes_of(*ENDPOINTS, services=CmsServices(store, access, policy_for, crawls))


def _cms(call: Call) -> CmsServices:
    services: CmsServices = call.services
    return services


def _username(request: Request) -> str:
    """The declaration's `who`: the signed-in user (401 before the body is read)."""
    services: CmsServices = services_of(request)
    return services.access.username(request)


def grant(call: Call, action: str, doing: str) -> Grant:
    return _cms(call).access.grant(call.request, call.path["site"], action, doing)


def entry_of(call: Call) -> dict[str, Any]:
    site, slug = call.path["site"], call.path["slug"]
    entry = _cms(call).store.get_entry(site, slug)
    if entry is None:
        raise ApiError(
            404,
            f"There is no entry {slug[:80]!r} on site {site[:80]!r}; list them with GET "
            ".../entries.",
        )
    return entry


def session(call: Call) -> Any:
    return {"user": {"username": call.user}, "sites": _cms(call).store.sites_of(call.user)}


def list_entries(call: Call) -> Any:
    role = grant(call, "read", "reading entries").role
    entries = _cms(call).store.list_entries(
        call.path["site"],
        collection=call.query.get("collection"),
        status=call.query.get("status"),
    )
    return {"site": call.path["site"], "role": role, "entries": entries}


def read_entry(call: Call) -> Any:
    grant(call, "read", "reading an entry")
    return entry_of(call)


def create_entry(call: Call) -> Any:
    who = grant(call, "write", "creating an entry")
    fields = dict(call.body)
    publish = fields.pop("publish", False)
    if publish:
        who.require("publish", "creating an entry as published")
    return _cms(call).store.create_entry(call.path["site"], fields, published=publish)


def update_entry(call: Call) -> Any:
    who = grant(call, "write", "changing an entry")
    changes = dict(call.body)
    version = changes.pop("version", None)
    entry = entry_of(call)
    if entry["status"] == "published":
        who.require("publish", "changing a published entry (it changes the public page)")
    return _cms(call).store.update_entry(entry["site"], entry["slug"], changes, version=version)


def set_published(call: Call) -> Any:
    return _set_status(call, "published", "publishing")


def set_draft(call: Call) -> Any:
    return _set_status(call, "draft", "unpublishing")


def _set_status(call: Call, status: str, doing: str) -> Any:
    grant(call, "publish", doing)
    entry = entry_of(call)
    if entry["status"] == status:
        return entry
    return _cms(call).store.set_status(entry["site"], entry["slug"], status)


def delete_entry(call: Call) -> Any:
    grant(call, "write", "deleting an entry")
    slug = call.path["slug"]
    if call.query["confirm"] != slug:
        raise ApiError(
            422,
            f"Deleting needs confirmation: send ?confirm={slug[:80]} with the exact slug.",
            field="confirm",
        )
    entry = entry_of(call)
    if entry["status"] == "published":
        raise ApiError(
            409, f"The entry {slug!r} is published; unpublish it first, then delete the draft."
        )
    _cms(call).store.delete_entry(entry["site"], slug)
    return {"deleted": slug, "site": entry["site"]}


def crawl_source(call: Call) -> CrawlJob:
    who = grant(call, "write", "importing from a source")
    body = call.body
    kind, limit = body["kind"], body.get("limit", 5)
    collection, dry_run = body.get("collection", "posts"), body.get("dry_run", False)
    url, policy = _own(call.request, body["url"].strip()), _cms(call).policy_for(call.request)

    def read_and_import() -> Any:
        result = crawl(kind, url, limit, policy)
        answer: dict[str, Any] = {
            "site": who.site,
            "kind": kind,
            "source": url,
            "found": len(result.items),
        }
        if dry_run:
            answer["items"] = [item.describe() for item in result.items]
            answer["skipped"] = result.skipped
            return answer
        report = import_items(_cms(call).store, who.site, result.items, collection)
        answer["imported"] = report["imported"]
        answer["skipped"] = result.skipped + report["skipped"]
        return answer

    return CrawlJob(who.username, read_and_import)


def route(
    path: str,
    method: str,
    handler: Handler,
    summary: str,
    replies: dict[int, Reply],
    **declared: Any,
) -> Endpoint:
    """One API call: the session checked first (401, before the body is read), then its
    declaration."""

    async def run(call: Call) -> Any:
        try:
            answer = await run_in_threadpool(handler, call)
            # checked on the shared pool; read on the crawl pool
            if isinstance(answer, CrawlJob):
                answer = await _cms(call).crawls.run(answer.username, answer.run)
        except tuple(CRAWL_FAILURES) as error:
            status = next(code for kind, code in CRAWL_FAILURES.items() if isinstance(error, kind))
            raise ApiError(status, str(error)) from None
        return answer

    run.__name__ = handler.__name__
    return declare(
        method,
        path,
        summary,
        replies=replies,
        who=_username,
        body_limit=MAX_BODY_BYTES,
        **declared,
    )(run)


SITE_PATH = "/api/cms/sites/{site}"
ENTRY_PATH = SITE_PATH + "/entries/{slug}"
# The API, each call declared once; a request tries them in this order.
ENDPOINTS = (
    route(
        "/api/cms/session",
        "GET",
        session,
        "Who is signed in, and their sites and roles",
        {200: Reply(SESSION)},
        refusals=SIGNED_IN,
    ),
    route(
        SITE_PATH + "/entries",
        "GET",
        list_entries,
        "A site's entries (viewer)",
        {200: Reply(LISTED)},
        query={"collection": {"enum": list(COLLECTIONS)}, "status": {"enum": list(STATUSES)}},
        refusals=READ,
    ),
    route(
        SITE_PATH + "/entries",
        "POST",
        create_entry,
        "Create a draft (editor); `publish: true` needs a publisher",
        {201: Reply(ENTRY)},
        body=CREATE,
        refusals={**WRITE, 409: "The slug is used on the site already."},
    ),
    route(
        ENTRY_PATH,
        "GET",
        read_entry,
        "One entry, with its body (viewer)",
        {200: Reply(ENTRY)},
        refusals={**READ, **ONE},
    ),
    route(
        ENTRY_PATH,
        "PATCH",
        update_entry,
        "Change an entry's fields (editor; a published entry: publisher); 409 when "
        "`version` is not the current",
        {200: Reply(ENTRY), 409: Reply(STALE_SCHEMA)},  # the entry as it is now, to read and redo
        body=CHANGE,
        refusals={**WRITE, **ONE},
    ),
    route(
        ENTRY_PATH,
        "DELETE",
        delete_entry,
        "Delete a draft (editor); ?confirm= the exact slug",
        {200: Reply(DELETED)},
        query={"confirm": TEXT},
        required_query=("confirm",),
        refusals={
            **WRITE,
            **ONE,
            409: "The entry is published.",
            422: "?confirm= is not the entry's slug.",
        },
    ),
    route(
        ENTRY_PATH + "/publish",
        "POST",
        set_published,
        "Publish an entry (publisher)",
        {200: Reply(ENTRY)},
        refusals={**WRITE, **ONE},
    ),
    route(
        ENTRY_PATH + "/unpublish",
        "POST",
        set_draft,
        "Take an entry back to draft (publisher)",
        {200: Reply(ENTRY)},
        refusals={**WRITE, **ONE},
    ),
    route(
        SITE_PATH + "/crawl",
        "POST",
        crawl_source,
        "Import a blog, feed or WordPress site as drafts (editor); 429 with Retry-After when "
        "the user or the server runs as many crawls as it may",
        {200: Reply(CRAWLED)},
        body=CRAWL,
        refusals={
            **WRITE,
            409: "An imported slug was taken meanwhile.",
            422: "The address is one the crawler may not read, or the source is not of its kind.",
            429: "The user or the server runs as many crawls as it may.",
            502: "The source could not be read.",
        },
    ),
)


def _own(request: Request, url: str) -> str:
    """A path like /demo-sources/feed.xml means this server itself (still subject to the guard)."""
    if not url.startswith("/") or url.startswith("//"):
        return url
    host, port = request.scope.get("server") or ("127.0.0.1", None)
    host = f"[{host}]" if ":" in str(host) else host
    return f"http://{host}{f':{port}' if port else ''}{url}"
