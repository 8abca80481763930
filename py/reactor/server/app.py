"""The Python tier: one ASGI app serving the page, its runtime, the plugins' bundles and data."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
from collections.abc import Iterable
from functools import partial, wraps
from importlib import metadata
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route

import reactor

from ..host.tools import AgentSpec
from ..platform import PluginPlatform
from ..plugin_spec import PluginSpec, discover_plugins
from .agent_tokens import AgentTokens, AgentTokensOnlyOnMcp
from .assets import IMMUTABLE, REVALIDATE, RenderedPage, SourceArchive, serve_file
from .auth import Auth
from .bytecode import compiled
from .context import ServerContext
from .cors import CrossOrigin, check_origins
from .database import Database
from .files import ROOT, VENDOR, WEB, made_folder
from .gateway import AssistantConfig, Gateway
from .mcp_relay import MCP_OPERATION, Agents
from .mcp_relay import PATH as MCP_PATH
from .openapi import ANY_FILE, HTML, openapi_document, operation
from .plugin_records import OPERATORS, PluginRecords
from .protection import LOOPBACK_HOSTS, CrossSiteWriteGuard, HostCheck, check_hosts
from .requests import read_json
from .runtime_python import COMPILED_STDLIB, REACTOR_AT_START, STDLIB_AFTER_BOOT, stdlib_sources
from .snapshot import memory_snapshot

# What the page never imports: the server tier (plugins' `server.py`, `backend/` and declaration
# `spec.py`; reactor's `server/` and the PluginSpec machinery), the CLI, the test kit, the scaffold.
SERVER_ONLY = {"server", "server.py", "backend", "spec.py", "plugin_spec.py", "cli.py", "__main__.py", "testing", "scaffold.py"}
# Where index.html's head gets the start of Pyodide's boot (_early_boot).
EARLY_BOOT_MARKER = "<!-- reactor:early-boot (the server puts the start of Pyodide's boot here) -->"
# Pyodide's module the reactor worker imports (web/reactor-worker.js), and the one it imports first.
PYODIDE_MODULES = ["pyodide/pyodide.mjs", "pyodide/pyodide.asm.mjs"]
STRINGS = {"type": "array", "items": {"type": "string"}}
# An AgentTools bundle as GET /plugins/agent-tools lists it (reactor.agent_tools).
BUNDLE = {
    "type": "object",
    "required": ["id", "name", "plugin", "commands", "toolset"],
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "plugin": {"type": "string"},
        "toolset": STRINGS,
        "commands": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "command", "description"],
                "properties": {
                    "name": {"type": "string"},
                    "command": {"type": "string"},
                    "description": {"type": "string"},
                    "parameters": {"type": "object"},
                },
            },
        },
    },
}
SERVER_PLUGIN = {
    "type": "object",
    "required": ["name", "enabled"],
    "properties": {"name": {"type": "string"}, "description": {"type": "string"}, "enabled": {"type": "boolean"}},
}
PLUGIN_STATE = ["CREATE TABLE IF NOT EXISTS plugin_state (name TEXT PRIMARY KEY, enabled INTEGER NOT NULL)"]


def create_app(
    data_dir: str | Path,
    *,
    plugins: Iterable[PluginSpec] | None = None,
    seed_demo: bool = True,
    agent_spec: dict[str, Any] | None = None,
    allow_origins: Iterable[str] = (),
    allow_hosts: Iterable[str] = LOOPBACK_HOSTS,
    database: str = "",
    assistant: AssistantConfig | None = None,
    browser_keys: bool | None = None,
) -> Starlette:
    """Build the app over `data_dir/reactor.sqlite3`, or over `database` (a `postgresql://` URL:
    several server processes then share one truth); plugins set up their tables on start.

    `plugins` are PluginSpecs; by default those installed packages declare in the
    `reactor.plugins` entry-point group (reactor.plugin_spec.discover_plugins).

    `agent_spec` is the page chat's agent (name, instructions, plugins; never tools); by default
    the `agent.json` beside index.html. `allow_origins` are the origins of other pages that may
    embed reactor from this server (`http://127.0.0.1:5500`); only they get CORS headers, may
    write with the session cookie, and may frame the page. `allow_hosts` are the host names the
    server answers to (by default loopback only).

    `assistant` is the site's model (reactor.server.gateway): the page's chat reaches it through
    this server, which holds the key. `browser_keys` lets a person type a provider's key into the
    chat's settings instead (by default only when there is no `assistant`).
    """
    origins = check_origins(allow_origins)
    hosts = check_hosts(allow_hosts)
    store = Database(database or Path(data_dir) / "reactor.sqlite3")
    platform = PluginPlatform(discover_plugins() if plugins is None else plugins)
    plugin_routes: list[BaseRoute] = []
    # Several processes may start at once on one database: their migrations and seeds take turns.
    with store.setup_lock():
        store.migrate("plugin_state", PLUGIN_STATE)
        _read_plugin_state(store, platform)
        auth = Auth(store, seed=seed_demo)
        records = PluginRecords(store, auth, reserved={p["name"] for p in platform.list_plugins()})
        context = ServerContext(store, auth, platform, records)
        gateway = None if assistant is None else Gateway(assistant, store, auth)
        agent_tokens = AgentTokens(store, auth)
        agents = Agents(auth, agent_tokens, origins, store)  # /mcp and the pages it relays to (mcp_relay.py)
        for spec in platform.all_plugins():
            half = platform.server_half(spec.name)
            if half is None:
                continue
            half.setup(context, seed=seed_demo)
            for route in half.routes(context):
                plugin_routes.append(_while_enabled(platform, spec.name, route))
    keys_typed = assistant is None if browser_keys is None else browser_keys
    runtime = runtime_manifest()
    packages = {"reactor": Path(reactor.__file__).parent, **_page_packages(platform.all_plugins())}
    archive = SourceArchive(packages, SERVER_ONLY, **_bytecode_for(runtime))
    page_modules = [spec.page.split(":")[0] for spec in platform.all_plugins() if spec.page]
    runtime["snapshot"] = snapshot_url(runtime, archive, [name for name in page_modules if name.split(".")[0] in packages])
    early_boot = _early_boot(runtime)
    index_page = RenderedPage(
        (ROOT / "index.html").read_text().replace(EARLY_BOOT_MARKER, early_boot),
        headers=_page_headers(early_boot, origins, keys_typed),
    )

    @operation("The demo page", responses={200: HTML, 304: None})
    async def index(request: Request) -> Response:
        return index_page.response(request)

    @operation("A file of the page's JavaScript and styles", responses={200: ANY_FILE, 304: None})
    async def web_file(request: Request) -> Response:
        return serve_file(request, WEB, request.path_params["path"], cache=REVALIDATE)

    @operation(
        "A file of the vendored runtime (Pyodide; PyScript for the bench), immutable under its version stamp",
        responses={200: ANY_FILE},
    )
    async def vendor_file(request: Request) -> Response:
        if request.path_params["stamp"] != runtime["stamp"]:
            return JSONResponse({"error": "That runtime version is not served here; reload the page."}, 404)
        path = request.path_params["path"]
        folder = made_folder(runtime["stamp"]) if path.startswith("snapshot/") else VENDOR
        return serve_file(request, folder, path, cache=IMMUTABLE)

    @operation("A page asset of an enabled plugin", responses={200: ANY_FILE, 304: None})
    async def plugin_asset(request: Request) -> Response:
        name = request.path_params["name"]
        plugin = next((p for p in platform.enabled_plugins() if p.name == name), None)
        if plugin is None or request.path_params["path"] not in plugin.assets:
            return JSONResponse({"error": f"Plugin {name!r} serves no such asset."}, 404)
        return serve_file(request, plugin.folder, request.path_params["path"], cache=REVALIDATE)

    @operation("The page's Python as one bundle, named by its hash", responses={200: ANY_FILE})
    async def python_archive(request: Request) -> Response:
        if request.path_params["digest"] != archive.digest:
            return JSONResponse({"error": "That archive is gone; reload the page."}, 404)
        return archive.response(request)

    agent = AgentSpec.from_dict(json.loads((ROOT / "agent.json").read_text()) if agent_spec is None else agent_spec)

    @operation(
        "What the page boots: runtime, Python bundle, plugins, services, the chat's agent",
        responses={200: {"type": "object", "required": ["runtime", "python", "plugins", "services", "agent", "assistant"]}},
    )
    async def boot_config(request: Request) -> Response:
        base = f"/vendor/{runtime['stamp']}"
        return JSONResponse(
            {
                "runtime": {
                    "interpreter": f"{base}/{PYODIDE_MODULES[0]}",
                    "ready": runtime["ready"],
                    "error": runtime.get("error", ""),
                    "pyodide": runtime.get("pyodide", ""),
                    "snapshot": runtime["snapshot"],
                },
                "python": {"bundles": [archive.url], "site": _site(runtime)},
                "plugins": [_page_entry(p) for p in platform.enabled_plugins() if p.page],
                "services": {k: v for p in platform.enabled_plugins() for k, v in p.page_services.items()},
                "agent": {"name": agent.name, "instructions": agent.instructions, "plugins": list(agent.plugins)},
                "assistant": {"site": None if assistant is None else assistant.for_page(), "browserKeys": keys_typed},
            },
            headers={"cache-control": "no-store"},
        )

    @operation(
        "The server's plugins, then the plugin records the user can see (without their code)",
        query={"location": {"enum": ["ai-tool", "ui"]}},
        responses={200: {"type": "array", "items": {"type": "object", "required": ["name"]}}},
    )
    async def list_plugins(request: Request) -> Response:
        """Server plugins, then the records the user can see (without their code)."""
        visible = [{k: v for k, v in r.items() if k != "code"} for r in records.visible(auth.user_for(request))]
        location = request.query_params.get("location")
        if location not in (None, "ai-tool", "ui"):
            return JSONResponse({"error": f"There is no location {location[:40]!r}; use ai-tool or ui."}, 422)
        if location:
            return JSONResponse([r for r in visible if r["location"] == location], headers={"cache-control": "no-store"})
        return JSONResponse(platform.list_plugins() + visible, headers={"cache-control": "no-store"})

    @operation(
        "The AgentTools bundles of every enabled plugin, and the AI Tools the user can see",
        responses={200: {"type": "array", "items": BUNDLE}},
    )
    async def list_agent_tools(request: Request) -> Response:
        bundles = platform.collect_agent_tools() + records.agent_tools(auth.user_for(request))
        return JSONResponse(bundles, headers={"cache-control": "no-store"})

    @operation(
        "Enable or disable a server plugin (operators)",
        responses={200: SERVER_PLUGIN},
        body={
            "type": "object",
            "required": ["enabled"],
            "properties": {"enabled": {"type": "boolean"}},
            "additionalProperties": False,
        },
    )
    async def set_plugin_enabled(request: Request) -> Response:
        user = auth.user_for(request)
        if user is None or OPERATORS not in user.groups:
            return JSONResponse(
                {"error": "Only operators may enable or disable plugins; sign in as one."}, 401 if user is None else 403
            )
        name = request.path_params["id"]
        if name not in {p["name"] for p in platform.list_plugins()}:
            return JSONResponse({"error": f"There is no plugin {name!r}."}, 404)
        body = await read_json(request, limit=1024)
        if isinstance(body, Response):
            return body
        if set(body) != {"enabled"} or not isinstance(body["enabled"], bool):
            return JSONResponse({"error": 'Send exactly {"enabled": true} or {"enabled": false}.'}, 422)
        with store.transaction() as db:
            db.execute(
                "INSERT INTO plugin_state (name, enabled) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled",
                (name, body["enabled"]),
            )
        platform.set_enabled(name, body["enabled"])
        return JSONResponse(next(p for p in platform.list_plugins() if p["name"] == name))

    routes: list[BaseRoute] = [
        Route("/", index),
        Route("/index.html", index),
        Route("/web/{path:path}", web_file),
        Route("/vendor/{stamp}/{path:path}", vendor_file),
        Route("/assets/plugins/{name}/{path:path}", plugin_asset),
        Route("/app/python-{digest}.bundle", python_archive),
        Route("/app/boot.json", boot_config),
        *auth.routes(),
        Route("/plugins", list_plugins),
        Route("/plugins/agent-tools", list_agent_tools),
        Route("/plugins/{id}", set_plugin_enabled, methods=["PATCH"]),
        *records.routes(),
        *([] if gateway is None else gateway.routes()),
        *plugin_routes,
        *agent_tokens.routes(),
        *agents.routes(),
        Route(MCP_PATH, MCP_OPERATION(agents.endpoint), methods=["GET", "POST", "DELETE"]),
    ]

    @operation(
        "This document: every route, what it takes and what it answers (OpenAPI 3.1)",
        responses={200: {"type": "object", "required": ["openapi", "paths"]}},
    )
    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    routes.append(Route("/openapi.json", openapi, methods=["GET"]))
    document = openapi_document(routes, title="reactor", version=metadata.version("reactor"))
    middleware = [
        Middleware(HostCheck, hosts=hosts),
        Middleware(CrossSiteWriteGuard, origins=origins),
        Middleware(AgentTokensOnlyOnMcp, path=MCP_PATH),
        Middleware(GZipMiddleware, minimum_size=1024),
    ]
    if origins:
        middleware.insert(1, Middleware(CrossOrigin, origins=origins))
    if store.kind == "postgresql":  # other processes may switch a plugin: each request reads the switches
        middleware.insert(0, Middleware(PluginStateSync, read=lambda: _read_plugin_state(store, platform)))
    app = Starlette(
        routes=routes, middleware=middleware, exception_handlers={HTTPException: _http_error}, lifespan=agents.lifespan
    )
    app.state.context = context
    app.state.agents = agents
    app.state.snapshot = runtime["snapshot"]  # its URL, "" for none
    return app


def _read_plugin_state(store: Database, platform: PluginPlatform) -> None:
    """Which plugins are switched off or on, as the database says (the PATCH /plugins/{name} writes)."""
    known = {p["name"] for p in platform.list_plugins()}
    with store.transaction() as db:
        for row in db.execute("SELECT name, enabled FROM plugin_state"):
            if row["name"] in known:
                platform.set_enabled(row["name"], bool(row["enabled"]))


class PluginStateSync:
    """ASGI middleware: before each request, the plugin switches as the shared database holds
    them, so a plugin one server process disabled is disabled in all of them at the next request."""

    def __init__(self, app: Any, *, read: Any) -> None:
        self.app, self.read = app, read

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await run_in_threadpool(self.read)
        await self.app(scope, receive, send)


async def _http_error(request: Request, error: Exception) -> Response:
    """The router's own refusals (no such route, method not allowed) as sentences, like every other."""
    assert isinstance(error, HTTPException)
    headers = {k.lower(): v for k, v in (error.headers or {}).items()}
    if error.status_code == 405:  # a path may be served by several routes: Allow names all their methods
        allowed = sorted({m for r in request.app.router.routes if _serves_path(r, request.scope) for m in r.methods or ()})
        headers["allow"] = ", ".join(allowed)
    sentence = {
        404: f"There is nothing at {request.url.path[:100]!r} on this server.",
        405: f"{request.method} is not allowed on {request.url.path[:100]!r}; use {headers.get('allow', 'another method')}.",
    }.get(error.status_code, error.detail)
    return JSONResponse({"error": sentence}, error.status_code, headers=headers)


def _serves_path(route: Any, scope: Any) -> bool:
    """Whether `route` answers this path, whatever the method (Starlette: a partial match)."""
    if not isinstance(route, Route):
        return False
    match, _ = route.matches(scope)
    return match != Match.NONE


def _while_enabled(platform: PluginPlatform, name: str, route: Route) -> Route:
    """A plugin's route answers 404 while the plugin is disabled, without restarting the server."""
    endpoint = route.endpoint

    @wraps(endpoint)  # keeps its @operation description
    async def guarded(request: Request) -> Response:
        if not platform.is_enabled(name):
            return JSONResponse({"error": f"The plugin {name!r} is disabled."}, 404)
        return await endpoint(request)

    return Route(route.path, guarded, methods=list(route.methods or ()), name=route.name)


def _page_packages(specs: Iterable[PluginSpec]) -> dict[str, Path]:
    """The top-level packages of the plugins' page halves, by name: the page's Python bundle holds
    them (their server files left out). A package that cannot be found is left out too: the page
    then reports that the plugin could not be imported."""
    packages: dict[str, Path] = {}
    for spec in specs:
        top = (spec.page or "").partition(":")[0].split(".")[0]
        if not top or top == "reactor" or top in packages:
            continue
        found = importlib.util.find_spec(top)
        if found is not None and found.submodule_search_locations:
            packages[top] = Path(list(found.submodule_search_locations)[0])
    return packages


def _page_entry(plugin: PluginSpec) -> dict[str, Any]:
    assets = [f"/assets/plugins/{plugin.name}/{a}" for a in plugin.assets]
    return {
        "name": plugin.name,
        "plugin": plugin.page,
        "scripts": [a for a in assets if a.endswith(".js")],
        "styles": [a for a in assets if a.endswith(".css")],
    }


def _early_boot(runtime: dict[str, Any]) -> str:
    """What index.html's head gets in place of EARLY_BOOT_MARKER: a script that starts the reactor
    worker and its Pyodide boot while the page parses, instead of after reactor.js has fetched
    boot.json (web/early-worker.js; reactor.js then finds the worker started)."""
    if not runtime["ready"]:
        return ""  # reactor.js reports what is missing
    interpreter = f"/vendor/{runtime['stamp']}/{PYODIDE_MODULES[0]}"
    start = ", ".join(json.dumps(url) for url in (interpreter, runtime["snapshot"]))
    return "\n  ".join(
        [
            '<link rel="modulepreload" href="/web/early-worker.js">',
            # A failed start is reported by reactor.js, whose boot talks to the same worker.
            f'<script>import("/web/early-worker.js").then((m) => m.startWorker({start})).catch(() => {{}});</script>',
        ]
    )


def _page_headers(early_boot: str, origins: tuple[str, ...], keys_typed: bool = True) -> dict[str, str]:
    """The app page's Content-Security-Policy: scripts only from this server (and the one inline
    start script, by its hash), WebAssembly compiled, workers from blobs (the AI Tool worker),
    connections to this server, and to any http(s) model provider the person configures where a
    person may type a key (`keys_typed`), framed only by this server
    and the allowed origins. Pyodide's runtime evals the JS glue of its own modules, and a
    JavaScript AI Tool is compiled with `new Function` in its worker: hence 'unsafe-eval'."""
    inline = re.findall(r"<script>(.*?)</script>", early_boot, re.S)
    hashes = [f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in inline]
    policy = {
        "default-src": ["'self'"],
        "script-src": ["'self'", "'wasm-unsafe-eval'", "'unsafe-eval'", *hashes],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "connect-src": ["'self'", "http:", "https:"] if keys_typed else ["'self'"],
        "worker-src": ["'self'", "blob:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'self'", *origins],
    }
    return {
        "content-security-policy": "; ".join(f"{k} {' '.join(v)}" for k, v in policy.items()),
        "referrer-policy": "same-origin",
    }


def _site(runtime: dict[str, Any]) -> str:
    return f"/lib/python{runtime['python']}/site-packages"


def _bytecode_for(runtime: dict[str, Any]) -> dict[str, Any]:
    """SourceArchive's bytecode options for the vendored Pyodide (none when it is not vendored):
    ours, and the runtime's Python the page imports after Pyodide's boot (server/runtime_python.py)."""
    if not runtime["ready"]:
        return {}
    return {
        "bytecode": partial(compiled, pyodide=VENDOR / "pyodide", cache=made_folder(runtime["stamp"]) / "bytecode"),
        "cache_tag": "cpython-" + runtime["python"].replace(".", ""),
        "extra": stdlib_sources(VENDOR / "pyodide" / "python_stdlib.zip"),
        "path": [COMPILED_STDLIB],
    }


def snapshot_url(runtime: dict[str, Any], archive: SourceArchive, page_modules: list[str]) -> str:
    """Where the page gets Pyodide's memory snapshot (server/snapshot.py), with `archive` installed
    and what the worker imports at its start imported: reactor, the plugins' `page_modules` (when
    they can be imported there), the stdlib they use. "" for none."""
    if not runtime["ready"]:
        return ""
    made = made_folder(runtime["stamp"]) / "snapshot"
    for plugins in (tuple(dict.fromkeys(page_modules)), ()) if page_modules else ((),):
        name = memory_snapshot(
            VENDOR / "pyodide",
            made,
            runtime["stamp"],
            (*STDLIB_AFTER_BOOT, *REACTOR_AT_START, *plugins),
            bundle=archive.data,
            site=_site(runtime),
        )
        if name:
            return f"/vendor/{runtime['stamp']}/snapshot/{name}"
    return ""


def runtime_manifest() -> dict[str, Any]:
    """What `web/vendor.py` put in place; the page explains how to fix it when it is missing."""
    try:
        manifest = json.loads((VENDOR / "manifest.json").read_text())
    except (OSError, ValueError):
        return {
            "ready": False,
            "stamp": "none",
            "python": "",
            "error": "The browser runtime is not vendored: run `python web/vendor.py` (the README's set-up does).",
        }
    return {"ready": True, **manifest}
