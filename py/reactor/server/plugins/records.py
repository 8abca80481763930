"""Plugin records (AI Tools and UI plugins) on the server: saved only when their declaration
passes, shown only to the users and groups they name.

Operators (group "operators") manage records and see them all; anyone else sees a record only
when it names them or one of their groups. The page re-reads a record with the user's session
before every call, so a revoked visibility takes effect on the next call.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ...agent_tools import SIDE_EFFECTS, TOOL_NAME
from ...errors import ApiError, DeclarationError
from ...records import check_ai_tool_record
from ...records.declaration import (
    CODE_LIMIT,
    DESCRIPTION_LIMIT,
    LANGUAGES,
    LOCATIONS,
    RECORD_ID,
    RESERVED_IDS,
    RESULT_CAP_RANGE,
    TIMEOUT_MS_RANGE,
)
from ..api import NO_STORE, Call, Reply, declare, routes_of
from ..auth.sessions import Auth, User, signed_in
from ..database import Database

OPERATORS = "operators"
# A plugin record as sent and stored; reactor.records.declaration checks it in full.
RECORD = {
    "type": "object",
    "required": ["id", "name", "location", "language", "code", "settings", "visibility"],
    "properties": {
        "id": {"type": "string", "pattern": f"^{RECORD_ID.pattern}$"},
        "name": {"type": "string", "pattern": f"^{TOOL_NAME.pattern}$"},
        "location": {"enum": list(LOCATIONS)},
        "language": {"enum": list(LANGUAGES)},
        "code": {"type": "string"},
        "settings": {
            "type": "object",
            "properties": {"tool": {"type": "object"}, "config": {"type": "object"}},
        },
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
NAMES = {"type": "array", "items": {"type": "string", "minLength": 1}}
TOOL = {
    "type": "object",
    "required": ["description", "inputSchema"],
    "additionalProperties": False,
    "properties": {
        "description": {
            "type": "string",
            "minLength": 1,
            "maxLength": DESCRIPTION_LIMIT,
            "pattern": "[^ \\t\\n\\r]",
        },
        "inputSchema": {"type": "object"},
        "annotations": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "sideEffect": {"enum": list(SIDE_EFFECTS)},
                "timeoutMs": {
                    "type": "integer",
                    "minimum": TIMEOUT_MS_RANGE[0],
                    "maximum": TIMEOUT_MS_RANGE[1],
                },
            },
        },
        "maxResultBytes": {
            "type": "integer",
            "minimum": RESULT_CAP_RANGE[0],
            "maximum": RESULT_CAP_RANGE[1],
        },
    },
}
# A record as a write sends it. reactor.records.declaration checks beyond what a schema can say:
# that the code parses and defines its entry point, that inputSchema is a schema reactor can use,
# that an AI Tool's settings hold its tool (a 422 naming the field).
RECORD_BODY = {
    "type": "object",
    "required": ["id", "name", "location", "code"],
    "additionalProperties": False,
    "properties": {
        "id": {
            "type": "string",
            "pattern": f"^{RECORD_ID.pattern}$",
            "not": {"enum": sorted(RESERVED_IDS)},
        },
        "name": {"type": "string", "pattern": f"^{TOOL_NAME.pattern}$"},
        "location": {"enum": list(LOCATIONS)},
        "language": {"enum": list(LANGUAGES)},
        "code": {
            "type": "string",
            "minLength": 1,
            "maxLength": CODE_LIMIT,
            "pattern": "[^ \\t\\n\\r]",
        },
        "settings": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"tool": TOOL, "config": {"type": "object", "maxProperties": 100}},
        },
        "visibility": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"users": NAMES, "groups": NAMES},
        },
        "enabled": {"type": "boolean"},
    },
    "x-unknown": "{field} is not a record field; use code, enabled, id, language, location, name, "
    "settings, visibility.",
}
BODY_LIMIT = 256_000
CHECKED = (
    "The record breaks its schema, or its code or settings break what reactor.records "
    "checks; `field` names which."
)
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
    return (
        OPERATORS in user.groups
        or user.username in visibility["users"]
        or bool(set(user.groups) & set(visibility["groups"]))
    )


class PluginRecords:
    """The records table, and the management API over it."""

    def __init__(self, database: Database, auth: Auth, *, reserved: set[str]) -> None:
        self.database = database
        self.auth = auth
        self.reserved = reserved  # names of server plugins, which share the /plugins/{name} space
        database.migrate("plugin_records", STEPS)

    def save(self, record: dict[str, Any], *, by: str, create: bool) -> dict[str, Any]:
        """Check and store a record; DeclarationError if refused, ApiError 409/404 on id clashes."""
        record = check_ai_tool_record(record)
        if record["id"] in self.reserved:
            raise DeclarationError(
                f"Plugin {record['id']!r}: id is taken by a server plugin.",
                owner=record["id"],
                field="id",
                value=record["id"],
            )
        with self.database.transaction() as db:
            exists = db.execute(
                "SELECT 1 FROM plugin_records WHERE id = ?", (record["id"],)
            ).fetchone()
            name = record["id"]
            if create and exists:
                taken = f"A plugin {name!r} already exists; update it with PUT /plugins/{name}."
                raise ApiError(409, taken)
            if not create and not exists:
                missing = f"There is no plugin {name!r}; create it with POST /plugins."
                raise ApiError(404, missing, field="id")
            db.execute(
                "INSERT INTO plugin_records VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "record = excluded.record, updated_at = excluded.updated_at, updated_by = "
                "excluded.updated_by",
                (record["id"], json.dumps(record), time.time(), by),
            )
        return record

    def get(self, name: str) -> dict[str, Any] | None:
        with self.database.transaction() as db:
            row = db.execute("SELECT record FROM plugin_records WHERE id = ?", (name,)).fetchone()
        return None if row is None else json.loads(row["record"])

    def visible(self, user: User | None) -> list[dict[str, Any]]:
        with self.database.transaction() as db:
            rows = db.execute("SELECT record FROM plugin_records ORDER BY id").fetchall()
        return [r for r in (json.loads(row["record"]) for row in rows) if can_see(r, user)]

    def grants_endpoint(self, user: User | None, path: str) -> bool:
        """Whether `user` may use an enabled record whose `settings.config.endpoint` is `path`:
        the data a tool reads is readable by those who may call the tool, and no one else."""
        return any(
            r["enabled"]
            and isinstance(r["settings"].get("config"), dict)
            and r["settings"]["config"].get("endpoint") == path
            for r in self.visible(user)
        )

    def remove(self, name: str) -> bool:
        """Delete record `name`; whether there was one."""
        with self.database.transaction() as db:
            gone = db.execute("DELETE FROM plugin_records WHERE id = ?", (name,)).rowcount
        return bool(gone)

    def routes(self) -> list[Route]:
        services = RecordServices(self, self.auth)
        return routes_of(create_record, get_record, update_record, delete_record, services=services)


@dataclass(frozen=True)
class RecordServices:
    """What the record routes work with, one set per app (`call.services`, routes_of)."""

    records: PluginRecords
    auth: Auth


def _records(call: Call) -> PluginRecords:
    services: RecordServices = call.services
    return services.records


OPERATOR = signed_in(
    "Sign in as an operator to save plugins.",
    group=OPERATORS,
    outside="Only operators may save plugins.",
)
WRITES = {401: "Nobody is signed in.", 403: "The user is not an operator."}


# The routes, each declared once at import; a request tries them in routes()'s order.
@declare(
    "GET",
    "/plugins/{id}",
    "A plugin record the user can see, with its code",
    replies={200: Reply(RECORD, headers=NO_STORE)},
    refusals={401: "Nobody is signed in.", 404: "No record the user can see has that id."},
    who=signed_in("Sign in to read plugins."),
)
async def get_record(call: Call) -> Response:
    record = _records(call).get(call.path["id"])
    if record is None or not can_see(record, call.user):
        raise ApiError(
            404,
            f"There is no plugin {call.path['id'][:80]!r} that you can see.",
            field="id",
        )
    return JSONResponse(record, headers={"cache-control": "no-store"})


@declare(
    "POST",
    "/plugins",
    "Save a new plugin record (operators); 422 names the field a declaration breaks",
    body=RECORD_BODY,
    body_limit=BODY_LIMIT,
    replies={201: Reply(RECORD)},
    refusals={
        **WRITES,
        409: "A record (or a server plugin) has that id already.",
        422: CHECKED,
    },
    who=OPERATOR,
)
async def create_record(call: Call) -> Any:
    return _saved(call, create=True)


@declare(
    "PUT",
    "/plugins/{id}",
    "Replace a plugin record (operators)",
    body=RECORD_BODY,
    body_limit=BODY_LIMIT,
    replies={200: Reply(RECORD)},
    refusals={**WRITES, 404: "No record has that id.", 422: CHECKED},
    who=OPERATOR,
)
async def update_record(call: Call) -> Any:
    if call.body["id"] != call.path["id"]:
        sentence = (
            f"The body's id {call.body['id']!r} is not the id in the address, "
            f"{call.path['id'][:80]!r}."
        )
        raise ApiError(422, sentence, field="id")
    return _saved(call, create=False)


@declare(
    "DELETE",
    "/plugins/{id}",
    "Delete a plugin record (operators)",
    replies={
        200: Reply(
            {
                "type": "object",
                "required": ["deleted"],
                "properties": {"deleted": {"type": "string"}},
            }
        )
    },
    refusals={**WRITES, 404: "No record has that id."},
    who=signed_in("Only operators may delete plugins.", group=OPERATORS),
)
async def delete_record(call: Call) -> Any:
    if not _records(call).remove(call.path["id"]):
        raise ApiError(404, f"There is no plugin {call.path['id'][:80]!r}.", field="id")
    return {"deleted": call.path["id"]}


def _saved(call: Call, *, create: bool) -> JSONResponse:
    try:
        record = _records(call).save(call.body, by=call.user.username, create=create)
    except DeclarationError as error:
        raise ApiError(422, str(error), field=error.field) from None
    return JSONResponse(record, status_code=201 if create else 200)
