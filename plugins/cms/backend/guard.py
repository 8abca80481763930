"""The crawler's guard against server-side request forgery.

A URL passes when it is http(s), has no credentials, and *every* address its host resolves to
is public — or is named by the allow-list (configuration: REACTOR_CRAWL_ALLOW, or the server
plugin's `crawl_allow`). The fetcher connects to the addresses checked here, never re-resolving,
so a name that changes its answer between check and connect (DNS rebinding) gains nothing.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Callable, Iterable
from urllib.parse import urlsplit

Resolver = Callable[[str, int], list[str]]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class CrawlRefused(ValueError):
    """The guard refused a URL before any connection was made."""


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
            raise ValueError(f"The allow-list entry {item!r} names no host; write host, host:port or host:port/path.")
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


def check_url(url: str, rules: Iterable[AllowRule], resolve: Resolver | None = None) -> Target:
    """The Target of `url`, or CrawlRefused with the sentence saying why not."""
    if not isinstance(url, str) or len(url) > 2000:
        raise CrawlRefused("The URL must be a string of at most 2000 characters.")
    parts = urlsplit(url.strip())
    shown = url[:120]
    if parts.scheme not in ("http", "https"):
        raise CrawlRefused(f"Only http and https addresses can be crawled; {shown!r} uses {parts.scheme or 'no scheme'!r}.")
    if parts.username or parts.password:
        raise CrawlRefused(f"The address {shown!r} carries credentials; crawl public sources without a user name or password.")
    try:
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise CrawlRefused(f"The address {shown!r} has an invalid port.") from None
    if not host:
        raise CrawlRefused(f"The address {shown!r} names no host.")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    addresses = _resolve(host, port, resolve or system_resolver)
    for address in addresses:
        if is_public(address):
            continue
        names = {host.lower(), str(address)}
        if not any(rule.matches(names, port, parts.path or "/") for rule in rules):
            raise CrawlRefused(
                f"The address {shown!r} leads to {address}, {_kind(address)} address; the crawler reaches only "
                "public addresses and those the allow-list (REACTOR_CRAWL_ALLOW) names."
            )
    return Target(url, parts.scheme, host, port, path, tuple(str(a) for a in addresses))


def is_public(address: Address) -> bool:
    return address.is_global and not address.is_multicast


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
            raise CrawlRefused(f"The host {host[:80]!r} could not be resolved to an address.") from None
    if not found:
        raise CrawlRefused(f"The host {host[:80]!r} resolves to no address.")
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
