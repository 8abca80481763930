"""Where the app's routes come from: each one from its declaration (server/api.py), method and
path included, so that what is served and what /openapi.json lists cannot drift apart."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from starlette.routing import Route, WebSocketRoute

from reactor.errors import DeclarationError
from reactor.server.agents.mcp import LINK_PATH
from reactor.server.api import Call, declaration_of, routes_of
from reactor.server.app import create_app

APP = create_app(tempfile.mkdtemp(prefix="reactor-routes-"), allow_hosts=["testserver"])


def test_every_route_the_app_serves_is_made_from_its_declaration():
    served = 0
    for route in APP.routes:
        if isinstance(route, WebSocketRoute):
            # the page's link; its plain GET (the 426 saying what to set) is declared
            assert route.path == LINK_PATH
            continue
        assert isinstance(route, Route), route
        declaration = declaration_of(route.endpoint)
        assert declaration is not None, f"{route.path} is served without a declaration"
        assert route.path in declaration.paths, route.path
        assert set(route.methods or ()) - {"HEAD"} == set(declaration.methods), route.path
        served += 1
    # the page, sign-in, plugins, the CMS, decks, threads, agents, OAuth, health, /mcp …
    assert served > 60


def test_a_handler_without_a_declaration_is_no_route_and_says_how_to_declare_it():
    async def notes(call: Call) -> Any:
        return []

    with pytest.raises(DeclarationError, match=r"'notes': has no declaration: declare it with"):
        routes_of(notes)
