"""Where an error becomes an answer, in the project's JSON (api.error_answer), never
Starlette's plain text.

`answer`, the app's exception handler (`ANSWERS`), answers what a route raised: a refusal
(ApiError: its status and sentence), a database fault (a 503 with Retry-After), the router's own
404 and 405 (with the path's true Allow). It answers inside the middleware, so an answer to an
allowed origin carries its CORS headers like any other.

`SafetyNet` is the app's last net: an exception that nothing answered, raised before the answer
started, is answered the same way — a database fault raised in a middleware (the plugin switches
read on each request) or a WebSocket's handshake is a 503 with Retry-After; anything else a 500
with a sentence, its traceback logged once. Once an HTTP answer has started it cannot be
replaced: the exception goes on to the server, which logs it and ends the connection. A WebSocket
the database fails after its handshake (a page's link for agents) is closed with 1013, "try again
later", and the sentence: the page connects again."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ApiError, DatabaseBusy
from .api import Refusal, error_answer, refusal_of

# The first message of an answer, after which another cannot be sent.
STARTS = frozenset(
    {"http.response.start", "websocket.accept", "websocket.close", "websocket.http.response.start"}
)
DENIAL = "websocket.http.response"  # the ASGI extension that answers a handshake with HTTP
TRY_AGAIN_LATER = 1013  # the WebSocket close code of a server that cannot serve now


# What every route may answer for a fault, declared once here (the document lists them).
FAULTS = (
    Refusal(500, "A fault of the server (a bug); the server's log has the details."),
    Refusal(503, "The database is busy or not answering; try again after Retry-After."),
)


async def answer(request: Request, error: Exception) -> Response:
    """The answer of an error a route raised: see the module's docstring. A WebSocket's is
    SafetyNet's, which knows whether its handshake was answered."""
    if isinstance(error, HTTPException):
        return _router_refusal(request, error)
    if request.scope["type"] == "websocket":
        raise error
    return error_answer(error)


# The app's exception handlers: every error a route raises that is not a bug (a bug goes on to
# SafetyNet).
ANSWERS: dict[Any, Any] = {HTTPException: answer, ApiError: answer, DatabaseBusy: answer}


def _router_refusal(request: Request, error: HTTPException) -> Response:
    """The router's own refusals (no such route, method not allowed) as sentences, like every
    other."""
    headers = {k.lower(): v for k, v in (error.headers or {}).items()}
    # a path may be served by several routes: Allow names all their methods
    if error.status_code == 405:
        headers["allow"] = ", ".join(_allowed(request.app.router.routes, request.scope))
    sentence = {
        404: f"There is nothing at {request.url.path[:100]!r} on this server.",
        405: f"{request.method} is not allowed on {request.url.path[:100]!r}; use "
        f"{headers.get('allow', 'another method')}.",
    }.get(error.status_code, error.detail)
    return error_answer(ApiError(error.status_code, sentence, headers=headers))


def _allowed(routes: list[BaseRoute], scope: Any) -> list[str]:
    """The methods of the routes that answer this path, whatever the method (Starlette: a partial
    match). A path written out (`/plugins/agent-tools`) is its own, as OpenAPI matches it before a
    template (`/plugins/{id}`)."""
    serving = [r for r in routes if isinstance(r, Route) and r.matches(scope)[0] != Match.NONE]
    literal = [r for r in serving if not r.param_convertors]
    return sorted({m for r in literal or serving for m in r.methods or ()})


class SafetyNet:
    """ASGI middleware, the outermost of the app's own: see the module's docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    @classmethod
    def refusals(cls) -> tuple[Refusal, ...]:
        return FAULTS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started = closed = False

        async def watched(message: Message) -> None:
            nonlocal started, closed
            started = started or message["type"] in STARTS
            closed = closed or message["type"] == "websocket.close"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as error:
            if started:
                if scope["type"] != "websocket" or closed or not isinstance(error, DatabaseBusy):
                    raise
                sentence = refusal_of(error).sentence  # logged there
                with suppress(Exception):  # the page may have gone already
                    await send(
                        {"type": "websocket.close", "code": TRY_AGAIN_LATER, "reason": sentence}
                    )
                return
            answer = error_answer(error)
            if scope["type"] == "websocket" and DENIAL not in scope.get("extensions", {}):
                # a server that cannot answer a handshake with HTTP: the close says "later"
                await send({"type": "websocket.close", "code": TRY_AGAIN_LATER})
                return
            await answer(scope, receive, send)
