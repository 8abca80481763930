"""Crawls are bounded: at most two at once per user and three (here) in all, on threads of their
own. Past a bound the answer is 429 at once, and while crawls hang on a dripping source the rest
of the server answers as quickly as ever — through a real HTTP server, where requests share the
server's thread pool (40 hanging crawls once made every other request wait 52 s)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from reactor.server.loopback import LoopbackServer
from reactor_plugins.cms.backend.crawl_pool import CrawlPool
from test_cms_crawl_hostile import DRIP_LIMIT, HostileSource
from test_cms_fixtures import serve_cms

# The crawl timeout: how long each crawl below hangs. Long enough that the first hanging crawls
# still run while a slow machine sends the later requests (at 2 s, one was cut off during the
# burst and its freed slot let a burst request in); under the source's own DRIP_LIMIT.
TIMEOUT = 5.0
assert TIMEOUT < DRIP_LIMIT
RETRY_AFTER = "5"  # the crawl timeout, whole seconds: when a slot is sure to be free


@pytest.fixture
def hostile() -> Iterator[HostileSource]:
    source = HostileSource()
    yield source
    source.close()


@pytest.fixture
def server(tmp_path, hostile) -> Iterator[tuple[str, dict[str, str]]]:
    """The CMS over real HTTP; yields its URL and a bearer token per demo user."""
    client, _ = serve_cms(
        tmp_path,
        crawl_allow=hostile.url.removeprefix("http://"),
        crawl_timeout=TIMEOUT,
        crawl_per_user=2,
        crawl_at_once=3,
    )
    tokens = {name: client.as_user(name).token for name in ("ada", "bob")}
    with LoopbackServer(client.app, start_timeout=10) as url:
        yield url, tokens


def crawl(url: str, token: str, source: str) -> httpx.Response:
    return httpx.post(
        f"{url}/api/cms/sites/acme/crawl",
        json={"kind": "feed", "url": source},
        headers={"authorization": f"Bearer {token}"},
        timeout=30,
    )


def start_hanging_crawls(
    url: str, token: str, source: str, count: int, hostile: HostileSource
) -> list[Any]:
    """`count` crawls of a dripping source, running once the source has seen each of them."""
    pool = ThreadPoolExecutor(count)
    before = hostile.hits.get("/drip-status", 0)
    futures = [pool.submit(crawl, url, token, source) for _ in range(count)]
    with hostile.hit:
        reached = hostile.hit.wait_for(
            lambda: hostile.hits.get("/drip-status", 0) >= before + count, timeout=5
        )
    assert reached, "the crawls never reached the source"
    pool.shutdown(wait=False)
    return futures


def timed_get(url: str, token: str, path: str) -> tuple[int, float]:
    started = time.monotonic()
    answer = httpx.get(url + path, headers={"authorization": f"Bearer {token}"}, timeout=30)
    return answer.status_code, time.monotonic() - started


def test_past_the_bounds_a_crawl_is_refused_at_once_and_other_requests_stay_fast(server, hostile):
    url, tokens = server
    source = hostile.url + "/drip-status"
    running = start_hanging_crawls(url, tokens["bob"], source, 2, hostile)

    started = time.monotonic()
    third = crawl(url, tokens["bob"], source)
    # Refused at once: a request queued behind the hanging crawls would wait for their deadline.
    assert time.monotonic() - started < TIMEOUT / 2
    assert third.status_code == 429 and third.headers["retry-after"] == RETRY_AFTER
    assert third.json() == {"error": "You already have 2 crawls running; wait for one to finish."}

    running += start_hanging_crawls(url, tokens["ada"], source, 1, hostile)
    another = crawl(url, tokens["ada"], source)  # ada has one, but the server runs three in all
    assert another.status_code == 429 and another.headers["retry-after"] == RETRY_AFTER
    assert another.json()["error"] == (
        "The server is already running 3 crawls, as many as it runs at once; try again in "
        f"{RETRY_AFTER} seconds."
    )

    # A burst of forty more, as one editor once sent: all refused, none queued.
    with ThreadPoolExecutor(40) as burst:
        answers = list(
            burst.map(lambda _: crawl(url, tokens["bob"], source).status_code, range(40))
        )
    assert answers == [429] * 40
    for path in ("/api/cms/session", "/api/cms/sites/acme/entries"):
        status, seconds = timed_get(url, tokens["ada"], path)
        assert status == 200 and seconds < TIMEOUT / 2, (
            f"GET {path} took {seconds:.2f} s with crawls hanging"
        )

    # each cut off at its deadline
    assert [f.result().status_code for f in running] == [502, 502, 502]
    assert f"did not answer within {TIMEOUT:g} seconds" in running[0].result().json()["error"]
    # the slots are free again
    assert crawl(url, tokens["bob"], hostile.url + "/post").status_code != 429


def test_a_refused_or_invalid_crawl_takes_no_slot(server, hostile):
    url, tokens = server
    for _ in range(3):
        bad = httpx.post(
            f"{url}/api/cms/sites/acme/crawl",
            json={"kind": "feed", "url": "http://[::1/"},
            headers={"authorization": f"Bearer {tokens['bob']}"},
        )
        assert bad.status_code == 422
    running = start_hanging_crawls(url, tokens["bob"], hostile.url + "/drip-status", 2, hostile)
    assert [f.result().status_code for f in running] == [502, 502]


@pytest.mark.parametrize(
    "options", [{"per_user": 0}, {"at_once": -1}, {"per_user": True}, {"retry_after": 1.5}]
)
def test_the_bounds_must_be_whole_numbers_of_at_least_one(options):
    with pytest.raises(ValueError, match="must be a whole number of at least 1"):
        CrawlPool(**options)


def test_a_slot_is_freed_when_its_crawl_ends_even_if_it_failed():
    pool = CrawlPool(per_user=1, at_once=1)
    started, release = threading.Event(), threading.Event()

    def failing() -> None:
        started.set()
        release.wait(5)
        raise RuntimeError("the source broke")

    async def scenario() -> None:
        first = asyncio.ensure_future(pool.run("bob", failing))
        assert await asyncio.to_thread(started.wait, 5)
        assert pool.running("bob") == 1
        with pytest.raises(Exception, match="You already have 1 crawl running"):
            await pool.run("bob", lambda: None)
        release.set()
        with pytest.raises(RuntimeError):
            await first
        assert pool.running() == 0
        assert await pool.run("bob", lambda: "again") == "again"

    asyncio.run(scenario())
