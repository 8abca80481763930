"""The routes that serve the page: index.html, its scripts and styles, the vendored runtime, the
plugins' page assets, the page's Python as one bundle, and boot.json (what the page boots)."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import reactor

from ...errors import ApiError
from ...host.tools import AgentSpec
from ...platform import PluginPlatform
from ...plugin_spec import PluginSpec
from ..api import ANY_FILE, HTML, NO_STORE, REVALIDATED, Call, Reply, declare, routes_of
from ..gateway.config import AssistantConfig
from .assets import IMMUTABLE, REVALIDATE, RenderedPage, SourceArchive, serve_file
from .vendored import ROOT, VENDOR, WEB, Runtime

# What the page never imports: the server tier (plugins' `server.py`, `backend/` and declaration
# `spec.py`; reactor's `server/` and the PluginSpec machinery), the CLI, the test kit, the scaffold.
SERVER_ONLY = {
    "server",
    "server.py",
    "backend",
    "spec.py",
    "plugin_spec.py",
    "cli.py",
    "__main__.py",
    "testing",
    "scaffold.py",
}
# The reactor worker's scripts, as web/early-worker.js names them (tests/test_server.py).
WORKER_SCRIPTS = ("/web/pyodide-boot.js", "/web/reactor-worker.js")
# Where index.html's head gets the start of Pyodide's boot (early_boot).
EARLY_BOOT_MARKER = "<!-- reactor:early-boot (the server puts the start of Pyodide's boot here) -->"
FILE = Reply(content=ANY_FILE, headers=REVALIDATED)
NOT_MODIFIED = Reply(headers=REVALIDATED)
FOREVER = Reply(
    content=ANY_FILE, headers={"cache-control": "immutable: the address changes when the bytes do"}
)
STRING = {"type": "string"}
BOOT = {
    "type": "object",
    "required": ["runtime", "python", "plugins", "services", "agent", "assistant"],
    "properties": {
        "runtime": {
            "type": "object",
            "required": ["interpreter", "ready", "error", "pyodide", "snapshot"],
            "properties": {
                "interpreter": STRING,
                "ready": {"type": "boolean"},
                "error": STRING,
                "pyodide": STRING,
                "snapshot": STRING,
            },
        },
        "python": {
            "type": "object",
            "required": ["bundles", "site"],
            "properties": {"bundles": {"type": "array", "items": STRING}, "site": STRING},
        },
        "plugins": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "plugin", "scripts", "styles", "preload"],
                "properties": {
                    "name": STRING,
                    "plugin": STRING,
                    "scripts": {"type": "array", "items": STRING},
                    "styles": {"type": "array", "items": STRING},
                    "preload": {"type": "array", "items": STRING},
                },
            },
        },
        "services": {"type": "object"},
        "agent": {
            "type": "object",
            "required": ["name", "instructions", "plugins"],
            "properties": {
                "name": STRING,
                "instructions": STRING,
                "plugins": {"type": "array", "items": STRING},
            },
        },
        "assistant": {
            "type": "object",
            "required": ["site", "browserKeys"],
            "properties": {
                "site": {"type": ["object", "null"]},
                "browserKeys": {"type": "boolean"},
            },
        },
    },
}


@dataclass(frozen=True)
class PageSettings:
    """How this server hands out the page: the chat's agent, the site's model (if any), whether
    a person may type a provider's key, and the origins that may embed the page."""

    agent: AgentSpec
    assistant: AssistantConfig | None
    keys_typed: bool
    origins: tuple[str, ...]


def page_archive(runtime: Runtime, platform: PluginPlatform) -> tuple[SourceArchive, list[str]]:
    """The page's Python as one bundle, and the plugins' page modules in it (what the worker
    imports at its start, so the memory snapshot can hold them)."""
    packages = {"reactor": Path(reactor.__file__).parent, **page_packages(platform.all_plugins())}
    archive = SourceArchive(packages, SERVER_ONLY, **runtime.archive_options())
    modules = [spec.page.split(":")[0] for spec in platform.all_plugins() if spec.page]
    return archive, [name for name in modules if name.split(".")[0] in packages]


def page_routes(
    runtime: Runtime, archive: SourceArchive, platform: PluginPlatform, settings: PageSettings
) -> list[Route]:
    """The page's routes over `runtime` (its snapshot made), its Python `archive` and the platform's
    plugins."""
    boot = early_boot(runtime)
    index_page = RenderedPage(
        (ROOT / "index.html").read_text().replace(EARLY_BOOT_MARKER, boot),
        headers=page_headers(boot, settings.origins, settings.keys_typed),
    )
    services = PageServices(runtime, archive, platform, settings, index_page)
    return routes_of(
        index, web_file, vendor_file, plugin_asset, python_archive, boot_config, services=services
    )


@dataclass(frozen=True)
class PageServices:
    """What the page's routes serve, one set per app (`call.services`, routes_of): the runtime,
    the Python bundle, the plugins, the page's settings and its rendered index.html."""

    runtime: Runtime
    archive: SourceArchive
    platform: PluginPlatform
    settings: PageSettings
    index_page: RenderedPage


def _page(call: Call) -> PageServices:
    services: PageServices = call.services
    return services


# The routes, each declared once at import; a request tries them in this order.
@declare(
    "GET",
    ("/", "/index.html"),
    "The demo page",
    replies={200: Reply(content=HTML, headers=REVALIDATED), 304: NOT_MODIFIED},
)
async def index(call: Call) -> Response:
    return _page(call).index_page.response(call.request)


@declare(
    "GET",
    "/web/{path:path}",
    "A file of the page's JavaScript and styles",
    replies={200: FILE, 304: NOT_MODIFIED},
    refusals={404: "No such file."},
)
async def web_file(call: Call) -> Response:
    return serve_file(call.request, WEB, call.path["path"], cache=REVALIDATE)


@declare(
    "GET",
    "/vendor/{stamp}/{path:path}",
    "A file of the vendored runtime (Pyodide; PyScript for the bench), immutable under "
    "its version stamp",
    replies={200: FOREVER},
    refusals={404: "No such file, or a runtime version this server does not serve."},
)
async def vendor_file(call: Call) -> Response:
    runtime = _page(call).runtime
    if call.path["stamp"] != runtime.stamp:
        raise ApiError(
            404, "That runtime version is not served here; reload the page.", field="stamp"
        )
    path = call.path["path"]
    folder = runtime.made if path.startswith("snapshot/") else VENDOR
    return serve_file(call.request, folder, path, cache=IMMUTABLE)


@declare(
    "GET",
    "/assets/plugins/{name}/{path:path}",
    "A page asset of an enabled plugin",
    replies={200: FILE, 304: NOT_MODIFIED},
    refusals={404: "No enabled plugin serves that asset."},
)
async def plugin_asset(call: Call) -> Response:
    name, path = call.path["name"], call.path["path"]
    enabled = _page(call).platform.enabled_plugins()
    plugin = next((p for p in enabled if p.name == name), None)
    if plugin is None or path not in plugin.assets:
        raise ApiError(404, f"Plugin {name[:80]!r} serves no such asset.", field="path")
    return serve_file(call.request, plugin.folder, path, cache=REVALIDATE)


@declare(
    "GET",
    "/app/python-{digest}.bundle",
    "The page's Python as one bundle, named by its hash",
    replies={200: FOREVER},
    refusals={404: "An archive of another start of the server."},
)
async def python_archive(call: Call) -> Response:
    archive = _page(call).archive
    if call.path["digest"] != archive.digest:
        raise ApiError(404, "That archive is gone; reload the page.", field="digest")
    return archive.response(call.request)


@declare(
    "GET",
    "/app/boot.json",
    "What the page boots: runtime, Python bundle, plugins, services, the chat's agent",
    replies={200: Reply(BOOT, headers=NO_STORE)},
)
async def boot_config(call: Call) -> Response:
    page = _page(call)
    runtime, archive, settings = page.runtime, page.archive, page.settings
    enabled = page.platform.enabled_plugins()
    agent, assistant = settings.agent, settings.assistant
    return JSONResponse(
        {
            "runtime": runtime.for_page(),
            "python": {"bundles": [archive.url], "site": runtime.site},
            "plugins": [page_entry(p) for p in enabled if p.page],
            "services": {k: v for p in enabled for k, v in p.page_services.items()},
            "agent": {
                "name": agent.name,
                "instructions": agent.instructions,
                "plugins": list(agent.plugins),
            },
            "assistant": {
                "site": None if assistant is None else assistant.for_page(),
                "browserKeys": settings.keys_typed,
            },
        },
        headers={"cache-control": "no-store"},
    )


def page_packages(specs: Iterable[PluginSpec]) -> dict[str, Path]:
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


def page_entry(plugin: PluginSpec) -> dict[str, Any]:
    assets = [f"/assets/plugins/{plugin.name}/{a}" for a in plugin.assets]
    return {
        "name": plugin.name,
        "plugin": plugin.page,
        "scripts": [a for a in assets if a.endswith(".js")],
        "styles": [a for a in assets if a.endswith(".css")],
        "preload": list(plugin.preload),
    }


def early_boot(runtime: Runtime) -> str:
    """What index.html's head gets in place of EARLY_BOOT_MARKER: a script that starts the reactor
    worker and its Pyodide boot while the page parses (as web/early-worker.js's startWorker does,
    which then finds it started), instead of after a module has been fetched and reactor.js has
    fetched boot.json. The worker's module imports Pyodide's loader beside the worker's scripts,
    so they all download at once."""
    if not runtime.ready:
        return ""  # reactor.js reports what is missing
    scripts = json.dumps([runtime.interpreter, *WORKER_SCRIPTS])
    start = json.dumps([runtime.interpreter, runtime.snapshot])
    return (
        "<script>{"
        "performance.mark('reactor:pyodide-start');"
        "const at = (url) => url && JSON.stringify(new URL(url, location.href).href);"
        f"const module = {scripts}.map((url) => `import ${{at(url)}};`).join('')"
        f" + `import {{ startPyodide }} from ${{at({json.dumps(WORKER_SCRIPTS[-1])})}};`"
        f" + `startPyodide(${{{start}.map(at).join(', ')}}).catch(() => {{}});`;"
        "const blob = URL.createObjectURL(new Blob([module], {type: 'text/javascript'}));"
        "const worker = new Worker(blob, {type: 'module', name: 'reactor'});"
        "window[Symbol.for('reactor.worker')] = worker;"
        "}</script>"
    )


def page_headers(
    early_boot: str, origins: tuple[str, ...], keys_typed: bool = True
) -> dict[str, str]:
    """The app page's Content-Security-Policy: scripts only from this server (and the one inline
    start script, by its hash), WebAssembly compiled, workers from blobs (the AI Tool worker),
    connections to this server, and to any http(s) model provider the person configures where a
    person may type a key (`keys_typed`), framed only by this server
    and the allowed origins. Pyodide's runtime evals the JS glue of its own modules, and a
    JavaScript AI Tool is compiled with `new Function` in its worker: hence 'unsafe-eval'."""
    inline = re.findall(r"<script>(.*?)</script>", early_boot, re.S)
    hashes = [
        f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in inline
    ]
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
