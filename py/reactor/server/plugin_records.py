"""Plugin records (AI Tools and UI plugins) on the server: saved only when their declaration
passes, shown only to the users and groups they name.

Operators (group "operators") manage records and see them all; anyone else sees a record only
when it names them or one of their groups. The page re-reads a record with the user's session
before every call, so a revoked visibility takes effect on the next call.
"""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..agent_tools import TOOL_NAME
from ..ai_tools import ai_tool_bundle, check_ai_tool_record
from ..ai_tools.declaration import RECORD_ID
from ..errors import DeclarationError
from .auth import Auth, User
from .database import Database
from .openapi import operation
from .requests import error_response, read_json

OPERATORS = "operators"
# A plugin record as sent and stored; reactor.ai_tools.declaration checks it in full.
RECORD = {
    "type": "object",
    "required": ["id", "name", "location", "language", "code", "settings", "visibility"],
    "properties": {
        "id": {"type": "string", "pattern": f"^{RECORD_ID.pattern}$"},
        "name": {"type": "string", "pattern": f"^{TOOL_NAME.pattern}$"},
        "location": {"enum": ["ai-tool", "ui"]},
        "language": {"enum": ["python", "javascript"]},
        "code": {"type": "string"},
        "settings": {"type": "object", "properties": {"tool": {"type": "object"}, "config": {"type": "object"}}},
        "visibility": {
            "type": "object",
            "required": ["users", "groups"],
            "properties": {
                "users": {"type": "array", "items": {"type": "string"}},
                "groups": {"type": "array", "items": {"type": "string"}},
            },
        },
        "enabled": {"type": "boolean"},
    },
}
BODY_LIMIT = 256_000
STEPS = [
    """
    CREATE TABLE IF NOT EXISTS plugin_records (
        id TEXT PRIMARY KEY,
        record TEXT NOT NULL,
        updated_at REAL NOT NULL,
        updated_by TEXT NOT NULL
    );
    """,
]


def can_see(record: dict[str, Any], user: User | None) -> bool:
    if user is None:
        return False
    visibility = record["visibility"]
    return OPERATORS in user.groups or user.username in visibility["users"] or bool(set(user.groups) & set(visibility["groups"]))


class PluginRecords:
    """The records table, and the management API over it."""

    def __init__(self, database: Database, auth: Auth, *, reserved: set[str]) -> None:
        self.database = database
        self.auth = auth
        self.reserved = reserved  # names of server plugins, which share the /plugins/{name} space
        database.migrate("plugin_records", STEPS)

    def save(self, record: dict[str, Any], *, by: str, create: bool) -> dict[str, Any]:
        """Check and store a record; DeclarationError when refused, KeyError/ValueError on id clashes."""
        record = check_ai_tool_record(record)
        if record["id"] in self.reserved:
            raise DeclarationError(
                f"Plugin {record['id']!r}: id is taken by a server plugin.", owner=record["id"], field="id", value=record["id"]
            )
        with self.database.transaction() as db:
            exists = db.execute("SELECT 1 FROM plugin_records WHERE id = ?", (record["id"],)).fetchone()
            if create and exists:
                raise ValueError(f"A plugin {record['id']!r} already exists; update it with PUT /plugins/{record['id']}.")
            if not create and not exists:
                raise KeyError(record["id"])
            db.execute(
                "INSERT INTO plugin_records VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "record = excluded.record, updated_at = excluded.updated_at, updated_by = excluded.updated_by",
                (record["id"], json.dumps(record), time.time(), by),
            )
        return record

    def get(self, record_id: str) -> dict[str, Any] | None:
        with self.database.transaction() as db:
            row = db.execute("SELECT record FROM plugin_records WHERE id = ?", (record_id,)).fetchone()
        return None if row is None else json.loads(row["record"])

    def visible(self, user: User | None) -> list[dict[str, Any]]:
        with self.database.transaction() as db:
            rows = db.execute("SELECT record FROM plugin_records ORDER BY id").fetchall()
        return [r for r in (json.loads(row["record"]) for row in rows) if can_see(r, user)]

    def grants_endpoint(self, user: User | None, path: str) -> bool:
        """Whether `user` may use an enabled record whose `settings.config.endpoint` is `path`:
        the data a tool reads is readable by those who may call the tool, and no one else."""
        return any(
            r["enabled"] and isinstance(r["settings"].get("config"), dict) and r["settings"]["config"].get("endpoint") == path
            for r in self.visible(user)
        )

    def agent_tools(self, user: User | None) -> list[dict[str, Any]]:
        """The AI Tools bundle for this user, as the page builds it; none when they see no tool."""
        offered = [r for r in self.visible(user) if r["location"] == "ai-tool" and r["enabled"]]
        return [ai_tool_bundle(offered)] if offered else []

    def routes(self) -> list[Route]:
        @operation("A plugin record the user can see, with its code", responses={200: RECORD})
        async def get_record(request: Request) -> Response:
            user = self.auth.user_for(request)
            if user is None:
                return error_response(401, "Sign in to read plugins.")
            record = self.get(request.path_params["id"])
            if record is None or not can_see(record, user):
                return error_response(404, f"There is no plugin {request.path_params['id']!r} that you can see.")
            return JSONResponse(record, headers={"cache-control": "no-store"})

        @operation(
            "Save a new plugin record (operators); 422 names the field a declaration breaks", body=RECORD, responses={201: RECORD}
        )
        async def create_record(request: Request) -> Response:
            return await self._write(request, create=True)

        @operation("Replace a plugin record (operators)", body=RECORD, responses={200: RECORD})
        async def update_record(request: Request) -> Response:
            return await self._write(request, create=False)

        @operation(
            "Delete a plugin record (operators)",
            responses={200: {"type": "object", "required": ["deleted"], "properties": {"deleted": {"type": "string"}}}},
        )
        async def delete_record(request: Request) -> Response:
            user = self.auth.user_for(request)
            if user is None or OPERATORS not in user.groups:
                return error_response(401 if user is None else 403, "Only operators may delete plugins.")
            with self.database.transaction() as db:
                gone = db.execute("DELETE FROM plugin_records WHERE id = ?", (request.path_params["id"],)).rowcount
            if not gone:
                return error_response(404, f"There is no plugin {request.path_params['id']!r}.")
            return JSONResponse({"deleted": request.path_params["id"]})

        return [
            Route("/plugins", create_record, methods=["POST"]),
            Route("/plugins/{id}", get_record, methods=["GET"]),
            Route("/plugins/{id}", update_record, methods=["PUT"]),
            Route("/plugins/{id}", delete_record, methods=["DELETE"]),
        ]

    async def _write(self, request: Request, *, create: bool) -> Response:
        user = self.auth.user_for(request)
        if user is None:
            return error_response(401, "Sign in as an operator to save plugins.")
        if OPERATORS not in user.groups:
            return error_response(403, "Only operators may save plugins.")
        body = await read_json(request, limit=BODY_LIMIT)
        if isinstance(body, Response):
            return body
        if not create:
            path_id = request.path_params["id"]
            if body.setdefault("id", path_id) != path_id:
                return error_response(422, f"The body's id {body['id']!r} is not the id in the address, {path_id!r}.", field="id")
        try:
            record = self.save(body, by=user.username, create=create)
        except DeclarationError as error:
            return error_response(422, str(error), field=error.field)
        except ValueError as error:
            return error_response(409, str(error))
        except KeyError:
            return error_response(404, f"There is no plugin {body['id']!r}; create it with POST /plugins.")
        return JSONResponse(record, status_code=201 if create else 200)
