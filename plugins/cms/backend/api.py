"""The CMS JSON API. Every call is checked in this order, before anything changes:
session (401), body shape (400, 413; a cookie write that is not JSON is refused before, by the
server's one cross-site guard), role on the site (403), fields (422), state (404, 409),
and for a crawl, room to run it (429, crawl_pool.py). A database too busy to answer is 503, not 500.

    GET    /api/cms/session                              who is signed in, and their sites and roles
    GET    /api/cms/sites/{site}/entries                 summaries (?collection=pages|posts, ?status=draft|published)
    POST   /api/cms/sites/{site}/entries                 create a draft (publish: true needs publisher)
    GET    /api/cms/sites/{site}/entries/{slug}          one entry, with its body
    PATCH  /api/cms/sites/{site}/entries/{slug}          change fields (a published entry needs publisher)
    DELETE /api/cms/sites/{site}/entries/{slug}?confirm={slug}   drafts only
    POST   /api/cms/sites/{site}/entries/{slug}/publish|unpublish   publisher
    POST   /api/cms/sites/{site}/crawl                   {kind, url, limit?, collection?, dry_run?}: import drafts
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from reactor.errors import DatabaseBusy
from reactor.server.openapi import operation
from reactor.server.requests import STALE_SCHEMA, StaleVersion, error_response, read_json, stale_response

from .access import Access, AccessDenied, Grant
from .crawl import KINDS, MAX_LIMIT, crawl, import_items
from .crawl_pool import CrawlPool, CrawlsBusy
from .entry import COLLECTIONS, LIMITS, SLUG, STATUSES, WRITABLE, EntryError, check_field, checked_fields
from .fetch import CrawlFailed, FetchPolicy
from .guard import CrawlRefused
from .sources import SourceError
from .store import SiteStore, SlugTaken

MAX_BODY_BYTES = 512 * 1024
TEXT = {"type": "string"}
ENTRY = {  # an entry as the API answers it; `body` only when one entry is read
    "type": "object",
    "required": ["site", "slug", "collection", "status", "title", "excerpt", "source_url", "created_at", "updated_at", "url"],
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
FIELDS = {  # what a write may send; entry.py checks each field and names the one refused
    "title": {"type": "string", "maxLength": LIMITS["title"]},
    "slug": {"type": "string", "maxLength": LIMITS["slug"], "pattern": f"^{SLUG.pattern}$"},
    "collection": {"enum": list(COLLECTIONS)},
    "excerpt": {"type": "string", "maxLength": LIMITS["excerpt"]},
    "body": {"type": "string", "maxLength": LIMITS["body"]},
    "source_url": {"type": "string", "maxLength": LIMITS["source_url"], "pattern": "^(https?://|$)"},
}
CREATE = {
    "type": "object",
    "required": ["title"],
    "additionalProperties": False,
    "properties": {**FIELDS, "publish": {"type": "boolean"}},
}
CHANGE = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        **{k: v for k, v in FIELDS.items() if k != "slug"},
        "version": {"type": "integer", "minimum": 1, "description": "the version the change is based on"},
    },
}
CRAWL = {
    "type": "object",
    "required": ["kind", "url"],
    "additionalProperties": False,
    "properties": {
        "kind": {"enum": list(KINDS)},
        "url": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
        "collection": {"enum": list(COLLECTIONS)},
        "dry_run": {"type": "boolean"},
    },
}
CRAWLED = {
    "type": "object",
    "required": ["site", "kind", "source", "found", "skipped"],
    "properties": {
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
        "user": {"type": "object", "required": ["username"]},
        "sites": {"type": "array", "items": {"type": "object", "required": ["id", "title", "role"]}},
    },
}
LISTED = {"type": "object", "required": ["site", "role", "entries"], "properties": {"entries": {"type": "array", "items": ENTRY}}}
BUSY_RETRY_SECONDS = 1


class Conflict(Exception):
    """The entry's state forbids the change (409)."""


@dataclass(frozen=True)
class CrawlJob:
    """A handler's answer still to be worked out on the crawl pool: it reads the network."""

    username: str
    run: Callable[[], tuple[int, Any]]


Handler = Callable[[Request, Any], tuple[int, Any] | CrawlJob]


def api_routes(store: SiteStore, access: Access, policy_for: Callable[[Request], FetchPolicy], crawls: CrawlPool) -> list[Route]:
    def grant(request: Request, action: str, doing: str) -> Grant:
        return access.grant(request, request.path_params["site"], action, doing)

    def entry_of(request: Request) -> dict[str, Any]:
        site, slug = request.path_params["site"], request.path_params["slug"]
        entry = store.get_entry(site, slug)
        if entry is None:
            raise LookupError(f"There is no entry {slug[:80]!r} on site {site!r}; list them with GET .../entries.")
        return entry

    def session(request: Request, _: Any) -> tuple[int, Any]:
        username = access.username(request)
        return 200, {"user": {"username": username}, "sites": store.sites_of(username)}

    def list_entries(request: Request, _: Any) -> tuple[int, Any]:
        site = request.path_params["site"]
        role = grant(request, "read", "reading entries").role
        query = request.query_params
        collection, status = query.get("collection") or None, query.get("status") or None
        if collection is not None and collection not in COLLECTIONS:
            raise EntryError("collection", f"The collection {collection[:40]!r} does not exist; use 'pages' or 'posts'.")
        if status is not None and status not in STATUSES:
            raise EntryError("status", f"The status {status[:40]!r} does not exist; use 'draft' or 'published'.")
        entries = store.list_entries(site, collection=collection, status=status)
        return 200, {"site": site, "role": role, "entries": entries}

    def read_entry(request: Request, _: Any) -> tuple[int, Any]:
        grant(request, "read", "reading an entry")
        return 200, entry_of(request)

    def create_entry(request: Request, body: dict[str, Any]) -> tuple[int, Any]:
        who = grant(request, "write", "creating an entry")
        fields = checked_fields(body, allowed=(*WRITABLE, "publish"), required=("title",))
        publish = fields.pop("publish", False)
        if publish:
            who.require("publish", "creating an entry as published")
        return 201, store.create_entry(request.path_params["site"], fields, published=publish)

    def update_entry(request: Request, body: dict[str, Any]) -> tuple[int, Any]:
        who = grant(request, "write", "changing an entry")
        body = dict(body)
        version = body.pop("version", None)
        if version is not None and (type(version) is not int or version < 1):
            raise EntryError("version", "version must be the entry's version you read, a whole number from 1.")
        changes = checked_fields(body, allowed=tuple(k for k in WRITABLE if k != "slug"))
        if not changes:
            raise EntryError("", "Say what to change: send title, excerpt, body, collection or source_url.")
        entry = entry_of(request)
        if entry["status"] == "published":
            who.require("publish", "changing a published entry (it changes the public page)")
        return 200, store.update_entry(entry["site"], entry["slug"], changes, version=version)

    def set_status(status: str, doing: str) -> Handler:
        def change(request: Request, _: Any) -> tuple[int, Any]:
            grant(request, "publish", doing)
            entry = entry_of(request)
            if entry["status"] == status:
                return 200, entry
            return 200, store.set_status(entry["site"], entry["slug"], status)

        return change

    def delete_entry(request: Request, _: Any) -> tuple[int, Any]:
        grant(request, "write", "deleting an entry")
        slug = request.path_params["slug"]
        if request.query_params.get("confirm") != slug:
            raise EntryError("confirm", f"Deleting needs confirmation: send ?confirm={slug[:80]} with the exact slug.")
        entry = entry_of(request)
        if entry["status"] == "published":
            raise Conflict(f"The entry {slug!r} is published; unpublish it first, then delete the draft.")
        store.delete_entry(entry["site"], slug)
        return 200, {"deleted": slug, "site": entry["site"]}

    def crawl_source(request: Request, body: dict[str, Any]) -> CrawlJob:
        who = grant(request, "write", "importing from a source")
        unknown = sorted(set(body) - {"kind", "url", "limit", "collection", "dry_run"})
        if unknown:
            raise EntryError(unknown[0], f"{unknown[0][:40]!r} is not a crawl field; use kind, url, limit, collection, dry_run.")
        kind, url, limit = body.get("kind"), body.get("url"), body.get("limit", 5)
        if kind not in KINDS:
            raise EntryError("kind", f"The kind {str(kind)[:40]!r} is not one the crawler reads; use blog, feed or wordpress.")
        if not isinstance(url, str) or not url.strip():
            raise EntryError("url", "Say what to crawl: send the source's address as `url`.")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise EntryError("limit", f"The limit {str(limit)[:20]!r} must be a whole number from 1 to {MAX_LIMIT}.")
        collection = check_field("collection", body.get("collection", "posts"))
        dry_run = check_field("dry_run", body.get("dry_run", False))
        url, policy = _own(request, url.strip()), policy_for(request)

        def read_and_import() -> tuple[int, Any]:
            result = crawl(kind, url, limit, policy)
            answer: dict[str, Any] = {"site": who.site, "kind": kind, "source": url, "found": len(result.items)}
            if dry_run:
                answer["items"] = [item.describe() for item in result.items]
                answer["skipped"] = result.skipped
                return 200, answer
            report = import_items(store, who.site, result.items, collection)
            answer["imported"] = report["imported"]
            answer["skipped"] = result.skipped + report["skipped"]
            return 200, answer

        return CrawlJob(who.username, read_and_import)

    site = "/api/cms/sites/{site}"
    one = site + "/entries/{slug}"
    return [
        _route("/api/cms/session", "GET", session, access, crawls, "Who is signed in, and their sites and roles", {200: SESSION}),
        _route(
            site + "/entries",
            "GET",
            list_entries,
            access,
            crawls,
            "A site's entries (viewer)",
            {200: LISTED},
            query={"collection": {"enum": list(COLLECTIONS)}, "status": {"enum": list(STATUSES)}},
        ),
        _route(
            site + "/entries",
            "POST",
            create_entry,
            access,
            crawls,
            "Create a draft (editor); `publish: true` needs a publisher",
            {201: ENTRY},
            body=CREATE,
        ),
        _route(one, "GET", read_entry, access, crawls, "One entry, with its body (viewer)", {200: ENTRY}),
        _route(
            one,
            "PATCH",
            update_entry,
            access,
            crawls,
            "Change an entry's fields (editor; a published entry: publisher); 409 when `version` is not the current",
            {200: ENTRY, 409: STALE_SCHEMA},
            body=CHANGE,
        ),
        _route(
            one,
            "DELETE",
            delete_entry,
            access,
            crawls,
            "Delete a draft (editor); ?confirm= the exact slug",
            {200: {"type": "object", "required": ["deleted", "site"]}},
            query={"confirm": TEXT},
            required=("confirm",),
        ),
        _route(
            one + "/publish",
            "POST",
            set_status("published", "publishing"),
            access,
            crawls,
            "Publish an entry (publisher)",
            {200: ENTRY},
        ),
        _route(
            one + "/unpublish",
            "POST",
            set_status("draft", "unpublishing"),
            access,
            crawls,
            "Take an entry back to draft (publisher)",
            {200: ENTRY},
        ),
        _route(
            site + "/crawl",
            "POST",
            crawl_source,
            access,
            crawls,
            "Import a blog, feed or WordPress site as drafts (editor); 429 with Retry-After when the "
            "user or the server runs as many crawls as it may",
            {200: CRAWLED},
            body=CRAWL,
        ),
    ]


def _route(
    path: str,
    method: str,
    handler: Handler,
    access: Access,
    crawls: CrawlPool,
    summary: str,
    responses: dict[int, Any],
    *,
    body: dict[str, Any] | None = None,
    query: dict[str, Any] | None = None,
    required: tuple[str, ...] = (),
) -> Route:
    """The route of one API call: `summary`, `responses`, `body` and `query` describe it (OpenAPI)."""

    async def respond(request: Request) -> Response:
        await run_in_threadpool(access.username, request)  # no session: 401 before the body is read
        data = None
        if body is not None:
            data = await read_json(request, limit=MAX_BODY_BYTES)
            if isinstance(data, Response):
                return data
        answer = await run_in_threadpool(handler, request, data)
        if isinstance(answer, CrawlJob):  # checked on the shared pool; read on the crawl pool
            answer = await crawls.run(answer.username, answer.run)
        status, payload = answer
        return JSONResponse(payload, status)

    @operation(summary, responses=responses, body=body, query=query, required_query=required)
    async def endpoint(request: Request) -> Response:
        try:
            return await respond(request)
        except AccessDenied as error:
            return error_response(error.status, str(error))
        except EntryError as error:
            return JSONResponse({"error": str(error), "field": error.field}, 422)
        except LookupError as error:
            return error_response(404, str(error))
        except StaleVersion as error:
            return stale_response(error)
        except (Conflict, SlugTaken) as error:
            return error_response(409, str(error))
        except CrawlsBusy as error:
            return error_response(429, str(error), retry_after=error.retry_after)
        except (CrawlRefused, SourceError) as error:
            return error_response(422, str(error))
        except CrawlFailed as error:
            return error_response(502, str(error))
        except DatabaseBusy:
            sentence = "The database is busy with other changes; try again in a moment."
            return error_response(503, sentence, retry_after=BUSY_RETRY_SECONDS)

    return Route(path, endpoint, methods=[method])


def _own(request: Request, url: str) -> str:
    """A path like /demo-sources/feed.xml means this server itself (still subject to the guard)."""
    if not url.startswith("/") or url.startswith("//"):
        return url
    host, port = request.scope.get("server") or ("127.0.0.1", None)
    host = f"[{host}]" if ":" in str(host) else host
    return f"http://{host}{f':{port}' if port else ''}{url}"
