"""Where crawls run: a few threads of their own, never the server's shared pool, and only a few
crawls per user. A slow source then holds a crawl thread, not a thread every other request needs:
40 hanging crawls in Starlette's shared pool (40 threads) once made GET /api/decks take 52 s.

Over a bound the caller is told to come back (429 with Retry-After) instead of being queued: a
queued crawl would hold its request open for nothing and start late anyway.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from reactor.errors import ApiError

T = TypeVar("T")


class CrawlsBusy(ApiError):
    """Too many crawls are running (for this user, or in all): a 429 with `.retry_after` seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(429, message, retry_after=retry_after)
        self.retry_after = retry_after


class CrawlPool:
    """Runs crawl jobs on `at_once` threads, at most `per_user` of them for one user."""

    def __init__(self, *, per_user: int = 2, at_once: int = 4, retry_after: int = 10) -> None:
        for name, value in (
            ("per_user", per_user),
            ("at_once", at_once),
            ("retry_after", retry_after),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"The crawl pool's {name} must be a whole number of at least 1, not {value!r}."
                )
        self.per_user, self.at_once, self.retry_after = per_user, at_once, retry_after
        self._executor = ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="cms-crawl")
        self._running: dict[str, int] = {}
        self._lock = threading.Lock()

    async def run(self, username: str, job: Callable[[], T]) -> T:
        """The result of `job()`, run on a crawl thread; CrawlsBusy at once when over a bound.
        The slot is freed when the job ends, even if the caller stopped waiting for it."""
        self._admit(username)
        try:
            future = self._executor.submit(job)
        except BaseException:
            self._release(username)
            raise
        future.add_done_callback(lambda _: self._release(username))
        return await asyncio.wrap_future(future)

    def running(self, username: str | None = None) -> int:
        with self._lock:
            return (
                sum(self._running.values()) if username is None else self._running.get(username, 0)
            )

    def _admit(self, username: str) -> None:
        with self._lock:
            mine, everyone = self._running.get(username, 0), sum(self._running.values())
            if mine >= self.per_user:
                raise CrawlsBusy(
                    f"You already have {_crawls(mine)} running; wait for one to finish.",
                    self.retry_after,
                )
            if everyone >= self.at_once:
                raise CrawlsBusy(
                    f"The server is already running {_crawls(everyone)}, as many as it runs at "
                    f"once; try again in {self.retry_after} seconds.",
                    self.retry_after,
                )
            self._running[username] = mine + 1

    def _release(self, username: str) -> None:
        with self._lock:
            left = self._running.get(username, 0) - 1
            if left > 0:
                self._running[username] = left
            else:
                self._running.pop(username, None)


def _crawls(count: int) -> str:
    return f"{count} crawl" if count == 1 else f"{count} crawls"
