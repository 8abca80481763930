"""Proxies named, not guessed: whose `X-Forwarded-*` headers count.

Only the addresses the operator names (`reactor serve --trust-proxy ADDR…`, IP addresses or
CIDR networks; none by default) are proxies. When the immediate peer is one of them, the
client's address is read from `X-Forwarded-For` right to left, skipping trusted addresses: the
first untrusted one is the client (a client may write anything to the left of what its proxy
appended, and it is never read); if every hop is trusted, the leftmost. The scheme comes from
`X-Forwarded-Proto` (its leftmost value: what the proxy facing the browser saw). From any other
peer both headers are ignored, so rotating them gains a client nothing. A value that is not an
address or a scheme is ignored, never an error.

`ForwardedHeaders` rewrites `scope["client"]` and `scope["scheme"]` once, in front of every
other middleware: the sign-in limits, the gateway's anonymous limits, the same-origin checks,
the session cookie's Secure flag and the URLs in sentences all read them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import DeclarationError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
PROXIED = "reactor.proxied"  # scope key: the peer was a trusted proxy
# X-Forwarded-Proto's value -> the scope's scheme, by the scope's type
SCHEMES = {
    "http": {"http": "http", "https": "https", "ws": "http", "wss": "https"},
    "websocket": {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"},
}


def check_proxies(proxies: Iterable[str]) -> tuple[Network, ...]:
    """The trusted proxies as networks (an address is a network of one); DeclarationError naming
    the value otherwise."""
    checked: list[Network] = []
    for proxy in proxies:
        text = proxy.strip().removeprefix("[").removesuffix("]") if isinstance(proxy, str) else ""
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise DeclarationError(
                f"{proxy!r} is not a proxy's address: write an IP address or a network, like "
                "127.0.0.1, ::1 or 10.0.0.0/8 (no name, no port).",
                owner="trust_proxies",
                field="proxy",
                value=proxy,
            ) from None
        if network not in checked:
            checked.append(network)
    return tuple(checked)


def web_origin(text: object) -> str | None:
    """`text` as a browser writes an origin (`scheme://host[:port]`, host lower-case), or None
    when it is not one: another scheme, a path, a user, a port out of range, a broken address."""
    try:
        parts = urlsplit(text.strip().rstrip("/")) if isinstance(text, str) else None
        port = parts.port if parts is not None else None
    except ValueError:
        return None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + ("" if port is None else f":{port}")


def check_public_url(url: str) -> str:
    """The origin people see (`--public-url`), as a browser writes it; DeclarationError
    otherwise."""
    origin = web_origin(url)
    if origin is None:
        raise DeclarationError(
            f"{url!r} is not the address people see: write scheme, host and port only, like "
            "https://reactor.example.org:8443 (no path).",
            owner="public_url",
            field="url",
            value=url,
        )
    return origin


def parse_address(text: str) -> Address | None:
    """An address as a forwarded header writes it: `192.0.2.1`, `192.0.2.1:5678`, `2001:db8::1`,
    `[2001:db8::1]:443`; None for anything else. An IPv4-mapped IPv6 address is its IPv4 one."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class ForwardedHeaders:
    """ASGI middleware: the client's address and the scheme, from a trusted proxy's headers."""

    def __init__(self, app: ASGIApp, *, proxies: Iterable[str] = ()) -> None:
        self.app = app
        self.networks = check_proxies(proxies)

    def trusted(self, address: Address | None) -> bool:
        return address is not None and any(address in network for network in self.networks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.networks or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        peer = scope.get("client")
        if not peer or not self.trusted(parse_address(str(peer[0]))):
            await self.app(scope, receive, send)
            return
        forwarded_for: list[str] = []
        proto = ""
        for name, value in scope["headers"]:
            if name == b"x-forwarded-for":
                forwarded_for += value.decode("latin-1").split(",")
            elif name == b"x-forwarded-proto" and not proto:
                proto = value.decode("latin-1").split(",")[0].strip().lower()
        scope = {**scope, PROXIED: True}
        client = self.client(forwarded_for)
        if client is not None:
            scope["client"] = (client, 0)
        scheme = SCHEMES[scope["type"]].get(proto)
        if scheme is not None:
            scope["scheme"] = scheme
        await self.app(scope, receive, send)

    def client(self, hops: list[str]) -> str | None:
        """The first untrusted hop from the right; the leftmost when all are trusted; None when
        the header names no address (a malformed hop ends the chain where it stands)."""
        found: Address | None = None
        for hop in reversed(hops):
            address = parse_address(hop)
            if address is None:
                break
            found = address
            if not self.trusted(address):
                break
        return None if found is None else str(found)
