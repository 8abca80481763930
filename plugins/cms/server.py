"""The CMS server plugin: sites, roles and entries, its JSON API, the public pages and the
crawler, guarded by the server's reactor.server.outbound. The page never imports this module (it
needs starlette); it serves the same agent-tools.json the page plugin contributes.

The crawl allow-list comes from configuration: `CmsServerPlugin(crawl_allow=[...])` and the
REACTOR_CRAWL_ALLOW environment variable (entries like `127.0.0.1:8123` or
`intranet.example:443/blog/`, separated by commas or spaces). With the demo seed, the server's
own /demo-sources/ are allowed too, so the demo can crawl them.

Crawls run on their own threads: `crawl_per_user` at once for one user, `crawl_at_once` in all;
past either, a crawl is answered 429 with Retry-After (backend/crawl_pool.py).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path

from starlette.requests import Request
from starlette.routing import Route

from reactor.server.outbound.fetch import FetchPolicy
from reactor.server.outbound.guard import AllowRule, Reader, parse_allow_list
from reactor.server.plugins.context import ServerContext

from .backend.access import Access
from .backend.api import api_routes
from .backend.crawl_pool import CrawlPool
from .backend.demo import demo_source_routes, seed_demo
from .backend.public import public_routes
from .backend.store import SiteStore

HERE = Path(__file__).parent
DEMO_SOURCES = "/demo-sources/"
USER_AGENT = "reactor-cms-crawler/0.1"
# The crawler's refusals, in its words (the guard is the server's: reactor.server.outbound).
CRAWLER = Reader(
    name="the crawler",
    done="crawled",
    plainly="crawl public sources",
    allow="the allow-list (REACTOR_CRAWL_ALLOW)",
)


class CmsServerPlugin:
    """Serves the CMS; `crawl_allow` names non-public hosts the crawler may read, `crawl_timeout`
    bounds one fetch (a blog crawl gets three), `crawl_per_user` and `crawl_at_once` bound
    crawls."""

    def __init__(
        self,
        *,
        crawl_allow: str | Iterable[str] | None = None,
        crawl_timeout: float = 10.0,
        crawl_max_bytes: int = 2_000_000,
        crawl_per_user: int = 2,
        crawl_at_once: int = 4,
    ) -> None:
        self.allow_rules = parse_allow_list(crawl_allow) + parse_allow_list(
            os.environ.get("REACTOR_CRAWL_ALLOW")
        )
        self.crawl_timeout = crawl_timeout
        self.crawl_max_bytes = crawl_max_bytes
        # A crawl lasts at most a few timeouts; one timeout is a fair time to come back after.
        retry_after = max(1, math.ceil(crawl_timeout))
        self.crawls = CrawlPool(
            per_user=crawl_per_user, at_once=crawl_at_once, retry_after=retry_after
        )
        self.demo = False
        self.store: SiteStore | None = None

    def setup(self, context: ServerContext, *, seed: bool) -> None:
        """Create the tables; with `seed`, the demo sites and the demo sources."""
        self.store = SiteStore(context.database)
        self.demo = seed
        if seed:
            seed_demo(self.store)

    def routes(self, context: ServerContext) -> list[Route]:
        store = self.store or SiteStore(context.database)
        routes = api_routes(store, Access(context.auth, store), self.fetch_policy, self.crawls)
        routes += public_routes(store)
        if self.demo:
            routes += demo_source_routes()
        return routes

    def fetch_policy(self, request: Request) -> FetchPolicy:
        """The allow-list for this request: configured rules, plus this server's demo sources."""
        rules = self.allow_rules
        server = request.scope.get("server")
        if self.demo and server and server[1]:
            rules = rules + (AllowRule(str(server[0]).lower(), int(server[1]), DEMO_SOURCES),)
        return FetchPolicy(
            rules, self.crawl_timeout, self.crawl_max_bytes, reader=CRAWLER, user_agent=USER_AGENT
        )
