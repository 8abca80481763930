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

The server's own origin is the request's scheme (as a trusted proxy says it) with its Host. An
Origin that differs from it only by what a proxy in front lost — the Host's port, the page's
https — is refused with a sentence naming the proxy setting to fix (`proxy_fault`), and a line
in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import DeclarationError
from ..api import Refusal, error_response
from ..proxies import PROXIED

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_PORTS = {"http": 80, "https": 443}
log = logging.getLogger("reactor.server")


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
    return split_host(header)[0]


def split_host(header: str) -> tuple[str, str]:
    """A `Host` header's host and port ("" for none): '[::1]:8000' -> ('::1', '8000')."""
    header = header.strip().lower()
    if header.startswith("["):
        name, _, rest = header[1:].partition("]")
        return name, rest.removeprefix(":")
    if header.count(":") == 1:
        name, _, port = header.partition(":")
        return name, port
    return header, ""


class HostCheck:
    """ASGI middleware: 421 for a `Host` the server does not serve; nosniff on every answer."""

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(check_hosts(hosts))

    @classmethod
    def refusals(cls, **options: Any) -> tuple[Refusal, ...]:
        return (Refusal(421, "The Host header names a host this server does not serve."),)

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

    @classmethod
    def refusals(cls, **options: Any) -> tuple[Refusal, ...]:
        # listed on every write, the exempt paths' too (the document has listed them so)
        return (
            Refusal(
                403,
                "A write from a page of another site (by its Origin or Sec-Fetch-Site).",
                UNSAFE_METHODS,
            ),
            Refusal(
                415,
                "A write that only a cookie could authenticate, and that is not JSON.",
                UNSAFE_METHODS,
            ),
        )

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
            if origin in self.origins or same_origin(origin, scope):
                return None
            return error_response(
                403,
                proxy_fault(origin, scope)
                or f"A page of {origin[:100]} may not write to this server; only its own "
                "pages and the origins its operator allows (--allow-origin) may.",
            )
        if headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none"):
            # no Origin and no cross-site fetch metadata: not a browser's cross-site request
            return None
        return error_response(403, "A cross-site request may not write to this server.")


def same_origin(origin: str, scope: Scope) -> bool:
    """Whether `origin` is this server's as the request reached it: its scheme (as a trusted
    proxy says it, server/proxies.py), host and port (the Host header's)."""
    return _difference(origin, scope) == ()


def proxy_fault(origin: str, scope: Scope) -> str:
    """When `origin` is this server's own but for what a proxy in front of it lost (the Host's
    port, the page's https), the sentence naming the proxy setting to set, and one line in the
    log for the operator; "" otherwise."""
    lost = _difference(origin, scope)
    if not lost:
        return ""
    host = Headers(scope=scope).get("host", "")[:80]
    trusted = bool(scope.get(PROXIED))
    causes = []
    if "port" in lost:
        causes.append(
            f"drops the page's port from the Host header (it sent {host!r}; "
            "`proxy_set_header Host $http_host;` keeps it)"
        )
    if "scheme" in lost:
        causes.append(
            "does not tell reactor that the page is https (`proxy_set_header X-Forwarded-Proto "
            "$scheme;` does"
            + (
                ")"
                if trusted
                else ", from a proxy reactor trusts: `reactor serve --trust-proxy ADDRESS`)"
            )
        )
    said = " and ".join(causes)
    peer = scope.get("client") or ("unknown", 0)
    log.warning(
        "refused %s %r from the page %r: the proxy in front of reactor %s; the request came as "
        "%s from %s, %s",  # %r: what a client sent is quoted, its line breaks escaped
        scope.get("method", "WEBSOCKET"),
        scope.get("path", "")[:100],
        origin[:100],
        said,
        scope.get("scheme", "http"),
        peer[0],
        "a trusted proxy" if trusted else "not a trusted proxy",
    )
    return (
        f"This server cannot tell that {origin[:100]} is its own page: the proxy in front of it "
        f"{said}."
    )


def _difference(origin: str, scope: Scope) -> tuple[str, ...] | None:
    """How `origin` differs from the request's own origin: () when it is the same; ("port",),
    ("scheme",) or both when the host is the same and only what a proxy loses differs (the
    port the Host header left out, an https page reached by http); None for another site."""
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return None
    if parts.path or parts.query or parts.fragment or parts.username is not None:
        return None
    name, given = split_host(Headers(scope=scope).get("host", ""))
    if (
        parts.scheme not in DEFAULT_PORTS
        or not name
        or name != parts.hostname
        or not (given.isdigit() or not given)
    ):
        return None
    # A browser leaves the scheme's default port out of both Origin and Host.
    default = DEFAULT_PORTS[parts.scheme]
    lost = []
    if (default if port is None else port) != (int(given) if given else default):
        lost.append("port")
    if parts.scheme != ("https" if scope.get("scheme") in ("https", "wss") else "http"):
        if parts.scheme == "http":  # an http page and an https server: another origin
            return None
        lost.append("scheme")
    return tuple(lost)
