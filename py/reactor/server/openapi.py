"""The server's OpenAPI 3.1 document (`GET /openapi.json`), written from the routes' declarations
(server/api.py): the same ones that check each request.

Beside what a route declares, the document lists what its declaration's checks refuse (for a
body, 400, 413 and 422; for a query, 422; for a constrained path segment, 404) and what the
middleware in front of it refuses, each as the middleware declares it (`refusals`, api.Refusal):
421 for a host the server does not serve (auth/protection.py HostCheck), 403 from another site
and 415 for a cookie write that is not JSON (CrossSiteWriteGuard), 401 for an agent token
anywhere but /mcp (agents/tokens.py), 500 and 503 (faults.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.routing import BaseRoute, Route

from .api import (
    ERROR,
    PATH_SEGMENT,
    RETRY_AFTER,
    Declaration,
    Refusal,
    Reply,
    declaration_of,
)

# a bearer token, the session cookie, or nobody
SECURITY: list[dict[str, list[str]]] = [{"bearer": []}, {"cookie": []}, {}]
REASONS = {200: "OK", 201: "Created", 204: "No content", 304: "Not modified", 404: "Not found"}


def openapi_document(
    routes: Iterable[BaseRoute],
    *,
    title: str,
    version: str,
    refusals: Iterable[Refusal] = (),
) -> dict[str, Any]:
    """The document of every Route with a declaration, each with the `refusals` of the
    middleware in front (api.refusals_of) that can answer it; a route without a declaration is
    left out, which the app's routes never are (tests/test_routes.py)."""
    refusals = list(refusals)
    paths: dict[str, dict[str, Any]] = {}
    names: set[str] = set()
    for route in routes:
        declaration = declaration_of(route.endpoint) if isinstance(route, Route) else None
        if declaration is None:
            continue
        assert isinstance(route, Route)
        path = re.sub(r"\{(\w+)(:\w+)?\}", r"{\1}", route.path)
        for method in sorted((route.methods or {"GET"}) - {"HEAD"}):
            name = _unique(declaration.name or method.lower(), path, method, names)
            in_front = {r.status: r.when for r in refusals if r.applies(method, route.path)}
            paths.setdefault(path, {})[method.lower()] = _operation(
                path, method, declaration, name, in_front
            )
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version,
            "description": "Every write is JSON from the server's own origin (or an allowed one) "
            "when the "
            "session cookie authenticates it; a bearer token needs neither. Every refusal is "
            '`{"error": sentence}`, with `field` naming what was wrong. See docs/SECURITY.md.',
        },
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The token POST /auth/sign-in answers.",
                },
                "cookie": {"type": "apiKey", "in": "cookie", "name": "reactor_session"},
            },
            "schemas": {"Error": ERROR},
        },
    }


def _unique(name: str, path: str, method: str, taken: set[str]) -> str:
    """`name`, or (when another operation has it) `name` with its method and path."""
    if name in taken:
        name = "_".join([name, method.lower(), *re.findall(r"[A-Za-z0-9]+", path)])
    taken.add(name)
    return name


def _operation(
    path: str, method: str, declaration: Declaration, name: str, in_front: dict[int, str]
) -> dict[str, Any]:
    parameters = [
        {
            "name": segment,
            "in": "path",
            "required": True,
            "schema": declaration.path.get(segment, PATH_SEGMENT),
        }
        for segment in re.findall(r"\{(\w+)\}", path)
    ]
    parameters += [
        {
            "name": key,
            "in": "query",
            "required": key in declaration.required_query,
            "schema": schema,
        }
        for key, schema in declaration.query.items()
    ]
    refusals = {**in_front, **declaration.checked(), **declaration.refusals}
    refusals = {
        status: when for status, when in refusals.items() if status not in declaration.replies
    }
    responses = {
        str(status): _reply(status, reply) for status, reply in sorted(declaration.replies.items())
    }
    for status, when in sorted(refusals.items()):
        answer: dict[str, Any] = {
            "description": when,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
        if status in (429, 503):
            answer["headers"] = _headers(RETRY_AFTER, required=status == 429)
        responses[str(status)] = answer
    described: dict[str, Any] = {
        "operationId": name,
        "summary": declaration.summary,
        "parameters": parameters,
        "responses": responses,
        "security": SECURITY,
    }
    if declaration.description:
        described["description"] = declaration.description
    if declaration.body is not None:
        described["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": declaration.body}},
        }
    return described


def _reply(status: int, reply: Reply) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": REASONS.get(status, "")}
    if reply.content is not None:
        answer["content"] = dict(reply.content)
    elif reply.schema is not None:
        answer["content"] = {"application/json": {"schema": reply.schema}}
    if reply.headers:
        # a reply sends each header it declares
        answer["headers"] = _headers(reply.headers, required=True)
    return answer


def _headers(headers: Mapping[str, str], *, required: bool = False) -> dict[str, Any]:
    return {
        name: {"description": what, "required": required, "schema": {"type": "string"}}
        for name, what in headers.items()
    }
