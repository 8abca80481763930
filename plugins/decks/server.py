"""The decks server plugin: the decks table, its JSON API and the printable page.

The page plugin never imports this module (it needs starlette). It serves the same
agent-tools.json the page contributes, and checks every deck against the same deck.schema.json.

    GET    /api/decks              summaries [{id, title, slides, updated_at}]
    GET    /api/decks/{id}         the spec
    PUT    /api/decks/{id}         create or replace (201 / 200); 400, 413, 422 when refused
    DELETE /api/decks/{id}         204; 404 when there is no such deck
    GET    /decks/{id}/print       every slide as printable HTML
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from reactor import load_agent_tools
from reactor.server.context import ServerContext
from reactor.server.database import Database

from .deck import deck_problems, problems_sentence
from .printable import printable_html

HERE = Path(__file__).parent
MAX_BODY_BYTES = 1024 * 1024

SCHEMA = """
CREATE TABLE IF NOT EXISTS decks (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    spec TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
"""

# The print page runs no script and loads nothing: a slide's text can only ever be text.
PRINT_HEADERS = {"content-security-policy": "default-src 'none'; style-src 'unsafe-inline'"}


class DecksServerPlugin:
    """Stores decks in the server's SQLite file and serves them to the page."""

    name = "decks"
    description = "Slide decks: stored on the server, edited from the page, printable."
    # What the page loads: the Python plugin, its renderer and styles, and where the API is.
    page_plugin = "reactor_plugins.decks:DECKS_PLUGIN"
    page_assets = ("view.js", "decks.css")
    page_services = {"decks_api": "/api/decks"}

    def provide_agent_tools(self) -> list[dict[str, Any]]:
        return [load_agent_tools(HERE / "agent-tools.json")]

    def setup(self, context: ServerContext, *, seed: bool) -> None:
        """Create the table; with `seed`, fill an empty table with the demo decks."""
        database = context.database
        database.migrate(SCHEMA)
        if not seed:
            return
        decks = json.loads((HERE / "seed.json").read_text(encoding="utf-8"))["decks"]
        with database.transaction() as db:
            if db.execute("SELECT 1 FROM decks LIMIT 1").fetchone() is None:
                for spec in decks:
                    _write(db, spec)

    def routes(self, context: ServerContext) -> list[Route]:
        database = context.database
        async def list_decks(request: Request) -> Response:
            return JSONResponse(await run_in_threadpool(_summaries, database))

        async def get_deck(request: Request) -> Response:
            spec = await run_in_threadpool(_read, database, request.path_params["id"])
            if spec is None:
                return _no_deck(request.path_params["id"])
            return JSONResponse(spec)

        async def put_deck(request: Request) -> Response:
            id = request.path_params["id"]
            raw = await _read_body(request)
            if raw is None:
                return _error(413, f"The deck is larger than {MAX_BODY_BYTES} bytes; split it into smaller decks.")
            try:
                spec = json.loads(raw)
            except (ValueError, RecursionError):
                return _error(400, "The body is not valid JSON; send the deck spec as a JSON object.")
            problems = deck_problems(spec)
            if isinstance(spec, dict) and spec.get("id") != id:
                given = spec.get("id")
                problems.insert(0, {"path": "$.id", "message": f"the deck's id {given!r} is not the address's {id!r}"[:200]})
            if problems:
                return JSONResponse({"error": problems_sentence(problems), "problems": problems}, status_code=422)
            created = await run_in_threadpool(_save, database, spec)
            summary = {"id": id, "title": spec["title"], "slides": len(spec["slides"])}
            return JSONResponse(summary, status_code=201 if created else 200)

        async def delete_deck(request: Request) -> Response:
            id = request.path_params["id"]
            if not await run_in_threadpool(_delete, database, id):
                return _no_deck(id)
            return Response(status_code=204)

        async def print_deck(request: Request) -> Response:
            spec = await run_in_threadpool(_read, database, request.path_params["id"])
            if spec is None:
                return _no_deck(request.path_params["id"])
            return HTMLResponse(printable_html(spec), headers=PRINT_HEADERS)

        return [
            Route("/api/decks", list_decks, methods=["GET"]),
            Route("/api/decks/{id}", get_deck, methods=["GET"]),
            Route("/api/decks/{id}", put_deck, methods=["PUT"]),
            Route("/api/decks/{id}", delete_deck, methods=["DELETE"]),
            Route("/decks/{id}/print", print_deck, methods=["GET"]),
        ]


async def _read_body(request: Request) -> bytes | None:
    """The body, or None once it passes MAX_BODY_BYTES; stops reading there, whatever it claims."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _summaries(database: Database) -> list[dict[str, Any]]:
    with database.transaction() as db:
        rows = db.execute("SELECT id, title, spec, updated_at FROM decks ORDER BY title COLLATE NOCASE, id").fetchall()
    return [
        {"id": r["id"], "title": r["title"], "slides": len(json.loads(r["spec"])["slides"]), "updated_at": r["updated_at"]}
        for r in rows
    ]


def _read(database: Database, id: str) -> dict[str, Any] | None:
    with database.transaction() as db:
        row = db.execute("SELECT spec FROM decks WHERE id = ?", (id,)).fetchone()
    return None if row is None else json.loads(row["spec"])


def _save(database: Database, spec: dict[str, Any]) -> bool:
    """Insert or replace in one transaction; True when the deck is new."""
    with database.transaction() as db:
        existed = db.execute("SELECT 1 FROM decks WHERE id = ?", (spec["id"],)).fetchone() is not None
        _write(db, spec)
    return not existed


def _write(db: Any, spec: dict[str, Any]) -> None:
    db.execute(
        "INSERT INTO decks (id, title, spec, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET title = excluded.title, spec = excluded.spec, updated_at = excluded.updated_at",
        (spec["id"], spec["title"], json.dumps(spec), datetime.now(timezone.utc).isoformat()),
    )


def _delete(database: Database, id: str) -> bool:
    with database.transaction() as db:
        return db.execute("DELETE FROM decks WHERE id = ?", (id,)).rowcount > 0


def _no_deck(id: str) -> Response:
    return _error(404, f"There is no deck {id[:80]!r}.")


def _error(status: int, sentence: str) -> Response:
    return JSONResponse({"error": sentence}, status_code=status)
