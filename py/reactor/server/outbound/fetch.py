"""A guarded GET: checked before each connection (guard.py), pinned to the checked address,
redirects re-checked hop by hop, one deadline over the whole exchange (deadline.py), and a size
cap."""

from __future__ import annotations

import http.client
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urljoin

from ...errors import OutboundFailed, OutboundRefused
from .deadline import Deadline
from .guard import AllowRule, Reader, Resolver, Target, check_url

MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class Fetched:
    url: str
    content_type: str
    body: bytes


@dataclass(frozen=True)
class FetchPolicy:
    """What a fetch may use: the allow-list, seconds per fetch (redirects included), bytes per
    answer; who reads (its refusals' words, its User-Agent)."""

    rules: tuple[AllowRule, ...] = ()
    timeout: float = 10.0
    max_bytes: int = 2_000_000
    resolve: Resolver | None = None
    reader: Reader = Reader()
    user_agent: str = "reactor"
    max_redirects: int = MAX_REDIRECTS


def fetch(
    url: str, policy: FetchPolicy, *, accept: str = "*/*", seconds: float | None = None
) -> Fetched:
    """GET `url` under `policy` within `seconds` (the policy's timeout, or less when a crawl's
    budget is nearly spent); OutboundRefused from the guard, OutboundFailed from the exchange."""
    deadline = Deadline(policy.timeout if seconds is None else min(seconds, policy.timeout))
    asked = url
    try:
        for _ in range(policy.max_redirects + 1):
            target = check_url(url, policy.rules, policy.resolve, policy.reader)
            status, headers, body = _exchange(target, policy, accept, deadline)
            if status in REDIRECTS:
                url = _next_hop(url, status, headers.get("location"))
                continue
            if status >= 400:
                raise OutboundFailed(f"The source {url[:120]!r} answered {status}.")
            return Fetched(url, headers.get("content-type", ""), body)
    finally:
        deadline.cancel()
    if not policy.max_redirects:
        raise OutboundFailed(
            f"{asked[:120]!r} redirects to {url[:120]!r}; {policy.reader.name} reads it only at "
            "its own address."
        )
    raise OutboundFailed(
        f"The source redirected more than {policy.max_redirects} times; stopped at {url[:120]!r}."
    )


def _next_hop(url: str, status: int, location: str | None) -> str:
    if not location:
        raise OutboundFailed(f"{url[:120]!r} answered {status} without saying where to go.")
    try:
        return urljoin(url, location)
    except ValueError:  # urlsplit refuses e.g. 'http://[::1/' (an unclosed IPv6 bracket)
        raise OutboundFailed(
            f"The source {url[:120]!r} redirected to {location[:120]!r}, which is not a "
            "well-formed address."
        ) from None


def _exchange(
    target: Target, policy: FetchPolicy, accept: str, deadline: Deadline
) -> tuple[int, dict[str, str], bytes]:
    connection = _connection(target, deadline)
    try:
        connection.request(
            "GET", target.path, headers={"user-agent": policy.user_agent, "accept": accept}
        )
        response = connection.getresponse()
        headers = {k.lower(): v for k, v in response.getheaders()}
        body = b""
        if response.status not in REDIRECTS:
            declared = headers.get("content-length", "")
            if declared.isdigit() and int(declared) > policy.max_bytes:
                raise _too_large(target, policy)
            while chunk := response.read1(65536):
                body += chunk
                if len(body) > policy.max_bytes:
                    raise _too_large(target, policy)
    except (OSError, http.client.HTTPException, ValueError) as error:
        if deadline.expired or isinstance(error, TimeoutError):
            raise _too_slow(target, deadline) from None
        raise OutboundFailed(
            f"The source {target.url[:120]!r} could not be read: {error}."
        ) from None
    finally:
        deadline.release()
        connection.close()
    if deadline.expired:  # the watchdog's shutdown reads as the end of the answer: it is not one
        raise _too_slow(target, deadline)
    return response.status, headers, body


def _connection(target: Target, deadline: Deadline) -> http.client.HTTPConnection:
    address = target.addresses[0]
    if target.scheme == "https":
        return _PinnedHTTPS(target.host, target.port, address, deadline)
    return _PinnedHTTP(target.host, target.port, address, deadline)


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to the address the guard checked, not to whatever the name resolves to now."""

    def __init__(self, host: str, port: int, address: str, deadline: Deadline) -> None:
        super().__init__(host, port, timeout=deadline.seconds)
        self._address, self._deadline = address, deadline

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self._deadline.remaining())
        self._deadline.watch(self.sock)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: str, deadline: Deadline) -> None:
        super().__init__(host, port, timeout=deadline.seconds, context=ssl.create_default_context())
        self._address, self._deadline = address, deadline

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self._deadline.remaining())
        # The handshake is done after `watch`, so a source that stalls it is cut off too.
        context: ssl.SSLContext = self._context  # type: ignore[attr-defined]
        self.sock = context.wrap_socket(
            sock, server_hostname=self.host, do_handshake_on_connect=False
        )
        self._deadline.watch(self.sock)
        self.sock.do_handshake()


def _too_large(target: Target, policy: FetchPolicy) -> OutboundFailed:
    return OutboundFailed(
        f"The source {target.url[:120]!r} is larger than {policy.max_bytes} bytes; "
        f"{policy.reader.name} stops there."
    )


def _too_slow(target: Target, deadline: Deadline) -> OutboundFailed:
    return OutboundFailed(
        f"The source {target.url[:120]!r} did not answer within {deadline.seconds:g} seconds."
    )


__all__ = ["Fetched", "FetchPolicy", "OutboundFailed", "OutboundRefused", "fetch"]
