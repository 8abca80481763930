"""Prometheus metrics at `GET /metrics`, in Prometheus' text format: requests and their latency
by route, the pages linked for agents, agents' calls by outcome, the site model's tokens, the
database's errors.

Each app has its own registry (never prometheus_client's global one), so two apps in one process
do not mix their counts. Each server process exports its own metrics: with several processes on
one PostgreSQL, Prometheus scrapes each process's port and sums them (`sum by (route)`);
prometheus_client's multiprocess mode is not used.

A request's `route` label is its route's template (`/api/decks/{id}`), never its path, and every
path no route serves counts as `unmatched`, so a label has as many values as the app has routes;
a method outside HTTP's usual ones counts as `other`, an agent call's outcome outside the
envelope's codes as `other`.

`/metrics` answers a request made straight to the server from this machine (the peer is loopback
and no proxy header names another client: behind a proxy on loopback every public request would
look local), or one carrying `Authorization: Bearer <the metrics token>` (`--metrics-token`,
`REACTOR_METRICS_TOKEN`; compared in constant time, never logged). Anything else is a 401 with a
sentence rather than a 404: /openapi.json lists the route, so hiding it would hide nothing, and
an operator setting up Prometheus reads what to send.

Other modules count through one call each: `Database.on_error` (set here), the gateway's relay
(`metrics_of(scope)`), `/mcp`'s call_tool (`counted`)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import (
    FAILURE_CODES,
    ApiError,
    DatabaseBusy,
    DatabaseError,
    DeclarationError,
    UniqueViolation,
)
from .agents.tokens import bearer_token
from .api import Call, Reply, declare, routes_of, services_of
from .database import Database

if TYPE_CHECKING:
    from .agents.relay import PageRelay

PATH = "/metrics"
SCOPE_KEY = "reactor.metrics"
UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OUTCOMES = frozenset({"ok", "cancelled", "other", *FAILURE_CODES})
# A proxy names the client it forwards for in one of these: then the peer is not the client.
PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")
TEXT = {"text/plain": {"schema": {"type": "string"}}}


def token_problem(token: str) -> str:
    """What is wrong with a metrics token, in a sentence that does not hold it; "" when the
    server can take it ("" is no token)."""
    printable = token.isascii() and token.isprintable() and " " not in token
    if not token or (16 <= len(token) <= 512 and printable):
        return ""
    return (
        "--metrics-token (REACTOR_METRICS_TOKEN) must be 16 to 512 printable ASCII characters "
        "without spaces, such as `python3 -c 'import secrets; print(secrets.token_urlsafe())'` "
        "prints."
    )


class Metrics:
    """One app's registry and metrics, and its `/metrics` route."""

    def __init__(self, database: Database, relay: PageRelay, token: str = "") -> None:
        problem = token_problem(token)
        if problem:
            raise DeclarationError(problem, owner="metrics", field="--metrics-token")
        self._token = hashlib.sha256(token.encode()).digest() if token else b""
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "reactor_http_requests",
            "HTTP requests answered, by route template, method and status.",
            ["route", "method", "status"],
            registry=registry,
        )
        self.latency = Histogram(
            "reactor_http_request_duration_seconds",
            "Time from a request's start to its answer's end (a stream's whole length), by route "
            "template and method.",
            ["route", "method"],
            registry=registry,
        )
        self.pages = Gauge(
            "reactor_agent_pages_linked",
            "Pages whose link for desktop agents this process holds.",
            registry=registry,
        )
        self.pages.set_function(lambda: len(relay.pages))
        self.agent_calls = Counter(
            "reactor_agent_calls",
            "tools/call requests on /mcp, by outcome: ok, or the error code of the answer.",
            ["outcome"],
            registry=registry,
        )
        self.gateway_tokens = Counter(
            "reactor_gateway_tokens",
            "Tokens the site's model's answers were charged, by kind (input, output).",
            ["kind"],
            registry=registry,
        )
        self.database_errors = Counter(
            "reactor_database_errors",
            "Database statements that failed, by kind: busy (locked, a serialization failure, "
            "unreachable) or error.",
            ["kind"],
            registry=registry,
        )
        for kind in ("input", "output"):
            self.gateway_tokens.labels(kind)
        for kind in ("busy", "error"):
            self.database_errors.labels(kind)
        database.on_error = self.database_error

    def database_error(self, error: DatabaseError) -> None:
        if isinstance(error, UniqueViolation):  # a conflict the store answers itself
            return
        self.database_errors.labels("busy" if isinstance(error, DatabaseBusy) else "error").inc()

    def charged(self, input: int, output: int) -> None:
        """The tokens one answer of the site's model was charged (gateway/relay.py)."""
        if input:
            self.gateway_tokens.labels("input").inc(input)
        if output:
            self.gateway_tokens.labels("output").inc(output)

    def agent_call(self, outcome: str) -> None:
        self.agent_calls.labels(outcome if outcome in OUTCOMES else "other").inc()

    def allowed(self, request: Request) -> None:
        """None for a request straight from this machine or with the metrics token; else a 401."""
        given = bearer_token(request.headers)
        if (
            self._token
            and given
            and hmac.compare_digest(hashlib.sha256(given.encode()).digest(), self._token)
        ):
            return
        if _is_loopback(request.client.host if request.client else "") and not any(
            name in request.headers for name in PROXY_HEADERS
        ):
            return
        how = (
            ", or carrying the metrics token as `Authorization: Bearer …`."
            if self._token
            else "; to scrape it from elsewhere, start the server with a metrics token "
            "(REACTOR_METRICS_TOKEN) and send it as `Authorization: Bearer …`."
        )
        raise ApiError(
            401,
            f"{PATH} answers only requests made straight to the server from its own machine "
            f"(not through a proxy){how}",
            headers={"www-authenticate": 'Bearer realm="reactor metrics"'},
        )

    def routes(self) -> list[Route]:
        return routes_of(metrics, services=MetricsServices(self.registry, self.allowed))


@dataclass(frozen=True)
class MetricsServices:
    """What the handler works with, one set per app: it takes it from the call
    (`call.services`, routes_of)."""

    registry: CollectorRegistry
    allowed: Callable[[Request], None]  # Metrics.allowed: the request's 401, or None


def _allowed(request: Request) -> None:
    """The declaration's `who`: the app's Metrics.allowed."""
    services: MetricsServices = services_of(request)
    services.allowed(request)


@declare(
    "GET",
    PATH,
    "This process's metrics, in Prometheus' text format (each server process its own)",
    replies={200: Reply(content=TEXT)},
    refusals={
        401: "Neither straight from this machine nor with the metrics token.",
    },
    who=_allowed,
)
async def metrics(call: Call) -> Response:
    services: MetricsServices = call.services
    return Response(generate_latest(services.registry), media_type=CONTENT_TYPE_LATEST)


def metrics_of(scope: Scope) -> Metrics | None:
    """The metrics of the app serving this request (None outside one)."""
    return scope.get(SCOPE_KEY)  # type: ignore[no-any-return]


class MetricsMiddleware:
    """ASGI middleware, the outermost: each HTTP request counted by its route's template, method
    and status, and timed to its answer's end; the request's scope carries the metrics for the
    modules that count what happens inside it."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope[SCOPE_KEY] = self.metrics
        status = 500  # what the server answers when the app raises before it answers

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        started = time.perf_counter()
        try:
            await self.app(scope, receive, sending)
        finally:
            # The router sets the route it matched (Starlette 0.41 and later).
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            method = scope["method"] if scope["method"] in METHODS else "other"
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.latency.labels(route, method).observe(time.perf_counter() - started)


CallTool = Callable[..., Awaitable[Any]]


def counted(call_tool: CallTool) -> CallTool:
    """/mcp's call_tool, each call counted by its outcome: `ok`, the code of a tool error
    (`timeout`, `unavailable`, `not_found`, …), or `cancelled` when the agent cancelled it."""

    @wraps(call_tool)
    async def counting(ctx: Any, *args: Any) -> Any:
        outcome = "failed"
        try:
            result = await call_tool(ctx, *args)
            outcome = _outcome(result)
            return result
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            request = getattr(ctx, "request", None)
            metrics = None if request is None else metrics_of(request.scope)
            if metrics is not None:
                metrics.agent_call(outcome)

    return counting


def _outcome(result: dict[str, Any]) -> str:
    """A CallToolResult's outcome, from its wire form."""
    if not result.get("isError"):
        return "ok"
    structured = result.get("structuredContent")
    error = structured.get("error") if isinstance(structured, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else "failed"


def _is_loopback(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback
