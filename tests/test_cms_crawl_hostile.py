"""Sources that fight the crawler at the socket level: a status line or headers sent one byte at
a time (each byte inside any per-read timeout), redirects that never end, a Location and article
links that are not URLs at all. `HostileSource` is a raw TCP server, because an HTTP framework
would not send a status line slowly; test_cms_crawl_limits.py uses it too."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from reactor.errors import OutboundFailed
from reactor.server.outbound.fetch import FetchPolicy, fetch
from reactor.server.outbound.guard import parse_allow_list
from test_cms_fixtures import entry_count, serve_cms

DRIP_GAP = 0.25  # seconds between bytes: far inside any per-read timeout
DRIP_LIMIT = 8  # seconds a dripping answer lasts before the source hangs up


class HostileSource:
    """http://127.0.0.1:<port>; `hits[path]` counts the requests each path received."""

    PAGES = {
        "/bad-redirect": b"HTTP/1.1 302 Found\r\nLocation: http://[::1/\r\nContent-Length: "
        b"0\r\n\r\n",
        "/bad-links/": (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n"
            b'<main><article><a href="http://[::1/">Broken</a></article>'
            b'<article><a href="/post">Fine</a></article></main>'
        ),
        "/post": (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n"
            b"<article><h1>A fine post</h1><p>Read in full.</p></article>"
        ),
        "/drip-blog/": (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n"
            + b"".join(
                b'<article><a href="/drip-status?%d">Post</a></article>' % n for n in range(6)
            )
        ),
    }

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.hits: dict[str, int] = {}
        self.hit = threading.Condition()  # notified on each request
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = connection.recv(4096)
                if not chunk:
                    return
                request += chunk
            path = request.split(b" ")[1].decode()
            route = path.split("?")[0]
            with self.hit:
                self.hits[route] = self.hits.get(route, 0) + 1
                self.hit.notify_all()
            try:
                if route in self.PAGES:
                    connection.sendall(self.PAGES[route])
                elif route == "/drip-status":  # the status line, a byte at a time, for ever
                    self._drip(connection, b"HTTP/1.1 200 OK\r\n" * 1000)
                elif route == "/drip-headers":  # a prompt status line, then headers that never end
                    connection.sendall(b"HTTP/1.1 200 OK\r\n")
                    self._drip(connection, b"X-Slow: " + b"a" * 100_000)
                elif route == "/slow-redirect":  # each hop takes a while, and leads to another
                    self._drip(
                        connection,
                        b"HTTP/1.1 302 Found\r\nLocation: /slow-redirect\r\nContent-Length: "
                        b"0\r\n\r\n",
                        gap=0.01,
                    )
            except OSError:
                pass  # the crawler hung up: what these pages are for

    def _drip(self, connection: socket.socket, data: bytes, gap: float = DRIP_GAP) -> None:
        """Send `data` a byte per `gap` seconds, for DRIP_LIMIT seconds at most (a crawler
        without a whole-exchange deadline would otherwise wait here for ever)."""
        end = time.monotonic() + DRIP_LIMIT
        for byte in data:
            if self.stopped.is_set() or time.monotonic() > end:
                return
            connection.sendall(bytes([byte]))
            time.sleep(gap)


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileSource]:
    source = HostileSource()
    yield source
    source.close()


def allowing(origin: str, **options: float) -> FetchPolicy:
    return FetchPolicy(parse_allow_list(origin.removeprefix("http://")), **options)


# One deadline over the whole exchange ---------------------------------------------------------


@pytest.mark.parametrize("path", ["/drip-status", "/drip-headers", "/slow-redirect"])
def test_a_source_that_drips_its_status_line_headers_or_redirects_is_cut_off_at_the_deadline(
    hostile, path
):
    started = time.monotonic()
    with pytest.raises(OutboundFailed, match=r"did not answer within 1 seconds"):
        fetch(hostile.url + path, allowing(hostile.url, timeout=1))
    elapsed = time.monotonic() - started
    assert 0.9 < elapsed < 1 + 1.5, f"the fetch took {elapsed:.2f} s"


def test_a_source_that_never_finishes_the_tls_handshake_is_cut_off_at_the_deadline(hostile):
    started = time.monotonic()  # the source reads the ClientHello and never answers it
    with pytest.raises(OutboundFailed, match=r"did not answer within 1 seconds"):
        fetch(hostile.url.replace("http:", "https:") + "/", allowing(hostile.url, timeout=1))
    assert time.monotonic() - started < 1 + 1.5


def test_a_blog_of_dripping_pages_ends_within_the_crawls_budget(tmp_path, hostile):
    client, database = serve_cms(
        tmp_path, crawl_allow=hostile.url.removeprefix("http://"), crawl_timeout=0.5
    )
    count = entry_count(database)
    started = time.monotonic()
    body = {"kind": "blog", "url": hostile.url + "/drip-blog/", "limit": 6}
    answer = client.as_user("bob").post("/api/cms/sites/acme/crawl", json=body)
    elapsed = time.monotonic() - started
    assert elapsed < 3 * 0.5 + 1.5, f"the crawl took {elapsed:.2f} s"
    reasons = [s["reason"] for s in answer.json()["skipped"]]
    assert answer.status_code == 200 and answer.json()["imported"] == [] and len(reasons) == 6
    assert "did not answer within 0.5 seconds" in reasons[0]
    assert "the crawl ran out of time" in reasons[-1]
    assert entry_count(database) == count


# Addresses that are not URLs ------------------------------------------------------------------


def test_a_crawl_url_that_is_not_a_url_is_refused_with_a_sentence(tmp_path):
    client, _ = serve_cms(tmp_path)
    answer = client.as_user("bob").post(
        "/api/cms/sites/acme/crawl", json={"kind": "feed", "url": "http://[::1/"}
    )
    assert answer.status_code == 422
    assert (
        answer.json()["error"]
        == "The address 'http://[::1/' is not a well-formed URL (Invalid IPv6 URL)."
    )


def test_a_redirect_to_something_that_is_not_a_url_fails_with_a_sentence(hostile):
    with pytest.raises(OutboundFailed) as failed:
        fetch(hostile.url + "/bad-redirect", allowing(hostile.url))
    assert str(failed.value) == (
        f"The source '{hostile.url}/bad-redirect' redirected to 'http://[::1/', which is not "
        "a well-formed address."
    )


def test_an_article_link_that_is_not_a_url_is_skipped_and_the_others_imported(tmp_path, hostile):
    client, _ = serve_cms(
        tmp_path, crawl_allow=hostile.url.removeprefix("http://"), crawl_timeout=2
    )
    answer = client.as_user("bob").post(
        "/api/cms/sites/acme/crawl", json={"kind": "blog", "url": hostile.url + "/bad-links/"}
    )
    assert answer.status_code == 200, answer.text
    assert [i["title"] for i in answer.json()["imported"]] == ["A fine post"]
    assert answer.json()["skipped"] == [
        {
            "source_url": "http://[::1/",
            "reason": "the link 'http://[::1/' is not a well-formed address",
        }
    ]


def test_a_path_with_spaces_and_non_ascii_is_sent_percent_encoded(hostile):
    # http.client would refuse to encode 'ü' (UnicodeEncodeError, once a 500) and sends a space as
    # is.
    # the source hangs up on unknown paths
    with pytest.raises(OutboundFailed, match="could not be read"):
        fetch(hostile.url + "/a page/ü", allowing(hostile.url, timeout=1))
    assert hostile.hits.get("/a%20page/%C3%BC") == 1
