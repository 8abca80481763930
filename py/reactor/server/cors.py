"""Cross-origin access for pages that embed reactor: only the origins the server was told to allow.

An allowed origin's requests are answered with `Access-Control-Allow-Origin: <that origin>` and
`Access-Control-Allow-Credentials: true` (the reactor session cookie travels with the embedded
page's calls), and its preflight `OPTIONS` is answered here. Any other origin gets no
`Access-Control-*` header at all, so its browser refuses the answer. Every answer says
`Vary: Origin`, so no cache hands one origin's answer to another.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

ALLOWED_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE"
PREFLIGHT_MAX_AGE = "600"


def check_origins(origins: Iterable[str]) -> tuple[str, ...]:
    """The origins as a browser sends them (`scheme://host[:port]`); anything else is refused."""
    checked: list[str] = []
    for origin in origins:
        parts = urlsplit(origin.strip().rstrip("/")) if isinstance(origin, str) else None
        if (
            parts is None
            or parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.path
            or parts.query
            or parts.fragment
            or parts.username
        ):
            raise ValueError(
                f"{origin!r} is not an origin to allow: write scheme, host and port only, "
                "like http://127.0.0.1:5500 (no path, no '*')."
            )
        normal = f"{parts.scheme}://{parts.netloc.lower()}"
        if normal not in checked:
            checked.append(normal)
    return tuple(checked)


class CrossOrigin:
    """ASGI middleware: CORS answers for `origins`, and for no one else."""

    def __init__(self, app: ASGIApp, *, origins: Iterable[str]) -> None:
        self.app = app
        self.origins = frozenset(check_origins(origins))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        allowed = origin in self.origins
        if scope["method"] == "OPTIONS" and origin and "access-control-request-method" in headers:
            await self.preflight(origin, allowed, headers)(scope, receive, send)
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer = MutableHeaders(scope=message)
                answer.add_vary_header("Origin")
                if allowed:
                    answer["access-control-allow-origin"] = origin  # type: ignore[assignment]
                    answer["access-control-allow-credentials"] = "true"
            await send(message)

        await self.app(scope, receive, send_with_cors)

    def preflight(self, origin: str, allowed: bool, request: Headers) -> Response:
        if not allowed:
            return PlainTextResponse(
                f"The origin {origin} may not call this server; its operator can allow it with "
                f"`reactor serve --allow-origin {origin}`.",
                status_code=403,
                headers={"vary": "Origin"},
            )
        headers = {
            "access-control-allow-origin": origin,
            "access-control-allow-credentials": "true",
            "access-control-allow-methods": ALLOWED_METHODS,
            "access-control-max-age": PREFLIGHT_MAX_AGE,
            "vary": "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
        }
        if "access-control-request-headers" in request:
            headers["access-control-allow-headers"] = request["access-control-request-headers"]
        if "access-control-request-private-network" in request:
            headers["access-control-allow-private-network"] = "true"
        return Response(status_code=204, headers=headers)
