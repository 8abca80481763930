"""Where the app's routes come from: each one from its declaration (server/api.py), method and
path included, so that what is served and what /openapi.json lists cannot drift apart."""

from __future__ import annotations

import functools
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
from reactor.server.gateway.config import AssistantConfig

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


def handler_of(endpoint: Any) -> Any:
    """The function a route runs, beneath what wraps it: a plugin's switch (`endpoint`),
    routes_of's services (`endpoint`), the declaration's checks (`handler`), a partial."""
    while inspect.isfunction(endpoint) or isinstance(endpoint, functools.partial):
        if isinstance(endpoint, functools.partial):  # a CORS preflight, bound to its path
            endpoint = endpoint.func
            continue
        names = inspect.getclosurevars(endpoint).nonlocals
        inner = names.get("handler", names.get("endpoint"))
        if inner is None:
            break
        endpoint = inner
    return endpoint


def test_every_declared_handler_is_module_level():
    # the site's model's routes are served only with an assistant configured
    assistant = AssistantConfig(provider="openai", model="m", base_url="http://127.0.0.1:9/v1")
    with_assistant = create_app(
        tempfile.mkdtemp(prefix="reactor-routes-"), allow_hosts=["testserver"], assistant=assistant
    )
    handlers = set()
    for route in [*APP.routes, *with_assistant.routes]:
        if isinstance(route, Route):
            handler = handler_of(route.endpoint)
            name = getattr(handler, "__qualname__", type(handler).__qualname__)
            handlers.add(f"{handler.__module__}.{name}")
    assert "reactor.server.threads.routes.list_threads" in handlers
    assert any(name.startswith("reactor.server.gateway.route.") for name in handlers)
    made_inside = {name.split(".<locals>.")[0] for name in handlers if "<locals>" in name}
    assert not made_inside, "handlers made inside these functions, not declared at import"
