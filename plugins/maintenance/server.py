"""The maintenance demo: buildings and their work orders, plus the AI Tools that read them.

It gives the seed's maintenance backlog tool a real data source, and a deliberately slow
endpoint for the tool that shows `context.signal` stopping a request at its timeout.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from reactor.errors import ApiError
from reactor.server.api import Call, Reply, declare, routes_of, services_of
from reactor.server.auth.sessions import Auth, User, signed_in
from reactor.server.database import Database
from reactor.server.plugins.context import ServerContext
from reactor.server.plugins.records import PluginRecords

HERE = Path(__file__).parent
STEPS = [
    """
    CREATE TABLE IF NOT EXISTS maintenance_tasks (
        id TEXT PRIMARY KEY, building TEXT NOT NULL, title TEXT NOT NULL,
        priority TEXT NOT NULL, opened TEXT NOT NULL, status TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS buildings (id TEXT PRIMARY KEY, name TEXT NOT NULL);
    """,
]
SLOW_LIMIT_MS = 60_000
MAX_TASKS = 1000
TASK = {
    "type": "object",
    "required": ["id", "title", "priority", "opened"],
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "priority": {"type": "string"},
        "opened": {"type": "string"},
    },
}
BACKLOG = {
    "type": "object",
    "required": ["building", "buildings", "total", "tasks", "openByBuilding"],
    "properties": {
        "building": {
            "anyOf": [
                {
                    "type": "object",
                    "required": ["id", "name"],
                    "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
                },
                {"type": "null"},
            ]
        },
        "buildings": {"type": "array", "items": {"type": "string"}},
        "total": {"type": "integer"},
        "tasks": {"type": "array", "items": TASK},
        "openByBuilding": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
}


def demo_records() -> list[dict[str, Any]]:
    """The demo's AI Tool records, with their code read from tools/."""
    return [
        {
            "id": "maintenance-backlog",
            "name": "maintenance_backlog",
            "location": "ai-tool",
            "language": "python",
            "code": (HERE / "tools" / "maintenance_backlog.py").read_text(),
            "settings": {
                "tool": {
                    "description": "Returns the maintenance backlog for a building, newest first. "
                    "Use when asked what work is outstanding on a building.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            "buildingId": {
                                "type": "string",
                                "description": "Entity ID of the building, e.g. B-101.",
                            },
                            "limit": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": 100,
                                "description": "Maximum records to return. Defaults to 20.",
                            },
                        },
                        "required": ["buildingId"],
                        "additionalProperties": False,
                    },
                    "annotations": {"sideEffect": "none", "timeoutMs": 20000},
                },
                "config": {
                    "entityTypeId": "maintenance_task",
                    "endpoint": "/api/maintenance/entities",
                },
            },
            "visibility": {"users": [], "groups": ["staff"]},
        },
        {
            "id": "slow-lookup",
            "name": "slow_lookup",
            "location": "ai-tool",
            "language": "python",
            "code": (HERE / "tools" / "slow_lookup.py").read_text(),
            "settings": {
                "tool": {
                    "description": "Looks a value up in the slow archive system (it often takes "
                    "longer than "
                    "the 1.5 s this tool may run). Use only when asked to check the archive.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"ms": {"type": "integer", "minimum": 0}},
                        "additionalProperties": False,
                    },
                    "annotations": {"sideEffect": "read", "timeoutMs": 1500},
                },
                "config": {"endpoint": "/api/maintenance/slow"},
            },
            "visibility": {"users": [], "groups": ["staff"]},
        },
        {
            "id": "open-task-count",
            "name": "open_task_count",
            "location": "ai-tool",
            "language": "javascript",
            "code": (HERE / "tools" / "open_task_count.js").read_text(),
            "settings": {
                "tool": {
                    "description": "Counts the open maintenance tasks in each building. Use for "
                    "an overview.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {},
                        "additionalProperties": False,
                    },
                    "annotations": {"sideEffect": "none", "timeoutMs": 10000},
                },
                "config": {"endpoint": "/api/maintenance/entities"},
            },
            "visibility": {"users": ["ada"], "groups": []},
        },
        {
            # A UI plugin whose file also defines Invoke: PUT it with location "ai-tool" and the
            # panel goes, the agent gets the tool.
            "id": "backlog-chart",
            "name": "backlog_chart",
            "location": "ui",
            "language": "javascript",
            "code": (HERE / "tools" / "backlog_chart.js").read_text(),
            "settings": {
                "tool": {
                    "description": "Counts the open maintenance tasks per building and names the "
                    "busiest. Use to say where the backlog is.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {},
                        "additionalProperties": False,
                    },
                    "annotations": {"sideEffect": "none", "timeoutMs": 10000},
                },
                "config": {"endpoint": "/api/maintenance/entities"},
            },
            "visibility": {"users": [], "groups": ["staff"]},
        },
    ]


class MaintenanceServerPlugin:
    """The buildings and work orders tables, the demo's records, and the endpoints tools read."""

    def __init__(self) -> None:
        self.slow = {"started": 0, "completed": 0, "cancelled": 0}  # what the slow endpoint saw
        # notified at each count: a test waits on it, not a clock
        self.slow_seen = threading.Condition()

    def count_slow(self, what: str) -> None:
        with self.slow_seen:
            self.slow[what] += 1
            self.slow_seen.notify_all()

    def wait_slow(self, what: str, at_least: int = 1, timeout: float = 10) -> dict[str, int]:
        """The counts once `what` reached `at_least` (or `timeout` seconds passed)."""
        with self.slow_seen:
            self.slow_seen.wait_for(lambda: self.slow[what] >= at_least, timeout)
            return dict(self.slow)

    def setup(self, context: ServerContext, *, seed: bool) -> None:
        context.database.migrate("maintenance", STEPS)
        if not seed:
            return
        data = json.loads((HERE / "seed.json").read_text())
        with context.database.transaction() as db:
            if db.execute("SELECT 1 FROM buildings LIMIT 1").fetchone() is None:
                db.executemany("INSERT INTO buildings VALUES (:id, :name)", data["buildings"])
                db.executemany(
                    "INSERT INTO maintenance_tasks VALUES (:id, :building, :title, "
                    ":priority, :opened, :status)",
                    data["tasks"],
                )
        for record in demo_records():
            if context.records.get(record["id"]) is None:
                context.records.save(record, by="demo", create=True)

    def routes(self, context: ServerContext) -> list[Route]:
        services = MaintenanceServices(context.database, context.auth, context.records, self)
        return routes_of(entities, slow, services=services)


@dataclass(frozen=True)
class MaintenanceServices:
    """What the endpoints work with, one set per app (`call.services`, routes_of): the tables,
    who may read them, and the plugin that counts what the slow endpoint saw."""

    database: Database
    auth: Auth
    records: PluginRecords
    plugin: MaintenanceServerPlugin


def _maintenance(call: Call) -> MaintenanceServices:
    services: MaintenanceServices = call.services
    return services


SIGNED_IN = signed_in("Sign in to read maintenance data.")
REFUSALS = {
    401: "Nobody is signed in.",
    403: "The user may use no tool that reads this data.",
}


def _reader(request: Request) -> User:
    """The data is for those who may call a tool that reads it (its record's config.endpoint)."""
    user = SIGNED_IN(request)
    services: MaintenanceServices = services_of(request)
    if not services.records.grants_endpoint(user, request.url.path):
        raise ApiError(
            403,
            f"User {user.username!r} may use no tool that reads {request.url.path}; "
            "ask an operator for access.",
        )
    return user


# The endpoints, each declared once at import; a request tries them in this order.
@declare(
    "GET",
    "/api/maintenance/entities",
    "A building's open maintenance tasks, for those who may use a tool that reads them",
    query={
        "building": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_TASKS},
        "entityType": {"const": "maintenance_task"},
    },
    replies={200: Reply(BACKLOG)},
    refusals=REFUSALS,
    who=_reader,
)
async def entities(call: Call) -> Any:
    database = _maintenance(call).database
    return _backlog(database, call.query.get("building"), call.query.get("limit", 20))


@declare(
    "GET",
    "/api/maintenance/slow",
    "The demo's slow archive: answers after `ms` (at most 60,000), or notices the caller left",
    query={"ms": {"type": "integer", "minimum": 0, "maximum": SLOW_LIMIT_MS}},
    replies={
        200: Reply(
            {
                "type": "object",
                "required": ["value", "waitedMs"],
                "properties": {
                    "value": {"type": "integer"},
                    "waitedMs": {"type": "integer"},
                },
            }
        )
    },
    refusals=REFUSALS,
    who=_reader,
)
async def slow(call: Call) -> Response:
    ms, plugin = call.query.get("ms", 10_000), _maintenance(call).plugin
    plugin.count_slow("started")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ms / 1000
    while loop.time() < deadline:
        if await call.request.is_disconnected():
            plugin.count_slow("cancelled")
            return Response(status_code=499)
        await asyncio.sleep(0.05)
    plugin.count_slow("completed")
    return JSONResponse({"value": 42, "waitedMs": ms})


def _backlog(database: Database, building: str | None, limit: int) -> dict[str, Any]:
    with database.transaction() as db:
        buildings = {
            r["id"]: r["name"] for r in db.execute("SELECT id, name FROM buildings ORDER BY id")
        }
        open_by_building = {
            r["building"]: r["n"]
            for r in db.execute(
                "SELECT building, COUNT(*) AS n FROM maintenance_tasks WHERE status = 'open' "
                "GROUP BY building"
            )
        }
        tasks = db.execute(
            "SELECT id, title, priority, opened FROM maintenance_tasks WHERE status = 'open' "
            "AND building = ? ORDER BY opened DESC LIMIT ?",
            (building, limit),
        ).fetchall()
    found = building in buildings
    return {
        "building": {"id": building, "name": buildings[building]} if found else None,
        "buildings": list(buildings),
        "total": open_by_building.get(building, 0) if found else 0,
        "tasks": [dict(t) for t in tasks] if found else [],
        "openByBuilding": {b: open_by_building.get(b, 0) for b in buildings},
    }
