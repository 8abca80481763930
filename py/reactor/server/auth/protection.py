"""What a browser can be made to send, refused for the whole server in one place.

- `HostCheck`: only the host names the server serves (DNS rebinding points another name at a
  loopback server; its requests then carry that name in `Host`). Every answer also says
  `X-Content-Type-Options: nosniff`.
- `CrossSiteWriteGuard`: a write (POST, PUT, PATCH, DELETE) that no bearer token authenticates
  (so a cookie might) must be `application/json` (415 otherwise: forms and no-cors fetches
  cannot send it; a write with no body at all has no type to check) and come from this server's
  own origin or an allowed one (`Origin`, else `Sec-Fetch-Site`; 403 otherwise). A bearer token
  is never sent by a browser on its own, so a request carrying one is not forged cross-site.
  Sign-in and sign-out are writes like any other. The paths the app names `exempt` (OAuth's
  client endpoints, which no cookie authenticates) follow their own RFCs instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import DeclarationError
from ..api import error_response

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def check_hosts(hosts: Iterable[str]) -> tuple[str, ...]:
    """Host names as `Host` carries them, without port; DeclarationError for anything else."""
    checked: list[str] = []
    for host in hosts:
        name = (
            host.strip().lower().removeprefix("[").removesuffix("]")
            if isinstance(host, str)
            else ""
        )
        if not name or any(c in name for c in "/@?#* \t") or (name.count(":") == 1):
            raise DeclarationError(
                f"{host!r} is not a host name to serve: write a name or an address, "
                "like reactor.example.org or 192.0.2.10 (no scheme, no port, no '*').",
                owner="allow_hosts",
                field="host",
                value=host,
            )
        if name not in checked:
            checked.append(name)
    return tuple(checked)


def host_name(header: str) -> str:
    """The host of a `Host` header, without its port ('[::1]:8000' -> '::1')."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


class HostCheck:
    """ASGI middleware: 421 for a `Host` the server does not serve; nosniff on every answer."""

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(check_hosts(hosts))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = Headers(scope=scope).get("host", "")
        if scope["type"] == "websocket":
            if host_name(host) in self.hosts:
                await self.app(scope, receive, send)
            else:
                # the handshake is refused: 403
                await send({"type": "websocket.close", "code": 1008})
            return
        if host_name(host) not in self.hosts:
            shown = host[:80] or "(none)"
            refusal = error_response(
                421,
                f"This server does not serve the host {shown!r}; its operator can add it "
                "with `reactor serve --allow-host NAME`.",
            )
            refusal.headers["x-content-type-options"] = "nosniff"
            await refusal(scope, receive, send)
            return

        async def send_nosniff(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).setdefault("x-content-type-options", "nosniff")
            await send(message)

        await self.app(scope, receive, send_nosniff)


class CrossSiteWriteGuard:
    """ASGI middleware: a write a cookie could authenticate is JSON from an origin we trust."""

    def __init__(
        self, app: ASGIApp, *, origins: Iterable[str] = (), exempt: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.origins = frozenset(origins)
        # OAuth's /token, /register, /revoke: agents POST there from anywhere, no cookie, forms.
        # They honour no cookie, so a forged request gains nothing; their own rules apply.
        self.exempt = frozenset(exempt)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] in UNSAFE_METHODS
            and scope["path"] not in self.exempt
        ):
            refusal = self.refusal(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        if headers.get("authorization", "").lower().startswith("bearer "):
            return None
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        # A write with no body and no content type (sign-out, publish) is no form: its origin is
        # checked below.
        bodyless = (
            not media_type
            and headers.get("content-length", "0") == "0"
            and "transfer-encoding" not in headers
        )
        if media_type != "application/json" and not bodyless:
            return error_response(
                415,
                "Send writes as JSON, with content-type: application/json (or authenticate "
                "them with a bearer token).",
            )
        origin = headers.get("origin")
        if origin is not None:
            if origin in self.origins or same_origin(origin, headers.get("host", "")):
                return None
            return error_response(
                403,
                f"A page of {origin[:100]} may not write to this server; only its own "
                "pages and the origins its operator allows (--allow-origin) may.",
            )
        if headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none"):
            # no Origin and no cross-site fetch metadata: not a browser's cross-site request
            return None
        return error_response(403, "A cross-site request may not write to this server.")


def same_origin(origin: str, host: str) -> bool:
    """Whether `origin` is this server's (its scheme may be https when TLS ends at a proxy)."""
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(host)
        and parts.netloc.lower() == host.strip().lower()
    )
