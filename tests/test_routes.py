"""Where the app's routes come from: each one from its declaration (server/api.py), method and
path included, so that what is served and what /openapi.json lists cannot drift apart."""

from __future__ import annotations

import inspect
import re
import tempfile
from typing import Any

import pytest
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient

from reactor.errors import DeclarationError
from reactor.server.agents.mcp import LINK_PATH
from reactor.server.agents.mcp import PATH as MCP_PATH
from reactor.server.agents.tokens import PREFIX, AgentTokensOnlyOnMcp
from reactor.server.api import Call, declaration_of, refusals_of, routes_of
from reactor.server.app import create_app
from reactor.server.auth.protection import CrossSiteWriteGuard, HostCheck

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


# Modules whose handlers are still made per app, inside a function (issue 50 converts them).
NOT_YET_MODULE_LEVEL = {
    "reactor.server.auth.sessions": "issue 50: Auth.routes still closes over the auth",
    "reactor.server.agents.tokens": "issue 50: AgentTokens.routes still closes over the tokens",
    "reactor.server.agents.oauth.metadata": "issue 50: for_every_origin wraps per app",
    "reactor.server.agents.oauth.authorize": "issue 50: Authorize.routes still closes over it",
    "reactor.server.agents.oauth.grants": "issue 50: Grants.routes still closes over the grants",
    "reactor.server.threads.routes": "issue 50: Threads.routes still closes over the store",
    "reactor.server.health": "issue 50: health_routes still closes over the readiness",
    "reactor.server.metrics": "issue 50: Metrics.routes still closes over the metrics",
    "reactor.server.app": "/openapi.json answers the document of the app it is made for",
    "reactor_plugins.cms.backend.api": "route() runs each module-level handler on the thread "
    "pool: its `run`, made once at import",
}


def test_every_declared_handler_is_module_level():
    """A handler is declared once at import and takes what it works with from `call.services`:
    one reading of a route's code, whichever app serves it."""
    made_inside = []
    for route in APP.routes:
        if not isinstance(route, Route):
            continue
        handler = inspect.unwrap(route.endpoint)  # through routes_of's and a switch's wrappers
        module = getattr(handler, "__module__", "")
        name = getattr(handler, "__qualname__", type(handler).__qualname__)
        if "<locals>" in name and module not in NOT_YET_MODULE_LEVEL:
            made_inside.append(f"{route.path}: {module}.{name}")
    assert made_inside == []


def test_a_handler_without_a_declaration_is_no_route_and_says_how_to_declare_it():
    async def notes(call: Call) -> Any:
        return []

    with pytest.raises(DeclarationError, match=r"'notes': has no declaration: declare it with"):
        routes_of(notes)


def test_the_document_names_each_middleware_refusal_as_its_middleware_declares_it():
    declared = refusals_of(APP.user_middleware)
    assert {401, 403, 415, 421, 500, 503} <= {refusal.status for refusal in declared}
    with TestClient(APP) as client:
        document = client.get("/openapi.json").json()
    listed = 0
    for route in APP.routes:
        if not isinstance(route, Route):
            continue
        declaration = declaration_of(route.endpoint)
        assert declaration is not None
        path = re.sub(r"\{(\w+)(:\w+)?\}", r"{\1}", route.path)
        for method in declaration.methods:
            responses = document["paths"][path][method.lower()]["responses"]
            own = {**declaration.replies, **declaration.refusals, **declaration.checked()}
            for refusal in declared:
                if refusal.status in own:
                    continue  # the route says it in its own words
                answer = responses.get(str(refusal.status), {})
                if refusal.applies(method, route.path):
                    assert answer["description"] == refusal.when, (method, path)
                    listed += 1
                else:  # a path the middleware spares: not claimed there
                    assert answer.get("description") != refusal.when, (method, path)
    assert listed > 200
    # /mcp is described by its own declaration (its 401 the transport's challenge), not spared
    # by name in the document
    (agent_tokens,) = [r for r in declared if r.status == 401]
    assert not agent_tokens.applies("POST", MCP_PATH) and agent_tokens.applies("GET", "/auth/me")


@pytest.mark.parametrize(
    "middleware, request_",
    [
        (HostCheck, {"method": "GET", "url": "/auth/me", "headers": {"host": "evil.example"}}),
        (
            CrossSiteWriteGuard,
            {
                "method": "POST",
                "url": "/auth/sign-out",
                "content": b"a=1",
                "headers": {"content-type": "application/x-www-form-urlencoded"},
            },
        ),
        (
            CrossSiteWriteGuard,
            {
                "method": "POST",
                "url": "/auth/sign-out",
                "headers": {"origin": "https://evil.example"},
            },
        ),
        (
            AgentTokensOnlyOnMcp,
            {"method": "GET", "url": "/auth/me", "headers": {"authorization": f"Bearer {PREFIX}x"}},
        ),
    ],
)
def test_what_a_middleware_refuses_is_a_status_it_declares(middleware, request_):
    (entry,) = [m for m in APP.user_middleware if m.cls is middleware]
    declared = {refusal.status for refusal in middleware.refusals(**entry.kwargs)}
    with TestClient(APP) as client:
        answer = client.request(**request_)
    assert answer.status_code in declared and answer.json()["error"]
