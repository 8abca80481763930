"""The server's OpenAPI 3.1 document (`GET /openapi.json`), read off the routes themselves.

Each endpoint declares what it takes and answers with `@operation(...)`, beside its code, so the
document is written where the route is. Every operation also answers errors as
`{"error": sentence, "field"?, "problems"?}` (the `default` response); tests/test_openapi.py
fuzzes the document with schemathesis.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from starlette.routing import BaseRoute, Route

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])

ERROR: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {"type": "string", "description": "What was wrong, as a sentence to act on."},
        "field": {"type": "string", "description": "The field of the request that was wrong."},
        "problems": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["path", "message"],
                "properties": {"path": {"type": "string"}, "message": {"type": "string"}},
            },
        },
    },
}
HTML = {"text/html": {"schema": {"type": "string"}}}
ANY_FILE = {"*/*": {"schema": {"type": "string", "format": "binary"}}}
NO_CONTENT = None
SECURITY: list[dict[str, list[str]]] = [{"bearer": []}, {"cookie": []}, {}]  # a bearer token, the session cookie, or nobody


def operation(
    summary: str,
    *,
    responses: dict[int, Any],
    body: dict[str, Any] | None = None,
    query: dict[str, dict[str, Any]] | None = None,
    description: str = "",
    required_query: Iterable[str] = (),
) -> Callable[[Endpoint], Endpoint]:
    """Describe an endpoint: `responses` maps a status to the JSON schema of its answer, to a
    content map by media type (`HTML`, `ANY_FILE`, ...), or to NO_CONTENT; `body` is the JSON
    schema of a JSON request body."""
    spec = {
        "summary": summary,
        "description": description,
        "responses": responses,
        "body": body,
        "query": query or {},
        "required_query": set(required_query),
    }

    def describe(endpoint: Endpoint) -> Endpoint:
        endpoint.openapi = spec  # type: ignore[attr-defined]
        return endpoint

    return describe


UNDESCRIBED: dict[str, Any] = {
    "summary": "Not described by its plugin.",
    "description": "",
    "responses": {},
    "body": None,
    "query": {},
    "required_query": set(),
}


def openapi_document(routes: Iterable[BaseRoute], *, title: str, version: str) -> dict[str, Any]:
    """The document of every Route; one without `@operation` (a plugin's that says nothing) is
    listed as UNDESCRIBED, which the product's own routes never are (tests/test_openapi.py)."""
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        if not isinstance(route, Route):
            continue
        spec = getattr(route.endpoint, "openapi", None) or UNDESCRIBED
        path = re.sub(r"\{(\w+)(:\w+)?\}", r"{\1}", route.path)
        for method in sorted((route.methods or {"GET"}) - {"HEAD"}):
            paths.setdefault(path, {})[method.lower()] = _operation(path, spec)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version,
            "description": "Every write is JSON from the server's own origin (or an allowed one) when the "
            "session cookie authenticates it; a bearer token needs neither. See docs/SECURITY.md.",
        },
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "The token POST /auth/sign-in answers."},
                "cookie": {"type": "apiKey", "in": "cookie", "name": "reactor_session"},
            },
            "schemas": {"Error": ERROR},
        },
    }


def _operation(path: str, spec: dict[str, Any]) -> dict[str, Any]:
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
        for name in re.findall(r"\{(\w+)\}", path)
    ]
    parameters += [
        {"name": name, "in": "query", "required": name in spec["required_query"], "schema": schema}
        for name, schema in spec["query"].items()
    ]
    responses: dict[str, Any] = {}
    for status, content in spec["responses"].items():
        answer: dict[str, Any] = {"description": _REASONS.get(status, "")}
        if content is not None:
            answer["content"] = content if _is_content(content) else {"application/json": {"schema": content}}
        responses[str(status)] = answer
    responses["default"] = {
        "description": "Refused or failed, with a sentence saying why.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    described: dict[str, Any] = {
        "summary": spec["summary"],
        "parameters": parameters,
        "responses": responses,
        "security": SECURITY,
    }
    if spec["description"]:
        described["description"] = spec["description"]
    if spec["body"] is not None:
        described["requestBody"] = {"required": True, "content": {"application/json": {"schema": spec["body"]}}}
    return described


def _is_content(value: dict[str, Any]) -> bool:
    """A content map ({"text/html": {...}}) rather than a JSON schema: its keys are media types."""
    return bool(value) and all("/" in key for key in value)


_REASONS = {200: "OK", 201: "Created", 204: "No content", 304: "Not modified"}
