"""Which server plugins are on: the routes that list plugins and their AgentTools bundles, the
operators' switch (`PATCH /plugins/{id}`), and the switches kept in the database so that every
server process on one database agrees."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import ApiError
from ...platform import PluginPlatform
from ...records.declaration import LOCATIONS
from ..api import NO_STORE, Call, Reply, declare, routes_of
from ..auth.sessions import signed_in
from ..database import Database
from .context import ServerContext
from .records import OPERATORS, RECORD

STEPS = [
    "CREATE TABLE IF NOT EXISTS plugin_state (name TEXT PRIMARY KEY, enabled INTEGER NOT NULL)"
]
STRING = {"type": "string"}
STRINGS = {"type": "array", "items": STRING}
# An AgentTools bundle as GET /plugins/agent-tools lists it (reactor.agent_tools).
BUNDLE = {
    "type": "object",
    "required": ["id", "name", "plugin", "commands", "toolset"],
    "properties": {
        "id": STRING,
        "name": STRING,
        "description": STRING,
        "plugin": STRING,
        "toolset": STRINGS,
        "commands": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "command", "description"],
                "properties": {
                    "name": STRING,
                    "command": STRING,
                    "description": STRING,
                    "parameters": {"type": "object"},
                },
            },
        },
    },
}
SERVER_PLUGIN = {
    "type": "object",
    "required": ["name", "enabled"],
    "properties": {"name": STRING, "description": STRING, "enabled": {"type": "boolean"}},
}
LISTED_RECORD = {**RECORD, "required": [k for k in RECORD["required"] if k != "code"]}
SWITCHED = 'Send exactly {"enabled": true} or {"enabled": false}.'
SWITCH = {
    "type": "object",
    "required": ["enabled"],
    "properties": {"enabled": {"type": "boolean", "x-refusal": SWITCHED}},
    "additionalProperties": False,
    "x-unknown": SWITCHED,
}


def read_plugin_state(database: Database, platform: PluginPlatform) -> None:
    """Which plugins are switched off or on, as the database says (PATCH /plugins/{id} writes
    it)."""
    known = {p["name"] for p in platform.list_plugins()}
    for row in database.statement("SELECT name, enabled FROM plugin_state"):
        if row["name"] in known:
            platform.set_enabled(row["name"], bool(row["enabled"]))


def plugin_routes(context: ServerContext) -> list[Route]:
    """The routes below, served with the app's ServerContext: all they work with (the platform,
    the records, the auth, the database; the context itself for the plugins' own bundles)."""
    return routes_of(list_plugins, list_agent_tools, set_plugin_enabled, services=context)


def _context(call: Call) -> ServerContext:
    services: ServerContext = call.services
    return services


# The routes, each declared once at import; a request tries them in this order.
@declare(
    "GET",
    "/plugins",
    "The server's plugins, then the plugin records the user can see (without their code)",
    query={"location": {"enum": list(LOCATIONS)}},
    replies={
        200: Reply(
            {"type": "array", "items": {"anyOf": [SERVER_PLUGIN, LISTED_RECORD]}},
            headers=NO_STORE,
        )
    },
)
async def list_plugins(call: Call) -> Response:
    context = _context(call)
    visible = [
        {k: v for k, v in r.items() if k != "code"}
        for r in context.records.visible(context.auth.user_for(call.request))
    ]
    location = call.query.get("location")
    listed = (
        [r for r in visible if r["location"] == location]
        if location
        else context.platform.list_plugins() + visible
    )
    return JSONResponse(listed, headers={"cache-control": "no-store"})


@declare(
    "GET",
    "/plugins/agent-tools",
    "The AgentTools bundles of every enabled plugin, with those made for the user",
    replies={200: Reply({"type": "array", "items": BUNDLE}, headers=NO_STORE)},
)
async def list_agent_tools(call: Call) -> Response:
    context = _context(call)
    user = context.auth.user_for(call.request)
    platform = context.platform
    bundles = platform.collect_agent_tools() + platform.user_agent_tools(context, user)
    return JSONResponse(bundles, headers={"cache-control": "no-store"})


@declare(
    "PATCH",
    "/plugins/{id}",
    "Enable or disable a server plugin (operators)",
    body=SWITCH,
    body_limit=1024,
    replies={200: Reply(SERVER_PLUGIN)},
    refusals={
        401: "Nobody is signed in.",
        403: "The user is not an operator.",
        404: "No server plugin has that name.",
    },
    who=signed_in("Only operators may enable or disable plugins; sign in as one.", group=OPERATORS),
)
async def set_plugin_enabled(call: Call) -> Any:
    name, enabled = call.path["id"], call.body["enabled"]
    platform = _context(call).platform
    if name not in {p["name"] for p in platform.list_plugins()}:
        raise ApiError(404, f"There is no plugin {name[:80]!r}.", field="id")
    with _context(call).database.transaction() as db:
        db.execute(
            "INSERT INTO plugin_state (name, enabled) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled",
            (name, enabled),
        )
    platform.set_enabled(name, enabled)
    return next(p for p in platform.list_plugins() if p["name"] == name)


class PluginStateSync:
    """ASGI middleware: before each request, the plugin switches as the shared database holds
    them, so a plugin one server process disabled is disabled in all of them at the next request.
    The paths in `skip` serve no plugin (/healthz must answer while the database does not)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        database: Database,
        platform: PluginPlatform,
        skip: Iterable[str] = (),
    ) -> None:
        self.app, self.database, self.platform = app, database, platform
        self.skip = frozenset(skip)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in self.skip:
            await run_in_threadpool(read_plugin_state, self.database, self.platform)
        await self.app(scope, receive, send)
