"""The app's last net: an exception that no route or middleware answered, raised before the
answer started, is answered in the project's JSON (api.error_answer) instead of Starlette's
plain-text 500 — a database fault raised in a middleware (the plugin switches read on each
request), a route or a WebSocket's handshake is a 503 with Retry-After; anything else a 500 with
a sentence, its traceback logged once. Once an HTTP answer has started it cannot be replaced: the
exception goes on to the server, which logs it and ends the connection. A WebSocket the database
fails after its handshake (a page's link for agents) is closed with 1013, "try again later", and
the sentence: the page connects again."""

from __future__ import annotations

from contextlib import suppress

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import DatabaseBusy
from .api import error_answer, refusal_of

# The first message of an answer, after which another cannot be sent.
STARTS = frozenset(
    {"http.response.start", "websocket.accept", "websocket.close", "websocket.http.response.start"}
)
DENIAL = "websocket.http.response"  # the ASGI extension that answers a handshake with HTTP
TRY_AGAIN_LATER = 1013  # the WebSocket close code of a server that cannot serve now


class SafetyNet:
    """ASGI middleware, the outermost of the app's own: see the module's docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

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
