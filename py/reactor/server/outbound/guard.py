"""The guard against server-side request forgery, for every address the server fetches on
someone's word: the CMS's crawler (a source a person names), an OAuth client's metadata document
(a client_id an agent names).

A URL passes when it is http(s), has no credentials, and *every* address its host resolves to
is public — or is named by the reader's allow-list (the crawler's: REACTOR_CRAWL_ALLOW, or the
CMS server plugin's `crawl_allow`). The fetcher (fetch.py) connects to the addresses checked
here, never re-resolving, so a name that changes its answer between check and connect (DNS
rebinding) gains nothing.

An IPv6 address that carries an IPv4 one (IPv4-mapped and -compatible, NAT64, 6to4, Teredo)
reaches that IPv4 address through a translator or tunnel, so it must be public too:
`http://[64:ff9b::7f00:1]/` is loopback by another name.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from ...errors import OutboundRefused

Resolver = Callable[[str, int], list[str]]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# IPv6 ranges that carry an IPv4 address in their last 32 bits. NAT64: RFC 6052's well-known
# prefix and RFC 8215's local-use one, read with the /96 layout translators on them use.
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


@dataclass(frozen=True)
class Reader:
    """Who reads through the guard, in the words of its refusals: the crawler, say, "crawled",
    "crawl public sources", "the allow-list (REACTOR_CRAWL_ALLOW)"."""

    name: str = "the server"
    done: str = "fetched"  # "Only http and https addresses can be {done}"
    plainly: str = "give its address"  # "…carries credentials; {plainly} without a user name…"
    allow: str = "its operator's allow-list"


@dataclass(frozen=True)
class AllowRule:
    """One allow-list entry: a host name or address, optionally a port and a path prefix.
    The host `self` stands for the server's own address, filled in per request."""

    host: str
    port: int | None = None
    path: str = ""

    def matches(self, names: set[str], port: int, path: str) -> bool:
        if self.path and ("/." in path or "%2e" in path.lower()):
            return False  # a dot segment could climb out of the allowed prefix
        return self.host in names and self.port in (None, port) and path.startswith(self.path)


def parse_allow_list(text: str | Iterable[str] | None) -> tuple[AllowRule, ...]:
    """Rules from 'host', 'host:port', '[v6]:port', each optionally followed by '/path-prefix'."""
    if text is None:
        return ()
    items = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    rules = []
    for item in items:
        parts = urlsplit(f"//{item.strip()}")
        if not parts.hostname:
            raise ValueError(
                f"The allow-list entry {item!r} names no host; write host, host:port or "
                "host:port/path."
            )
        rules.append(AllowRule(parts.hostname.lower(), parts.port, parts.path))
    return tuple(rules)


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (the checked addresses) and what to ask for."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]


def check_url(
    url: str,
    rules: Iterable[AllowRule],
    resolve: Resolver | None = None,
    reader: Reader = Reader(),
) -> Target:
    """The Target of `url`, or OutboundRefused with the sentence saying why not."""
    if not isinstance(url, str) or len(url) > 2000:
        raise OutboundRefused("The URL must be a string of at most 2000 characters.")
    shown = url[:120]
    try:
        parts = urlsplit(url.strip())
    except ValueError as error:  # e.g. 'http://[::1/': an unclosed IPv6 bracket
        raise OutboundRefused(
            f"The address {shown!r} is not a well-formed URL ({error})."
        ) from None
    if parts.scheme not in ("http", "https"):
        raise OutboundRefused(
            f"Only http and https addresses can be {reader.done}; {shown!r} uses "
            f"{parts.scheme or 'no scheme'!r}."
        )
    if parts.username or parts.password:
        raise OutboundRefused(
            f"The address {shown!r} carries credentials; {reader.plainly} without a user "
            "name or password."
        )
    try:
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise OutboundRefused(f"The address {shown!r} has an invalid port.") from None
    if not host:
        raise OutboundRefused(f"The address {shown!r} names no host.")
    path = _ascii((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    addresses = _resolve(host, port, resolve or system_resolver)
    for address in addresses:
        problem = _not_public(address)
        if problem is None:
            continue
        names = {host.lower(), str(address)}
        if not any(rule.matches(names, port, parts.path or "/") for rule in rules):
            raise OutboundRefused(
                f"The address {shown!r} leads to {problem} address; {reader.name} reaches only "
                f"public addresses and those {reader.allow} names."
            )
    return Target(url, parts.scheme, host, port, path, tuple(str(a) for a in addresses))


def is_public(address: Address) -> bool:
    return _not_public(address) is None


def _not_public(address: Address) -> str | None:
    """None for a public address; else what it is, e.g. '10.0.0.1, a private' or
    '64:ff9b::7f00:1, a NAT64 address embedding 127.0.0.1, a loopback'."""
    for kind, inner in embedded_ipv4(address):
        if not (inner.is_global and not inner.is_multicast):
            return f"{address}, {kind} address embedding {inner}, {_kind(inner)}"
    if not (address.is_global and not address.is_multicast):
        return f"{address}, {_kind(address)}"
    return None


def embedded_ipv4(address: Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries, with the kind of carrier: such an address
    reaches the IPv4 one through a translator or tunnel, so it is judged by it too."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in IPV4_COMPATIBLE and int(address) > 1:  # '::' and '::1' are judged as themselves
        found.append(("an IPv4-compatible", low32))
    if address in IPV4_TRANSLATED:
        found.append(("an IPv4-translated", low32))
    if any(address in prefix for prefix in NAT64):
        found.append(("a NAT64", low32))
    if address.sixtofour is not None:
        found.append(("a 6to4", address.sixtofour))
    if address.teredo is not None:
        server, client = address.teredo
        found += [("a Teredo", server), ("a Teredo", client)]
    return found


def _ascii(path: str) -> str:
    """The path as sent: non-ASCII, spaces and control characters percent-encoded, so a path
    can neither break the request line nor make http.client fail to encode it."""
    return re.sub(r"[^\x21-\x7e]", lambda m: quote(m.group(), safe=""), path)


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def _resolve(host: str, port: int, resolve: Resolver) -> list[Address]:
    try:
        found = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            found = [ipaddress.ip_address(a.split("%")[0]) for a in resolve(host, port)]
        except (OSError, UnicodeError, ValueError):
            raise OutboundRefused(
                f"The host {host[:80]!r} could not be resolved to an address."
            ) from None
    if not found:
        raise OutboundRefused(f"The host {host[:80]!r} resolves to no address.")
    # An IPv4 address written as IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it is.
    unique: list[Address] = []
    for address in found:
        mapped = getattr(address, "ipv4_mapped", None)
        address = mapped or address
        if address not in unique:
            unique.append(address)
    return unique


def _kind(address: Address) -> str:
    if address.is_loopback:
        return "a loopback"
    if address.is_link_local:
        return "a link-local"
    if address.is_private:
        return "a private"
    if address.is_multicast:
        return "a multicast"
    return "a non-public"
