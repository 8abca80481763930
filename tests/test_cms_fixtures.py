"""Helpers for the CMS tests (no tests here): the CMS app inline, signed-in clients, and a
real loopback server of source material for the crawler — fixtures and hostile answers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from conftest import AppClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from reactor import PluginPlatform
from reactor.server.auth.sessions import Auth
from reactor.server.database import Database
from reactor.server.faults import ANSWERS
from reactor.server.loopback import LoopbackServer
from reactor.server.plugins.context import ServerContext
from reactor.server.plugins.records import PluginRecords
from reactor_plugins.cms.backend.demo import demo_source_routes
from reactor_plugins.cms.spec import cms_plugin


class Client(AppClient):
    """Requests to an inline ASGI app, as one user (a bearer token) or as nobody; a write's body
    is JSON unless it says otherwise."""

    def __init__(self, app: Any, auth: Auth, token: str = "") -> None:
        super().__init__(
            app, "http://cms.test", {"authorization": f"Bearer {token}"} if token else {}
        )
        self.auth, self.token = auth, token

    def as_user(self, username: str) -> Client:
        token = self.auth.sign_in(username, f"{username}-demo")
        assert token, f"the demo user {username!r} could not sign in"
        return Client(self.app, self.auth, token)

    def request(self, method: str, url: str, **options: Any) -> httpx.Response:
        if method != "GET" and "content" not in options:
            options["headers"] = {"content-type": "application/json", **options.get("headers", {})}
        return super().request(method, url, **options)


def serve_cms(
    tmp_path: Any, *, seed: bool = True, target: str = "", **options: Any
) -> tuple[Client, Database]:
    """The CMS server plugin alone in a Starlette app, over demo users (and demo sites with
    `seed`)."""
    database = Database(target or tmp_path / "cms.sqlite3")
    platform = PluginPlatform([cms_plugin(**options)])
    plugin = platform.server_half("cms")
    auth = Auth(database, seed=True)
    context = ServerContext(database, auth, platform, PluginRecords(database, auth, reserved=set()))
    plugin.setup(context, seed=seed)
    app = Starlette(routes=plugin.routes(context), exception_handlers=ANSWERS)
    return Client(app, context.auth), database


def entry_count(database: Database) -> int:
    with database.transaction() as db:
        return db.execute("SELECT COUNT(*) FROM cms_entries").fetchone()[0]


def source_app() -> Starlette:
    """The demo sources, plus answers a crawler must refuse or survive."""

    async def slow(request: Request) -> Response:
        await asyncio.sleep(3)
        return PlainTextResponse("too late")

    async def huge(request: Request) -> Response:
        return PlainTextResponse("x" * 300_000, media_type="text/html")

    async def dribble(request: Request) -> Response:
        async def chunks() -> Any:
            for _ in range(40):
                yield b"<p>slow</p>"
                await asyncio.sleep(0.1)

        from starlette.responses import StreamingResponse

        return StreamingResponse(chunks(), media_type="text/html")

    def redirect(to: str) -> Any:
        async def endpoint(request: Request) -> Response:
            return RedirectResponse(to, status_code=302)

        return endpoint

    async def doctype_feed(request: Request) -> Response:
        bomb = (
            '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol '
            '"lol">]><rss><channel><item><title>&lol;</title></item></channel></rss>'
        )
        return Response(bomb, media_type="application/rss+xml")

    async def slow_blog(request: Request) -> Response:
        articles = "".join(f'<article><a href="/slow?{n}">Post {n}</a></article>' for n in range(6))
        return Response(f"<main>{articles}</main>", media_type="text/html")

    return Starlette(
        exception_handlers=ANSWERS,
        routes=[
            *demo_source_routes(),
            Route("/slow-blog/", slow_blog),
            Route("/slow", slow),
            Route("/huge", huge),
            Route("/dribble", dribble),
            Route("/to-private", redirect("http://10.0.0.7/admin")),
            Route("/to-metadata", redirect("http://169.254.169.254/latest/meta-data/")),
            Route("/to-blog", redirect("/demo-sources/blog/")),
            Route("/bomb.xml", doctype_feed),
        ],
    )


@contextmanager
def source_server() -> Iterator[str]:
    """Serve `source_app()` on a free loopback port; yields its origin, e.g. http://127.0.0.1:4711."""
    with LoopbackServer(source_app(), start_timeout=10) as url:
        yield url
