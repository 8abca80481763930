"""The Python tier: one ASGI app serving the page, its runtime, the plugins' bundles and data."""

from __future__ import annotations

import json
import re
import sys
from functools import partial
from pathlib import Path
from typing import Any, Iterable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

import reactor
import reactor_plugins

from ..host.tools import AgentSpec
from ..platform import PluginPlatform
from .assets import IMMUTABLE, REVALIDATE, RenderedPage, SourceArchive, serve_file
from .auth import Auth
from .bytecode import compiled
from .context import ServerContext
from .cors import CrossOrigin, check_origins
from .database import Database
from .plugin_records import PluginRecords
from .requests import read_json
from .runtime_python import COMPILED_STDLIB, pyscript_sources, stdlib_sources

ROOT = Path(__file__).resolve().parents[3]
WEB = ROOT / "web"
VENDOR = WEB / "vendor"
# What the page never imports: the server tier (plugins' `server.py` and `backend/`), the CLI.
SERVER_ONLY = {"server", "server.py", "backend", "cli.py", "__main__.py"}
# Where index.html's head gets the start of Pyodide's boot (_early_boot).
EARLY_BOOT_MARKER = "<!-- reactor:early-boot (the server puts the start of Pyodide's boot here) -->"
# Pyodide's module PyScript is given (via web/early-pyodide.js), and the one it imports first.
PYODIDE_MODULES = ["pyodide/pyodide.mjs", "pyodide/pyodide.asm.mjs"]
# PyScript's own plugins the page does not use; each would be one more download at boot.
PYSCRIPT_PLUGINS_OFF = ["!codemirror", "!py-editor", "!py-game", "!py-terminal", "!deprecations-manager", "!donkey"]
PLUGIN_STATE = "CREATE TABLE IF NOT EXISTS plugin_state (name TEXT PRIMARY KEY, enabled INTEGER NOT NULL)"


class AiToolsServerPlugin:
    """Puts the AI Tools page plugin in the page; the records themselves are `plugin_records`."""

    name = "ai-tools"
    description = "Functions written for this account, offered to the agent as tools."
    page_plugin = "reactor.ai_tools.plugin:AI_TOOLS_PAGE_PLUGIN"


def default_plugins() -> list[Any]:
    from reactor_plugins.cms.server import CmsServerPlugin
    from reactor_plugins.decks.server import DecksServerPlugin
    from reactor_plugins.maintenance.server import MaintenanceServerPlugin

    return [AiToolsServerPlugin(), DecksServerPlugin(), MaintenanceServerPlugin(), CmsServerPlugin()]


def create_app(data_dir: str | Path, *, plugins: Iterable[Any] | None = None, seed_demo: bool = True,
               agent_spec: dict[str, Any] | None = None, allow_origins: Iterable[str] = ()) -> Starlette:
    """Build the app over `data_dir/reactor.sqlite3`; plugins set up their tables on start.

    `agent_spec` is the page chat's agent (name, instructions, plugins; never tools); by default
    the `agent.json` beside index.html. `allow_origins` are the origins of other pages that may
    embed reactor from this server (`http://127.0.0.1:5500`); only they get CORS headers.
    """
    origins = check_origins(allow_origins)
    database = Database(Path(data_dir) / "reactor.sqlite3")
    database.migrate(PLUGIN_STATE)
    platform = PluginPlatform(default_plugins() if plugins is None else plugins)
    with database.transaction() as db:
        for row in db.execute("SELECT name, enabled FROM plugin_state"):
            if row["name"] in {p["name"] for p in platform.list_plugins()}:
                platform.set_enabled(row["name"], bool(row["enabled"]))
    auth = Auth(database, seed=seed_demo)
    records = PluginRecords(database, auth, reserved={p["name"] for p in platform.list_plugins()})
    context = ServerContext(database, auth, platform, records)
    plugin_routes: list[BaseRoute] = []
    for plugin in _all(platform):
        if hasattr(plugin, "setup"):
            plugin.setup(context, seed=seed_demo)
        for route in getattr(plugin, "routes", lambda context: [])(context):
            plugin_routes.append(_while_enabled(platform, plugin.name, route))
    runtime = _runtime_manifest()
    archive = SourceArchive(
        {"reactor": Path(reactor.__file__).parent, "reactor_plugins": Path(reactor_plugins.__file__).parent},
        SERVER_ONLY, **_bytecode_for(runtime),
    )

    index_page = RenderedPage((ROOT / "index.html").read_text().replace(EARLY_BOOT_MARKER, _early_boot(runtime)))

    async def index(request: Request) -> Response:
        return index_page.response(request)

    async def web_file(request: Request) -> Response:
        return serve_file(request, WEB, request.path_params["path"], cache=REVALIDATE)

    async def vendor_file(request: Request) -> Response:
        if request.path_params["stamp"] != runtime["stamp"]:
            return JSONResponse({"error": "That runtime version is not served here; reload the page."}, 404)
        return serve_file(request, VENDOR, request.path_params["path"], cache=IMMUTABLE)

    async def plugin_asset(request: Request) -> Response:
        name = request.path_params["name"]
        plugin = next((p for p in platform.enabled_plugins() if p.name == name), None)
        if plugin is None or request.path_params["path"] not in getattr(plugin, "page_assets", ()):
            return JSONResponse({"error": f"Plugin {name!r} serves no such asset."}, 404)
        return serve_file(request, _folder_of(plugin), request.path_params["path"], cache=REVALIDATE)

    async def python_archive(request: Request) -> Response:
        if request.path_params["digest"] != archive.digest:
            return JSONResponse({"error": "That archive is gone; reload the page."}, 404)
        return archive.response(request)

    agent = AgentSpec.from_dict(json.loads((ROOT / "agent.json").read_text()) if agent_spec is None else agent_spec)

    async def boot_config(request: Request) -> Response:
        base = f"/vendor/{runtime['stamp']}"
        return JSONResponse(
            {
                "runtime": {"pyscript": f"{base}/pyscript/core.js", "ready": runtime["ready"],
                            "error": runtime.get("error", ""), "preload": [f"{base}/{m}" for m in runtime["preload"]],
                            "pyodide": runtime.get("pyodide", "")},
                "pyscript": {"interpreter": f"{base}/{PYODIDE_MODULES[0]}", "plugins": PYSCRIPT_PLUGINS_OFF},
                "python": {"bundles": [archive.url], "site": f"/lib/python{runtime['python']}/site-packages"},
                "plugins": [_page_entry(p) for p in platform.enabled_plugins() if hasattr(p, "page_plugin")],
                "services": {k: v for p in platform.enabled_plugins() for k, v in getattr(p, "page_services", {}).items()},
                "agent": {"name": agent.name, "instructions": agent.instructions, "plugins": list(agent.plugins)},
            },
            headers={"cache-control": "no-store"},
        )

    async def list_plugins(request: Request) -> Response:
        """Server plugins, then the records the user can see (without their code)."""
        visible = [{k: v for k, v in r.items() if k != "code"} for r in records.visible(auth.user_for(request))]
        location = request.query_params.get("location")
        if location:
            return JSONResponse([r for r in visible if r["location"] == location], headers={"cache-control": "no-store"})
        return JSONResponse(platform.list_plugins() + visible, headers={"cache-control": "no-store"})

    async def list_agent_tools(request: Request) -> Response:
        bundles = platform.collect_agent_tools() + records.agent_tools(auth.user_for(request))
        return JSONResponse(bundles, headers={"cache-control": "no-store"})

    async def set_plugin_enabled(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in {p["name"] for p in platform.list_plugins()}:
            return JSONResponse({"error": f"There is no plugin {name!r}."}, 404)
        body = await read_json(request, limit=1024)
        if isinstance(body, Response):
            return body
        if set(body) != {"enabled"} or not isinstance(body["enabled"], bool):
            return JSONResponse({"error": 'Send exactly {"enabled": true} or {"enabled": false}.'}, 422)
        with database.transaction() as db:
            db.execute("INSERT OR REPLACE INTO plugin_state (name, enabled) VALUES (?, ?)", (name, body["enabled"]))
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
        Route("/plugins/{name}", set_plugin_enabled, methods=["PATCH"]),
        *records.routes(),
        *plugin_routes,
    ]
    middleware = [Middleware(GZipMiddleware, minimum_size=1024)]
    if origins:
        middleware.insert(0, Middleware(CrossOrigin, origins=origins))
    app = Starlette(routes=routes, middleware=middleware)
    app.state.context = context
    return app


def _all(platform: PluginPlatform) -> list[Any]:
    return [platform.get_plugin(p["name"]) for p in platform.list_plugins()]


def _while_enabled(platform: PluginPlatform, name: str, route: Route) -> Route:
    """A plugin's route answers 404 while the plugin is disabled, without restarting the server."""
    endpoint = route.endpoint

    async def guarded(request: Request) -> Response:
        if not platform.is_enabled(name):
            return JSONResponse({"error": f"The plugin {name!r} is disabled."}, 404)
        return await endpoint(request)

    return Route(route.path, guarded, methods=list(route.methods or ()), name=route.name)


def _folder_of(plugin: Any) -> Path:
    return Path(sys.modules[type(plugin).__module__].__file__).parent  # type: ignore[arg-type]


def _page_entry(plugin: Any) -> dict[str, Any]:
    assets = [f"/assets/plugins/{plugin.name}/{a}" for a in getattr(plugin, "page_assets", ())]
    return {
        "name": plugin.name,
        "plugin": plugin.page_plugin,
        "scripts": [a for a in assets if a.endswith(".js")],
        "styles": [a for a in assets if a.endswith(".css")],
    }


def _early_boot(runtime: dict[str, Any]) -> str:
    """What index.html's head gets in place of EARLY_BOOT_MARKER: preloads and a script that start
    Pyodide's boot while the page parses, instead of after reactor.js has fetched boot.json
    (web/early-pyodide.js; reactor.js's own call then finds the boot under way). Only the boot's
    own first modules: more requests at once would slow these on a busy server (bench/RESULTS.md)."""
    if not runtime["ready"]:
        return ""  # reactor.js reports what is missing
    interpreter, *first = [f"/vendor/{runtime['stamp']}/{module}" for module in PYODIDE_MODULES]
    start = f"m.startPyodide({json.dumps(interpreter)}, {json.dumps(runtime['pyodide'])})"
    return "\n  ".join([
        *(f'<link rel="modulepreload" href="{href}">' for href in ("/web/early-pyodide.js", interpreter, *first)),
        # A failed start is reported by reactor.js, whose boot awaits the same promise.
        f'<script>import("/web/early-pyodide.js").then((m) => {start}).catch(() => {{}});</script>',
    ])


def _bytecode_for(runtime: dict[str, Any]) -> dict[str, Any]:
    """SourceArchive's bytecode options for the vendored Pyodide (none when it is not vendored):
    ours, and the runtime's Python the page imports after Pyodide's boot (server/runtime_python.py)."""
    if not runtime["ready"]:
        return {}
    return {"bytecode": partial(compiled, pyodide=VENDOR / "pyodide", cache=VENDOR / "bytecode"),
            "cache_tag": "cpython-" + runtime["python"].replace(".", ""),
            "extra": stdlib_sources(VENDOR / "pyodide" / "python_stdlib.zip"),
            "compiled_only": pyscript_sources(VENDOR / "pyscript"), "path": [COMPILED_STDLIB]}


def _runtime_manifest() -> dict[str, Any]:
    """What `web/vendor.py` put in place; the page explains how to fix it when it is missing."""
    try:
        manifest = json.loads((VENDOR / "manifest.json").read_text())
    except (OSError, ValueError):
        return {"ready": False, "stamp": "none", "python": "", "preload": [],
                "error": "The browser runtime is not vendored: run `python web/vendor.py` (the README's set-up does)."}
    return {"ready": True, **manifest, "preload": _startup_modules()}


def _startup_modules() -> list[str]:
    """The runtime's modules every boot imports, one after another (core.js, its static chunk,
    the error chunk it imports at start, Pyodide's two): the page preloads them all at once."""
    pyscript = VENDOR / "pyscript"
    chunks = re.findall(r'from"\./([\w.-]+\.js)"', (pyscript / "core.js").read_text())
    errors = sorted(path.name for path in pyscript.glob("error-*.js"))
    return [*PYODIDE_MODULES, "pyscript/core.js",
            *(f"pyscript/{name}" for name in [*chunks, *errors])]
