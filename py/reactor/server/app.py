"""The Python tier: one ASGI app serving the page, its runtime, the plugins' bundles and data,
composed of the route modules of each concept (runtime/page.py, auth/sessions.py, plugins/,
gateway/, agents/, and the server plugins' routes)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from functools import wraps
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..host.tools import AgentSpec
from ..platform import PluginPlatform
from ..plugin_spec import PluginSpec, discover_plugins
from .agents.mcp import MCP_OPERATION, Agents
from .agents.mcp import PATH as MCP_PATH
from .agents.oauth import ACCESS_PREFIX, CLIENT_PATHS, REFRESH_PREFIX, UNAUTHENTICATED_PATHS, OAuth
from .agents.tokens import PREFIX, AgentTokens, AgentTokensOnlyOnMcp
from .api import (
    Call,
    Declaration,
    Refusal,
    Reply,
    declaration_of,
    declare,
    error_response,
    refusals_of,
    routes_of,
)
from .auth.cors import CrossOrigin, check_origins
from .auth.protection import LOOPBACK_HOSTS, CrossSiteWriteGuard, HostCheck, check_hosts
from .auth.sessions import Auth
from .database import Database
from .faults import ANSWERS, SafetyNet
from .gateway.config import AssistantConfig
from .gateway.route import Gateway
from .health import PATHS as HEALTH_PATHS
from .health import Readiness, health_routes
from .logs import RequestLog
from .metrics import Metrics, MetricsMiddleware
from .openapi import openapi_document
from .plugins.context import ServerContext
from .plugins.records import PluginRecords
from .plugins.switches import STEPS as PLUGIN_STATE
from .plugins.switches import PluginStateSync, plugin_routes, read_plugin_state
from .proxies import ForwardedHeaders, check_proxies, check_public_url
from .runtime.assets import accepted_codings
from .runtime.page import PageSettings, page_archive, page_routes
from .runtime.vendored import ROOT, Runtime, runtime_manifest, snapshot_url
from .threads.routes import Threads
from .threads.store import ThreadLimits, ThreadStore

__all__ = ["Runtime", "create_app", "make_snapshot", "runtime_manifest", "snapshot_url"]
DOCUMENT = {
    "type": "object",
    "required": ["openapi", "info", "paths"],
    "properties": {
        "openapi": {"const": "3.1.0"},
        "info": {"type": "object"},
        "paths": {"type": "object"},
    },
}


def make_snapshot(plugins: Iterable[PluginSpec] | None = None) -> str:
    """Make (or find) the memory snapshot a page of these plugins restores (by default the
    installed ones), as create_app would at its start; its URL, "" for none. `./dev` calls it
    once so that the first start of the demo does not wait for it."""
    platform = PluginPlatform(discover_plugins() if plugins is None else plugins)
    vendored = runtime_manifest()
    return vendored.with_snapshot(*page_archive(vendored, platform)).snapshot


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
    trust_proxies: Iterable[str] = (),
    public_url: str = "",
    metrics_token: str = "",
    threads: ThreadLimits | None = None,
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

    `trust_proxies` are the addresses (or networks) of the proxies whose `X-Forwarded-For` and
    `X-Forwarded-Proto` count (server/proxies.py; none by default). `public_url` is the origin
    people see (`https://reactor.example.org:8443`): its host is served, and sentences that
    tell a person an address use it.
    `metrics_token` lets a scraper not on this machine read /metrics (server/metrics.py).
    `threads` are the limits of the signed-in people's kept conversations (server/threads/),
    and how many days one untouched is kept (by default: for ever).
    """
    origins = check_origins(allow_origins)
    public = check_public_url(public_url) if public_url else ""
    hosts = check_hosts([*allow_hosts, *([urlsplit(public).hostname or ""] if public else [])])
    proxies = [str(network) for network in check_proxies(trust_proxies)]
    store = Database(database or Path(data_dir) / "reactor.sqlite3")
    platform = PluginPlatform(discover_plugins() if plugins is None else plugins)
    # Several processes may start at once on one database: their migrations and seeds take turns.
    with store.setup_lock():
        store.migrate("plugin_state", PLUGIN_STATE)
        read_plugin_state(store, platform)
        auth = Auth(store, seed=seed_demo)
        records = PluginRecords(store, auth, reserved={p["name"] for p in platform.list_plugins()})
        context = ServerContext(store, auth, platform, records)
        gateway = None if assistant is None else Gateway(assistant, store, auth)
        agent_tokens = AgentTokens(store, auth)
        oauth = OAuth(store, auth)  # agents allowed by the person, on this server's own pages
        kept = Threads(
            ThreadStore(store, threads), auth, None if gateway is None else gateway.streaming
        )
        kept.purge_when_due()
        # /mcp and the pages it relays to (server/agents/)
        agents = Agents(auth, agent_tokens, origins, store, oauth.grants, public)
        if gateway is not None:  # kept replies reached from every process (gateway/shared.py)
            gateway.share(agents.relay, agents.bus)
        server_plugin_routes = _server_plugin_routes(platform, context, seed_demo)
    agent = AgentSpec.from_dict(
        json.loads((ROOT / "agent.json").read_text()) if agent_spec is None else agent_spec
    )
    vendored = runtime_manifest()
    archive, page_modules = page_archive(vendored, platform)
    runtime = vendored.with_snapshot(archive, page_modules)
    settings = PageSettings(
        agent, assistant, assistant is None if browser_keys is None else browser_keys, origins
    )
    (mcp,) = routes_of(MCP_OPERATION(agents.endpoint))
    metrics = Metrics(store, agents.relay, metrics_token)
    routes: list[BaseRoute] = [
        *page_routes(runtime, archive, platform, settings),
        *auth.routes(),
        *plugin_routes(context),
        *records.routes(),
        *([] if gateway is None else gateway.routes()),
        *server_plugin_routes,
        *agent_tokens.routes(),
        *oauth.routes(),
        *kept.routes(),
        *agents.routes(),
        *health_routes(Readiness(store, lambda: agents.endpoint.manager is not None)),
        *metrics.routes(),
        mcp,
    ]
    middleware = [
        Middleware(HostCheck, hosts=hosts),
        Middleware(CrossSiteWriteGuard, origins=origins, exempt=CLIENT_PATHS),
        Middleware(
            AgentTokensOnlyOnMcp,
            path=MCP_PATH,
            prefixes=(PREFIX, ACCESS_PREFIX, REFRESH_PREFIX),
            unread=UNAUTHENTICATED_PATHS,
        ),
        Middleware(Compression, mcp_path=MCP_PATH),
    ]
    if origins:
        middleware.insert(1, Middleware(CrossOrigin, origins=origins))
    # other processes may switch a plugin: each request reads the switches, but those of /mcp,
    # whose tools are the page's (a read there took a tenth of an agent's call)
    if store.kind == "postgresql":
        middleware.insert(
            0,
            Middleware(
                PluginStateSync,
                database=store,
                platform=platform,
                skip=(*HEALTH_PATHS, "/metrics", MCP_PATH),
            ),
        )
    # In front of all: the client and scheme a trusted proxy names, then the request's id and log,
    # the metrics (which read the route matched, and see every answer); then an exception nothing
    # answered is answered in JSON (server/faults.py).
    middleware[:0] = [
        Middleware(ForwardedHeaders, proxies=proxies),
        Middleware(RequestLog),
        Middleware(MetricsMiddleware, metrics=metrics),
        Middleware(SafetyNet),
    ]
    # the document lists what each middleware declares it refuses
    routes.append(_openapi_route(routes, refusals_of(middleware)))
    # A request tries the routes in order, a pattern each: /mcp first, as every agent call is one.
    routes.remove(mcp)
    routes.insert(0, mcp)
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers=ANSWERS,  # server/faults.py: where an error becomes its answer
        lifespan=agents.lifespan,
    )
    app.state.context = context
    app.state.agents = agents
    app.state.threads = kept
    app.state.snapshot = runtime.snapshot  # its URL, "" for none
    return app


class Compression:
    """ASGI middleware: gzip for an answer of 1 KiB or more, but on /mcp from 64 KiB only: an
    agent's answers are JSON it reads at once, mostly over loopback, where compressing a small
    one (zlib's set-up alone is ~0.06 ms) costs more time than sending its bytes."""

    def __init__(self, app: ASGIApp, *, mcp_path: str) -> None:
        self.app, self.mcp_path = app, mcp_path
        self.pages = GZipMiddleware(app, minimum_size=1024)
        self.agents = GZipMiddleware(app, minimum_size=64 * 1024)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "gzip" not in accepted_codings(
            Headers(scope=scope).get("accept-encoding", "")
        ):  # GZipMiddleware reads "gzip" anywhere in the header as a yes, "gzip;q=0" too
            await self.app(scope, receive, send)
            return
        chosen = self.agents if scope.get("path") == self.mcp_path else self.pages
        await chosen(scope, receive, send)


def _server_plugin_routes(
    platform: PluginPlatform, context: ServerContext, seed: bool
) -> list[BaseRoute]:
    """Each server plugin set up (its tables, its seed) and its routes, each answering 404 while
    the plugin is disabled."""
    routes: list[BaseRoute] = []
    for spec in platform.all_plugins():
        half = platform.server_half(spec.name)
        if half is None:
            continue
        half.setup(context, seed=seed)
        routes += [_while_enabled(platform, spec.name, route) for route in half.routes(context)]
    return routes


@dataclasses.dataclass(frozen=True)
class OpenApiServices:
    """What `openapi` serves, one per app: it takes it from the call (`call.services`,
    routes_of)."""

    document: dict[str, Any]


@declare(
    "GET",
    "/openapi.json",
    "This document: every route, what it takes and what it answers (OpenAPI 3.1)",
    replies={200: Reply(DOCUMENT)},
)
async def openapi(call: Call) -> Response:
    services: OpenApiServices = call.services
    return JSONResponse(services.document)


def _openapi_route(routes: list[BaseRoute], refusals: list[Refusal]) -> Route:
    """/openapi.json, whose document lists `routes` and itself."""
    document = openapi_document(
        [*routes, *routes_of(openapi)],
        title="reactor",
        version=metadata.version("reactor"),
        refusals=refusals,
    )
    (route,) = routes_of(openapi, services=OpenApiServices(document))
    return route


def _while_enabled(platform: PluginPlatform, name: str, route: BaseRoute) -> BaseRoute:
    """A plugin's route answers 404 while the plugin is disabled, without restarting the server;
    its declaration says so."""
    if not isinstance(route, Route):
        return route
    endpoint = route.endpoint

    @wraps(endpoint)
    async def guarded(request: Request) -> Response:
        if not platform.is_enabled(name):
            return error_response(404, f"The plugin {name!r} is disabled.")
        return await endpoint(request)

    declaration = declaration_of(endpoint)
    if declaration is not None:
        guarded.declaration = _or_disabled(declaration, name)  # type: ignore[attr-defined]
    return Route(route.path, guarded, methods=list(route.methods or ()), name=route.name)


def _or_disabled(declaration: Declaration, name: str) -> Declaration:
    """`declaration`, saying that it answers 404 while plugin `name` is disabled."""
    page = declaration.replies.get(404)
    if page is None:
        return dataclasses.replace(
            declaration, refusals={404: f"The plugin {name!r} is disabled.", **declaration.refusals}
        )
    content = {
        **(page.content or {}),
        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}},
    }
    return dataclasses.replace(
        declaration,
        replies={**declaration.replies, 404: dataclasses.replace(page, content=content)},
    )
