"""A guarded GET: checked before each connection, pinned to the checked address, redirects
re-checked hop by hop, a timeout on every read and on the whole exchange, and a size cap."""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Iterable
from urllib.parse import urljoin

from .guard import AllowRule, CrawlRefused, Resolver, Target, check_url

USER_AGENT = "reactor-cms-crawler/0.1"
MAX_REDIRECTS = 5


class CrawlFailed(Exception):
    """The source could not be read: unreachable, too slow, too large, or an error status."""


@dataclass(frozen=True)
class Fetched:
    url: str
    content_type: str
    body: bytes


@dataclass(frozen=True)
class FetchPolicy:
    """What a crawl may use: the allow-list, seconds per exchange, bytes per answer."""

    rules: tuple[AllowRule, ...] = ()
    timeout: float = 10.0
    max_bytes: int = 2_000_000
    resolve: Resolver | None = None


def fetch(url: str, policy: FetchPolicy, *, accept: str = "*/*") -> Fetched:
    """GET `url` under `policy`; CrawlRefused from the guard, CrawlFailed from the exchange."""
    deadline = time.monotonic() + policy.timeout
    for _ in range(MAX_REDIRECTS + 1):
        target = check_url(url, policy.rules, policy.resolve)
        status, headers, body = _exchange(target, policy, accept, deadline)
        if status in (301, 302, 303, 307, 308):
            location = headers.get("location")
            if not location:
                raise CrawlFailed(f"{url[:120]!r} answered {status} without saying where to go.")
            url = urljoin(url, location)
            continue
        if status >= 400:
            raise CrawlFailed(f"The source {url[:120]!r} answered {status}.")
        return Fetched(url, headers.get("content-type", ""), body)
    raise CrawlFailed(f"The source redirected more than {MAX_REDIRECTS} times; stopped at {url[:120]!r}.")


def _exchange(target: Target, policy: FetchPolicy, accept: str, deadline: float) -> tuple[int, dict[str, str], bytes]:
    connection = _connection(target, max(0.05, deadline - time.monotonic()))
    try:
        connection.request("GET", target.path, headers={"user-agent": USER_AGENT, "accept": accept})
        response = connection.getresponse()
        headers = {k.lower(): v for k, v in response.getheaders()}
        if response.status in (301, 302, 303, 307, 308):
            return response.status, headers, b""
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > policy.max_bytes:
            raise _too_large(target, policy)
        body = b""
        while True:
            if time.monotonic() > deadline:
                raise _too_slow(target, policy)
            chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
            if not chunk:
                break
            body += chunk
            if len(body) > policy.max_bytes:
                raise _too_large(target, policy)
        return response.status, headers, body
    except (socket.timeout, TimeoutError):
        raise _too_slow(target, policy) from None
    except (OSError, http.client.HTTPException) as error:
        raise CrawlFailed(f"The source {target.url[:120]!r} could not be read: {error}.") from None
    finally:
        connection.close()


def _connection(target: Target, timeout: float) -> http.client.HTTPConnection:
    address = target.addresses[0]
    if target.scheme == "https":
        return _PinnedHTTPS(target.host, target.port, address, timeout)
    return _PinnedHTTP(target.host, target.port, address, timeout)


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to the address the guard checked, not to whatever the name resolves to now."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def _too_large(target: Target, policy: FetchPolicy) -> CrawlFailed:
    return CrawlFailed(f"The source {target.url[:120]!r} is larger than {policy.max_bytes} bytes; the crawler stops there.")


def _too_slow(target: Target, policy: FetchPolicy) -> CrawlFailed:
    return CrawlFailed(f"The source {target.url[:120]!r} did not answer within {policy.timeout:g} seconds.")


__all__ = ["CrawlFailed", "CrawlRefused", "Fetched", "FetchPolicy", "fetch"]
