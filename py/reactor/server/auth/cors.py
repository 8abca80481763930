"""Cross-origin access for pages that embed reactor: only the origins the server was told to allow
(Starlette's CORSMiddleware, with what it lacks for that).

An allowed origin's requests are answered with `Access-Control-Allow-Origin: <that origin>` and
`Access-Control-Allow-Credentials: true` (the reactor session cookie travels with the embedded
page's calls), and its preflight `OPTIONS` is answered here. Any other origin gets no
`Access-Control-*` header at all, so its browser refuses the answer. Every answer says
`Vary: Origin`, so no cache hands one origin's answer to another.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Send

from ...errors import DeclarationError
from ..proxies import web_origin

ALLOWED_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
PREFLIGHT_MAX_AGE = 600


def check_origins(origins: Iterable[str]) -> tuple[str, ...]:
    """The origins as a browser sends them (`scheme://host[:port]`); anything else is refused."""
    checked: list[str] = []
    for origin in origins:
        normal = web_origin(origin)
        if normal is None:
            raise DeclarationError(
                f"{origin!r} is not an origin to allow: write scheme, host and port only, "
                "like http://127.0.0.1:5500 (no path, no '*').",
                owner="allow_origins",
                field="origin",
                value=origin,
            )
        if normal not in checked:
            checked.append(normal)
    return tuple(checked)


class CrossOrigin(CORSMiddleware):
    """Starlette's CORSMiddleware for `origins` with credentials, and for no one else: what it
    lacks is added here. An origin it does not allow gets no `Access-Control-*` header at all
    (Starlette would still send its credentials header) and a 403 preflight with a sentence
    saying how to allow it; an allowed preflight is answered 204."""

    def __init__(self, app: ASGIApp, *, origins: Iterable[str]) -> None:
        super().__init__(
            app,
            allow_origins=check_origins(origins),
            allow_methods=ALLOWED_METHODS,
            allow_headers=["*"],
            allow_credentials=True,
            allow_private_network=True,
            max_age=PREFLIGHT_MAX_AGE,
        )

    def preflight_response(self, request_headers: Headers) -> Response:
        origin = request_headers["origin"]
        if not self.is_allowed_origin(origin):
            return PlainTextResponse(
                f"The origin {origin} may not call this server; its operator can allow it with "
                f"`reactor serve --allow-origin {origin}`.",
                status_code=403,
                headers={"vary": "Origin"},
            )
        answer = super().preflight_response(request_headers)
        if answer.status_code != 200:
            return answer
        headers = {
            k: v for k, v in answer.headers.items() if k not in ("content-length", "content-type")
        }
        return Response(status_code=204, headers=headers)

    async def send(self, message: Message, send: Send, request_headers: Headers) -> None:
        origin = request_headers.get("origin")
        if origin is not None and not self.is_allowed_origin(origin):
            # Answered as if no Origin came: no CORS header, only `Vary: Origin`.
            request_headers = Headers(
                raw=[(k, v) for k, v in request_headers.raw if k != b"origin"]
            )
        await super().send(message, send, request_headers)
