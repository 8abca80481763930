"""The CMS JSON API. Every call is checked in this order, before anything changes:
session (401), body shape (415 unless JSON, 400, 413), role on the site (403), fields (422), state (404, 409).

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

from typing import Any, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from reactor.server.requests import read_json

from .access import Access, AccessDenied, Grant
from .crawl import KINDS, MAX_LIMIT, crawl, import_items
from .entry import COLLECTIONS, STATUSES, WRITABLE, EntryError, check_field, checked_fields
from .fetch import CrawlFailed, FetchPolicy
from .guard import CrawlRefused
from .sources import SourceError
from .store import SiteStore

MAX_BODY_BYTES = 512 * 1024
Handler = Callable[[Request, Any], tuple[int, Any]]


class Conflict(Exception):
    """The entry's state forbids the change (409)."""


def api_routes(store: SiteStore, access: Access, policy_for: Callable[[Request], FetchPolicy]) -> list[Route]:
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
        try:
            return 201, store.create_entry(request.path_params["site"], fields, published=publish)
        except ValueError as error:
            raise Conflict(str(error)) from None

    def update_entry(request: Request, body: dict[str, Any]) -> tuple[int, Any]:
        who = grant(request, "write", "changing an entry")
        changes = checked_fields(body, allowed=tuple(k for k in WRITABLE if k != "slug"))
        if not changes:
            raise EntryError("", "Say what to change: send title, excerpt, body, collection or source_url.")
        entry = entry_of(request)
        if entry["status"] == "published":
            who.require("publish", "changing a published entry (it changes the public page)")
        return 200, store.update_entry(entry["site"], entry["slug"], changes)

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

    def crawl_source(request: Request, body: dict[str, Any]) -> tuple[int, Any]:
        grant(request, "write", "importing from a source")
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
        url = _own(request, url.strip())
        result = crawl(kind, url, limit, policy_for(request))
        answer: dict[str, Any] = {"site": request.path_params["site"], "kind": kind, "source": url,
                                  "found": len(result.items)}
        if dry_run:
            answer["items"] = [item.describe() for item in result.items]
            answer["skipped"] = result.skipped
            return 200, answer
        report = import_items(store, request.path_params["site"], result.items, collection)
        answer["imported"] = report["imported"]
        answer["skipped"] = result.skipped + report["skipped"]
        return 200, answer

    site = "/api/cms/sites/{site}"
    one = site + "/entries/{slug}"
    return [
        _route("/api/cms/session", "GET", session, access),
        _route(site + "/entries", "GET", list_entries, access),
        _route(site + "/entries", "POST", create_entry, access, body=True),
        _route(one, "GET", read_entry, access),
        _route(one, "PATCH", update_entry, access, body=True),
        _route(one, "DELETE", delete_entry, access),
        _route(one + "/publish", "POST", set_status("published", "publishing"), access),
        _route(one + "/unpublish", "POST", set_status("draft", "unpublishing"), access),
        _route(site + "/crawl", "POST", crawl_source, access, body=True),
    ]


def _route(path: str, method: str, handler: Handler, access: Access, *, body: bool = False) -> Route:
    async def endpoint(request: Request) -> Response:
        data = None
        try:
            await run_in_threadpool(access.username, request)  # no session: 401 before the body is read
        except AccessDenied as error:
            return _error(error.status, str(error))
        if request.method != "GET":
            # A cross-site form cannot send this content-type, so a cookie alone never writes.
            if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
                return _error(415, "Send writes as JSON with content-type: application/json.")
        if body:
            data = await read_json(request, limit=MAX_BODY_BYTES)
            if isinstance(data, Response):
                return data
        try:
            status, payload = await run_in_threadpool(handler, request, data)
        except AccessDenied as error:
            return _error(error.status, str(error))
        except EntryError as error:
            return JSONResponse({"error": str(error), "field": error.field}, 422)
        except LookupError as error:
            return _error(404, str(error))
        except Conflict as error:
            return _error(409, str(error))
        except (CrawlRefused, SourceError) as error:
            return _error(422, str(error))
        except CrawlFailed as error:
            return _error(502, str(error))
        return JSONResponse(payload, status)

    return Route(path, endpoint, methods=[method])


def _own(request: Request, url: str) -> str:
    """A path like /demo-sources/feed.xml means this server itself (still subject to the guard)."""
    if not url.startswith("/") or url.startswith("//"):
        return url
    host, port = request.scope.get("server") or ("127.0.0.1", None)
    host = f"[{host}]" if ":" in str(host) else host
    return f"http://{host}{f':{port}' if port else ''}{url}"


def _error(status: int, sentence: str) -> Response:
    return JSONResponse({"error": sentence}, status)
