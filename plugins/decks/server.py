"""The decks server plugin: the decks table, its JSON API and the printable page.

The page plugin never imports this module (it needs starlette). It serves the same
agent-tools.json the page contributes, and checks every deck against the same deck.schema.json.

    GET    /api/decks              summaries [{id, title, slides, updated_at, owner, version}];
                                   304 when If-None-Match names its ETag
    GET    /api/decks/{id}         the spec; its version in the ETag header
    PUT    /api/decks/{id}         create or replace (201 / 200); 400, 401, 403, 409, 413, 422
                                   when refused
    DELETE /api/decks/{id}         204; 401, 403, 404, 409 when refused
    GET    /decks/{id}/print       every slide as printable HTML

Every save adds one to the deck's version. A write that says which version it replaces
(`If-Match: "3"`, or `"0"` for a deck that must be new, as the page's store always does) is
refused with 409, the current version and the current deck, when another save came first: no
write is lost without its writer knowing.

The list is asked for at every page load and by every agent, and read far more often than it
changes: its ETag comes from one aggregate query (`DeckList`), a 304 answers a browser that has
it, and each process keeps the serialized list (and its gzip) of the latest ETags.

Anyone may read decks. Writing needs a session: a new deck belongs to whoever created it, and
only its owner or an operator may replace or delete it; the demo's seeded decks (no owner) are
the operators' to change.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from reactor.errors import ApiError
from reactor.server.api import (
    ETAG,
    HTML,
    REVALIDATED,
    Call,
    Reply,
    declare,
    routes_of,
    unchanged,
)
from reactor.server.auth.sessions import Auth, User, signed_in
from reactor.server.database import Database
from reactor.server.plugins.context import ServerContext
from reactor.server.plugins.records import OPERATORS
from reactor.server.requests import STALE_SCHEMA, StaleVersion
from reactor.server.runtime.assets import accepted_codings

from .deck import deck_problems, problems_sentence
from .printable import missing_html, printable_html

HERE = Path(__file__).parent
MAX_BODY_BYTES = 1024 * 1024

STEPS = [
    """
    CREATE TABLE IF NOT EXISTS decks (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        spec TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    """,
    "ALTER TABLE decks ADD COLUMN owner TEXT",  # NULL: a seeded deck, the operators' to change
    "ALTER TABLE decks ADD COLUMN version INTEGER NOT NULL DEFAULT 1",
]

DECK = json.loads((HERE / "deck.schema.json").read_text(encoding="utf-8"))
SUMMARY: dict[str, Any] = {
    "type": "object",
    "required": ["id", "title", "slides"],
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "slides": {"type": "integer"},
        "version": {"type": "integer"},
    },
}
LISTED = {
    **SUMMARY,
    "required": ["id", "title", "slides", "updated_at", "owner", "version"],
    "properties": {
        **SUMMARY["properties"],
        "updated_at": {"type": "string"},
        "owner": {"type": ["string", "null"]},
    },
}
DECK_ID = DECK["properties"]["id"]
# The body of a PUT: a deck, and when it is not one, every problem in one sentence.
DECK_BODY = {
    **DECK,
    "x-refusal": "The deck is not valid: {problems}.",
    "x-unknown": "The deck is not valid: {problems}.",
}
# The print page runs no script and loads nothing: a slide's text can only ever be text.
PRINT_HEADERS = {"content-security-policy": "default-src 'none'; style-src 'unsafe-inline'"}


class DecksServerPlugin:
    """Stores decks in the server's SQLite file and serves them to the page: its routes are the
    module-level handlers below, each app's with its own database, auth and list cache."""

    def setup(self, context: ServerContext, *, seed: bool) -> None:
        """Create the table; with `seed`, fill an empty table with the demo decks."""
        database = context.database
        database.migrate("decks", STEPS)
        if not seed:
            return
        decks = json.loads((HERE / "seed.json").read_text(encoding="utf-8"))["decks"]
        with database.transaction() as db:
            if db.execute("SELECT 1 FROM decks LIMIT 1").fetchone() is None:
                for spec in decks:
                    _write(db, spec, owner=None)

    def routes(self, context: ServerContext) -> list[Route]:
        services = DecksServices(context.database, context.auth, DeckList(context.database))
        return routes_of(list_decks, get_deck, put_deck, delete_deck, print_deck, services=services)


@dataclass(frozen=True)
class DecksServices:
    """What the handlers work with, one set per app: they take it from the call
    (`call.services`, routes_of)."""

    database: Database
    auth: Auth
    listing: DeckList


def _decks(call: Call) -> DecksServices:
    services: DecksServices = call.services
    return services


# The routes, each declared once at import; a request tries them in this order.
@declare(
    "GET",
    "/api/decks",
    "Summaries of every deck (304 when If-None-Match names its ETag)",
    replies={
        200: Reply({"type": "array", "items": LISTED}, headers=REVALIDATED),
        304: Reply(headers=REVALIDATED),
    },
)
async def list_decks(call: Call) -> Response:
    # on the loop, as a session's check is: one aggregate over narrow columns costs less
    # than a hop to a worker thread and back (0.15 ms of a 304's 1 ms: bench/proxy.py)
    listing = _decks(call).listing
    etag = listing.etag()
    headers = {"etag": etag, "cache-control": "no-cache", "vary": "Accept-Encoding"}
    if unchanged(call.request, etag):
        return Response(status_code=304, headers=headers)
    answer = listing.cached(etag)
    if answer is None:
        answer = await run_in_threadpool(listing.read)
    headers["etag"] = answer.etag  # the list read: a write may have come since
    if "gzip" in accepted_codings(call.request.headers.get("accept-encoding", "")):
        headers["content-encoding"] = "gzip"
        return Response(answer.gzipped, media_type="application/json", headers=headers)
    return Response(answer.body, media_type="application/json", headers=headers)


@declare(
    "GET",
    "/api/decks/{id}",
    "A deck's spec (its version in the ETag header)",
    path={"id": DECK_ID},
    replies={200: Reply(DECK, headers=ETAG)},
    refusals={404: "No deck has that id."},
)
async def get_deck(call: Call) -> Response:
    found = await run_in_threadpool(_read, _decks(call).database, call.path["id"])
    if found is None:
        raise _no_deck(call.path["id"])
    spec, version = found
    return JSONResponse(spec, headers={"etag": f'"{version}"'})


@declare(
    "PUT",
    "/api/decks/{id}",
    "Create a deck (201) or replace one (200): its owner or an operator",
    path={"id": DECK_ID},
    body=DECK_BODY,
    body_limit=MAX_BODY_BYTES,
    too_large=f"The deck is larger than {MAX_BODY_BYTES} bytes; split it into smaller decks.",
    replies={
        200: Reply(SUMMARY, headers=ETAG),
        201: Reply(SUMMARY, headers=ETAG),
        409: Reply(STALE_SCHEMA),
    },
    refusals={
        400: "If-Match names no deck version.",
        401: "Nobody is signed in.",
        403: "The deck is another person's.",
        422: "The deck breaks its schema, or its id is not the address's.",
    },
    who=signed_in("Sign in to save decks."),
)
async def put_deck(call: Call) -> Response:
    id, spec, user = call.path["id"], call.body, call.user
    expected = _if_match(call.request)
    problems = deck_problems(spec)
    if spec["id"] != id:
        problems.insert(
            0,
            {
                "path": "$.id",
                "message": f"the deck's id {spec['id']!r} is not the address's {id!r}"[:200],
            },
        )
    if problems:
        raise ApiError(
            422,
            problems_sentence(problems),
            field=problems[0]["path"].removeprefix("$."),
            problems=problems,
        )
    saved = await run_in_threadpool(_save, _decks(call).database, spec, user, expected)
    if saved is None:
        raise _not_yours(user, id, "replace")
    created, version = saved
    summary = {
        "id": id,
        "title": spec["title"],
        "slides": len(spec["slides"]),
        "version": version,
    }
    return JSONResponse(
        summary, status_code=201 if created else 200, headers={"etag": f'"{version}"'}
    )


@declare(
    "DELETE",
    "/api/decks/{id}",
    "Delete a deck: its owner or an operator",
    path={"id": DECK_ID},
    replies={204: Reply(), 409: Reply(STALE_SCHEMA)},
    refusals={
        400: "If-Match names no deck version.",
        401: "Nobody is signed in.",
        403: "The deck is another person's.",
        404: "No deck has that id.",
    },
    who=signed_in("Sign in to delete decks."),
)
async def delete_deck(call: Call) -> Response:
    id, user = call.path["id"], call.user
    expected = _if_match(call.request)
    deleted = await run_in_threadpool(_delete, _decks(call).database, id, user, expected)
    if deleted is None:
        raise _not_yours(user, id, "delete")
    if not deleted:
        raise _no_deck(id)
    return Response(status_code=204)


@declare(
    "GET",
    "/decks/{id}/print",
    "Every slide of a deck as one printable page",
    # a page a person opened says so
    replies={200: Reply(content=HTML), 404: Reply(content=HTML)},
)
async def print_deck(call: Call) -> Response:
    found = await run_in_threadpool(_read, _decks(call).database, call.path["id"])
    if found is None:  # a page a person opened: an HTML page, not the API's JSON
        return HTMLResponse(missing_html(call.path["id"]), status_code=404, headers=PRINT_HEADERS)
    return HTMLResponse(printable_html(found[0]), headers=PRINT_HEADERS)


LIST_FORMAT = 1  # a new summary field: one more, so that no browser keeps a list without it
LIST_STATE = (
    "SELECT COUNT(*) AS decks, COALESCE(SUM(version), 0) AS versions, "
    "COALESCE(MAX(updated_at), '') AS latest FROM decks"
)


@dataclass(frozen=True)
class ListAnswer:
    etag: str
    body: bytes
    gzipped: bytes


class DeckList:
    """GET /api/decks's ETag, and its answers of the latest ETags, kept in this process.

    The ETag is the same in every process for the same rows: it is made of the number of decks,
    the sum of their versions and the latest `updated_at` (one aggregate query). Every save adds
    one to a deck's version and stamps it later than any save before it (the processes share a
    clock, or keep theirs in step), and a deletion leaves fewer decks: a new, changed or deleted
    deck changes the ETag, whichever process wrote it. Every person sees the same list (anyone
    may read decks), so the ETag and the kept answers name nobody; should the list ever depend
    on who asks, what it depends on must go into the ETag too."""

    MAX_ANSWERS = 4  # a write between the ETag's read and the list's leaves a second one
    MAX_BYTES = 16 * 1024 * 1024  # a list larger than this is serialized at each request

    def __init__(self, database: Database) -> None:
        self.database = database
        self.answers: OrderedDict[str, ListAnswer] = OrderedDict()

    def etag(self) -> str:
        with self.database.transaction() as db:
            row = db.execute(LIST_STATE).fetchone()
        return _list_etag(row["decks"], row["versions"], row["latest"])

    def cached(self, etag: str) -> ListAnswer | None:
        answer = self.answers.get(etag)
        if answer is not None:
            self.answers.move_to_end(etag)
        return answer

    def read(self) -> ListAnswer:
        """The list read now, serialized, kept under the ETag of exactly the rows read."""
        with self.database.transaction() as db:
            rows = db.execute(
                "SELECT id, title, spec, updated_at, owner, version FROM decks ORDER BY "
                "lower(title), id"
            ).fetchall()
        summaries = [
            {
                "id": r["id"],
                "title": r["title"],
                "slides": len(json.loads(r["spec"])["slides"]),
                "updated_at": r["updated_at"],
                "owner": r["owner"],
                "version": r["version"],
            }
            for r in rows
        ]
        etag = _list_etag(
            len(rows),
            sum(r["version"] for r in rows),
            max((r["updated_at"] for r in rows), default=""),
        )
        body = json.dumps(summaries, ensure_ascii=False, separators=(",", ":")).encode()
        answer = ListAnswer(etag, body, gzip.compress(body, compresslevel=6, mtime=0))
        if len(body) <= self.MAX_BYTES:
            self.answers[etag] = answer
            self.answers.move_to_end(etag)
            while len(self.answers) > self.MAX_ANSWERS:
                self.answers.popitem(last=False)
        return answer


def _list_etag(decks: int, versions: int, latest: str) -> str:
    digest = hashlib.sha256(f"{LIST_FORMAT}:{decks}:{versions}:{latest}".encode()).hexdigest()
    # weak: the same list is sent gzipped or not, byte for byte another body
    return f'W/"{digest[:24]}"'


def _read(database: Database, id: str) -> tuple[dict[str, Any], int] | None:
    with database.transaction() as db:
        row = db.execute("SELECT spec, version FROM decks WHERE id = ?", (id,)).fetchone()
    return None if row is None else (json.loads(row["spec"]), row["version"])


def _if_match(request: Request) -> int | None:
    """The version a write replaces (`If-Match: "3"`), None when it names none (it overwrites)."""
    header = request.headers.get("if-match")
    if header is None:
        return None
    text = header.strip().removeprefix("W/").strip('"')
    if not text.isdigit() or len(text) > 18:
        raise ApiError(400, f'If-Match must name a deck version, like "3", not {header[:40]!r}.')
    return int(text)


def _stale(id: str, version: int, current: dict[str, Any] | None) -> StaleVersion:
    sentence = (
        f"The deck {id[:80]!r} was changed by someone else since this version was read; "
        f"it is now version {version}. Read it again and make the change on the current deck."
        if current is not None
        else f"The deck {id[:80]!r} was deleted by someone else since it was read."
    )
    return StaleVersion(sentence, version, current)


def _may_change(user: User, owner: str | None) -> bool:
    return OPERATORS in user.groups or (owner is not None and owner == user.username)


def _save(
    database: Database, spec: dict[str, Any], user: User, expected: int | None = None
) -> tuple[bool, int] | None:
    """Insert or replace in one transaction: (new?, version), None when `user` may not replace it;
    StaleVersion when `expected` is not the version there is."""
    with database.transaction(immediate=True) as db:
        row = db.execute(
            "SELECT owner, version, spec FROM decks WHERE id = ?", (spec["id"],)
        ).fetchone()
        if row is not None and not _may_change(user, row["owner"]):
            return None
        # 0: "must be new"
        if expected is not None and (0 if row is None else row["version"]) != expected:
            raise (
                _stale(spec["id"], 0, None)
                if row is None
                else _stale(spec["id"], row["version"], json.loads(row["spec"]))
            )
        version = 1 if row is None else row["version"] + 1
        _write(db, spec, owner=user.username if row is None else row["owner"], version=version)
    return row is None, version


def _write(db: Any, spec: dict[str, Any], *, owner: str | None, version: int = 1) -> None:
    db.execute(
        "INSERT INTO decks (id, title, spec, updated_at, owner, version) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET title = excluded.title, spec = excluded.spec, "
        "updated_at = excluded.updated_at, version = excluded.version",
        (
            spec["id"],
            spec["title"],
            json.dumps(spec),
            datetime.now(UTC).isoformat(),
            owner,
            version,
        ),
    )


def _delete(database: Database, id: str, user: User, expected: int | None = None) -> bool | None:
    """True when deleted, False when there is no such deck, None when `user` may not delete it;
    StaleVersion when `expected` is not its version."""
    with database.transaction(immediate=True) as db:
        row = db.execute("SELECT owner, version, spec FROM decks WHERE id = ?", (id,)).fetchone()
        if row is None:
            return False
        if not _may_change(user, row["owner"]):
            return None
        if expected is not None and row["version"] != expected:
            raise _stale(id, row["version"], json.loads(row["spec"]))
        db.execute("DELETE FROM decks WHERE id = ?", (id,))
    return True


def _not_yours(user: User, id: str, doing: str) -> ApiError:
    return ApiError(
        403,
        f"The deck {id[:80]!r} is not {user.username}'s; only its owner or an operator may "
        f"{doing} it.",
    )


def _no_deck(id: str) -> ApiError:
    return ApiError(404, f"There is no deck {id[:80]!r}.")
