"""An HTTP route's one declaration: what it takes (path, query, a JSON body) and what it answers
(each status, its schema, the headers it sends).

The same declaration checks every request before its handler runs — anything outside it is a
422 naming the field (a path segment outside it, a 404), never clamped or replaced by a
default — and writes the route's entry in `/openapi.json` (server/openapi.py), so the two
cannot disagree. A handler refuses with `raise ApiError(status, sentence)`; the app's handlers
(server/faults.py) answer it with `error_answer`, which turns a refusal, a database fault or a
bug into its answer, `{"error": sentence, "field"?, ...}`. A middleware declares what it refuses
in front of the routes (`Refusal`, its `refusals(**options)`), for the document. A
schema's `x-refusal` is the sentence a person reads when a value breaks it (`x-unknown`, when
the body has a field it does not take).

    @declare("DELETE", "/api/agent-tokens/{id}", "Revoke an agent token", path={"id": TOKEN_ID},
             replies={200: Reply(REVOKED)},
             refusals={401: "Nobody is signed in.", 404: "No such token of theirs."})
    async def revoke_token(call: Call) -> Any: ...

    routes = routes_of(revoke_token, ...)  # the app's Routes, each from its declaration
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import ApiError, DatabaseBusy, DatabaseUnavailable, refusal
from ..json_schema import Validator
from ..schema import json_path, shortened
from .requests import read_json

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
EVENTS = {"text/event-stream": {"schema": {"type": "string"}}}
# Headers an answer sends, by name: what each holds (the document lists them per answer).
NO_STORE = {"cache-control": "no-store: the answer is this person's, as of now"}
ETAG = {"etag": "The version of what was answered, for If-None-Match or If-Match"}
REVALIDATED = {**ETAG, "cache-control": "no-cache: ask again each time, with If-None-Match"}
RETRY_AFTER = {"retry-after": "Seconds to wait before asking again"}
BUSY_RETRY_SECONDS = 1
DOWN_RETRY_SECONDS = 2  # a restarted PostgreSQL answers again within a second or two
DATABASE_DOWN = "The site's database is not answering; try again in a few seconds."
FAULT = (
    "Something went wrong on the server; try again, and tell the site's operator if it goes on "
    "(the server's log has the details)."
)
log = logging.getLogger("reactor.server")
BODY_LIMIT = 64 * 1024
# What a declaration's checks refuse before its handler runs, by what it declares.
BODY_REFUSALS = {
    400: "The body is not a JSON object.",
    413: "The body is larger than this route takes.",
    422: "The body breaks its schema; `field` names where.",
}
QUERY_REFUSALS = {422: "A query parameter breaks its schema; `field` names which."}
PATH_REFUSALS = {404: "A path segment names nothing that can be here."}
PATH_SEGMENT = {"type": "string", "minLength": 1}
SERVICES = "reactor.services"  # scope key: what routes_of serves a route with


@dataclass(frozen=True)
class Reply:
    """One answer a route gives: the JSON schema of its body (or `content`, a map of media types
    for any other body; neither for none) and the headers it sends."""

    schema: Any = None
    content: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Declaration:
    """Everything a route takes and answers: where (`methods` at each of `paths`), `replies`
    the answers it makes itself (its successes, and a refusal with a body of its own, such as an
    HTML page's 404), `refusals` every other status it answers, with when (as `{"error":
    sentence}`)."""

    summary: str
    replies: Mapping[int, Reply]
    refusals: Mapping[int, str] = field(default_factory=dict)
    body: Mapping[str, Any] | None = None
    query: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    required_query: frozenset[str] = frozenset()
    path: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    description: str = ""
    body_limit: int = BODY_LIMIT
    too_large: str = ""  # the 413's sentence, when the route says it in its own words
    name: str = ""
    methods: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()

    def checked(self) -> dict[int, str]:
        """What this declaration's own checks refuse, by what it declares (a body, a query, a
        constrained path segment), with when."""
        refused: dict[int, str] = {}
        if self.body is not None:
            refused |= BODY_REFUSALS
        if self.query:
            refused |= QUERY_REFUSALS
        if self.path:
            refused |= PATH_REFUSALS
        return refused

    def __post_init__(self) -> None:
        for status in set(self.replies) & set(self.refusals):
            raise refusal(
                "Route",
                self.name or self.summary,
                "refusals",
                status,
                f"{status} is a reply already; keep one.",
            )
        for status in self.refusals:
            if status < 400:
                raise refusal(
                    "Route",
                    self.name or self.summary,
                    "refusals",
                    status,
                    f"{status} is not an error status.",
                )


@dataclass(frozen=True)
class Refusal:
    """A status a middleware answers in front of the routes, and when: the document lists it on
    every operation it can answer (of `methods` only, when given; never at a `spared` path)."""

    status: int
    when: str
    methods: frozenset[str] | None = None
    spared: tuple[str, ...] = ()

    def applies(self, method: str, path: str) -> bool:
        return (self.methods is None or method in self.methods) and path not in self.spared


def refusals_of(middleware: Iterable[Any]) -> list[Refusal]:
    """What each of the app's middleware (Starlette `Middleware(cls, **options)`) declares it
    refuses: its class's `refusals(**options)`, none when it has no such method."""
    found: list[Refusal] = []
    for entry in middleware:
        declared = getattr(entry.cls, "refusals", None)
        if declared is not None:
            found += declared(**entry.kwargs)
    return found


@dataclass(frozen=True)
class Call:
    """A request its declaration accepted: the checked body, the query as typed values (only
    the parameters it carried), the path parameters."""

    request: Request
    body: Any
    query: dict[str, Any]
    path: dict[str, str]
    user: Any = None  # what the declaration's `who` answered: the signed-in user
    services: Any = None  # what the app serves the route with (routes_of's `services`)


Handler = Callable[[Call], Awaitable[Any]]
Endpoint = Callable[[Request], Awaitable[Response]]


def declare(
    method: str | tuple[str, ...],
    at: str | tuple[str, ...],
    summary: str,
    *,
    replies: Mapping[int, Reply],
    refusals: Mapping[int, str] | None = None,
    body: Mapping[str, Any] | None = None,
    query: Mapping[str, Mapping[str, Any]] | None = None,
    required_query: tuple[str, ...] = (),
    path: Mapping[str, Mapping[str, Any]] | None = None,
    description: str = "",
    body_limit: int = BODY_LIMIT,
    too_large: str = "",
    who: Callable[[Request], Any] | None = None,
) -> Callable[[Handler], Endpoint]:
    """Make `handler(call)` the Starlette endpoint of `method` at `at` (a path, or several
    served alike), which checks each request against this declaration first: `who(request)` (the
    user, or ApiError 401/403) before the body is read, then the path, the query and the body.
    The handler answers a Response, or a JSON value sent with the one success status declared.
    `routes_of` makes its Routes."""

    def wrap(handler: Handler) -> Endpoint:
        declaration = Declaration(
            summary,
            replies,
            refusals or {},
            body,
            query or {},
            frozenset(required_query),
            path or {},
            description,
            body_limit,
            too_large,
            handler.__name__,
            *_where(method, at),
        )
        checks = _Checks(declaration, who)
        successes = [status for status in replies if status < 300]
        success = successes[0] if len(successes) == 1 else 200

        async def endpoint(request: Request) -> Response:
            # a refusal, a fault: raised on to the app's one answer of errors (server/faults.py)
            answer = await handler(await checks.call(request))
            return answer if isinstance(answer, Response) else JSONResponse(answer, success)

        endpoint.__name__ = endpoint.__qualname__ = handler.__name__
        endpoint.__doc__ = handler.__doc__
        endpoint.__wrapped__ = handler  # type: ignore[attr-defined]  # for inspect.unwrap
        endpoint.declaration = declaration  # type: ignore[attr-defined]
        return endpoint

    return wrap


def documented(
    method: str | tuple[str, ...], at: str | tuple[str, ...], declaration: Declaration
) -> Callable[[Any], Any]:
    """For an endpoint that checks its own requests (MCP's transport, OAuth's RFC endpoints):
    where it is served and its declaration, for `routes_of` and the document."""
    methods, paths = _where(method, at)

    def attach(app: Any) -> Any:
        app.declaration = dataclasses.replace(declaration, methods=methods, paths=paths)
        return app

    return attach


def declaration_of(endpoint: Any) -> Declaration | None:
    return getattr(endpoint, "declaration", None)


def routes_of(*endpoints: Any, services: Any = None) -> list[Route]:
    """The Routes of declared endpoints: each at every path its declaration names, for its
    methods. A request tries them in this order. A module-level handler takes what it works with
    from `services` (`call.services`; `services_of(request)` for a `who`): one set per app."""
    routes = []
    for endpoint in endpoints:
        if services is not None:
            endpoint = _serving(endpoint, services)
        declaration = declaration_of(endpoint)
        if declaration is None or not declaration.paths:
            raise refusal(
                "Route",
                getattr(endpoint, "__name__", repr(endpoint)),
                "",
                None,
                "has no declaration: declare it with @declare(method, path, summary, ...).",
            )
        routes += [
            Route(at, endpoint, methods=list(declaration.methods)) for at in declaration.paths
        ]
    return routes


def services_of(request: Request) -> Any:
    """The services the app serves this request's route with (routes_of's `services`)."""
    return request.scope.get(SERVICES)


def _serving(endpoint: Any, services: Any) -> Any:
    async def served(request: Request) -> Response:
        request.scope[SERVICES] = services
        response: Response = await endpoint(request)
        return response

    served.__name__ = served.__qualname__ = getattr(endpoint, "__name__", "served")
    served.__doc__ = endpoint.__doc__
    served.__wrapped__ = endpoint  # type: ignore[attr-defined]
    served.declaration = declaration_of(endpoint)  # type: ignore[attr-defined]
    return served


def _where(
    method: str | tuple[str, ...], at: str | tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return (method,) if isinstance(method, str) else method, (at,) if isinstance(at, str) else at


def error_answer(error: Exception) -> JSONResponse:
    """The one answer of every refusal: `{"error": sentence, "field"?, ...details}` with its
    headers (a database fault or a bug as `refusal_of` says)."""
    error = refusal_of(error)
    extra = {"field": error.field} if error.field else {}
    return JSONResponse(
        {"error": error.sentence, **extra, **error.details}, error.status, headers=error.headers
    )


def refusal_of(error: Exception) -> ApiError:
    """What the person is told of an error: an ApiError as it is; a database fault a 503 with
    Retry-After, logged in one line; any other exception is a bug: a 500 with a sentence, its
    traceback logged. Each is logged here, once."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, DatabaseUnavailable):
        log.warning("%s", error)  # its sentence names the database without its password
        return ApiError(503, DATABASE_DOWN, retry_after=DOWN_RETRY_SECONDS)
    if isinstance(error, DatabaseBusy):
        log.warning("%s", error)
        return ApiError(
            503,
            "The database is busy with other changes; try again in a moment.",
            retry_after=BUSY_RETRY_SECONDS,
        )
    log.error("A request failed with a fault of the server", exc_info=error)
    return ApiError(500, FAULT)


def unchanged(request: Request, etag: str) -> bool:
    """Whether the request's If-None-Match names `etag` (or `*`): its 304. Compared weakly, as
    RFC 9110 has it for GET: `W/"x"` and `"x"` are the same version."""
    header = request.headers.get("if-none-match")
    if not header:
        return False
    if header.strip() == "*":
        return True
    tag = etag.removeprefix("W/")
    return any(given.strip().removeprefix("W/") == tag for given in header.split(","))


def error_response(
    status: int, sentence: str, *, retry_after: int | None = None, **details: Any
) -> JSONResponse:
    """The answer of a refusal made outside a declared route (middleware, MCP's transport)."""
    return error_answer(ApiError(status, sentence, retry_after=retry_after, **details))


def body_refusal(
    schema: Any, body: dict[str, Any], problems: list[tuple[tuple[Any, ...], str]]
) -> ApiError:
    """The 422 of a body its schema refuses, naming the field: a field it does not take (the
    sentence is the schema's `x-unknown`) or one missing first, then the shallowest problem (the
    `x-refusal` of the deepest schema on its way that has one). `{field}`, `{value}` and
    `{problems}` are filled in; without a sentence, the validator's words. `problems` lists every
    problem as {path, message}."""
    problems = sorted(problems, key=lambda p: (len(p[0]), list(map(str, p[0]))))
    listed = [
        {"path": json_path(path), "message": shortened(message)} for path, message in problems[:20]
    ]
    names = schema.get("properties", {})
    unknown = (
        [key for key in body if key not in names]
        if schema.get("additionalProperties") is False
        else []
    )
    missing = [key for key in schema.get("required", []) if key not in body]
    path: tuple[Any, ...] = ()
    if unknown:
        field, rule = unknown[0][:80], f"it takes no field {unknown[0][:60]!r}"
        sentence = schema.get("x-unknown", "")
    else:
        if missing:
            field, rule, path = missing[0], f"the field {missing[0]!r} is missing", (missing[0],)
        else:
            path, rule = problems[0]
            # a member a condition requires (if/then): name the member
            wanted = _REQUIRED.fullmatch(rule)
            path = (*path, wanted.group(1)) if wanted else path
            field, rule = (
                json_path(path).removeprefix("$").removeprefix(".") or "body",
                listed[0]["message"],
            )
        sentence = _deepest_refusal(schema, path)
    value = body
    for key in path:
        value = _member(value, key)
    sentence = (sentence or "The body is not what this route takes: {rule}.").replace(
        "{rule}", rule
    )
    sentence = sentence.replace("{field}", repr(field)).replace(
        "{value}", repr(value)[:60] if path else ""
    )
    sentence = sentence.replace(
        "{problems}", "; ".join(f"{p['path']}: {p['message']}" for p in listed)
    )
    return ApiError(422, sentence, field=field, problems=listed)


def _deepest_refusal(schema: Any, path: tuple[Any, ...]) -> str:
    sentence = ""
    for key in (None, *path):
        if key is not None:
            schema = schema.get("properties", {}).get(key) if isinstance(schema, dict) else None
        if not isinstance(schema, dict):
            break
        sentence = schema.get("x-refusal", sentence)
    return sentence


def _member(value: Any, key: Any) -> Any:
    if isinstance(value, dict):
        return value.get(key)
    if isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
        return value[key]
    return None


class _Checks:
    """A declaration's checks, compiled once."""

    def __init__(self, declaration: Declaration, who: Callable[[Request], Any] | None) -> None:
        self.declaration, self.who = declaration, who
        self.body = None if declaration.body is None else Validator(declaration.body)
        self.query = {
            name: (schema, Validator(schema)) for name, schema in declaration.query.items()
        }
        self.path = {name: Validator(schema) for name, schema in declaration.path.items()}

    async def call(self, request: Request) -> Call:
        user = None if self.who is None else self.who(request)
        path = {name: str(value) for name, value in request.path_params.items()}
        for name, validator in self.path.items():
            if not validator.is_valid(path.get(name)):
                raise ApiError(
                    404, f"There is no {name} {path.get(name, '')[:80]!r} here.", field=name
                )
        query: dict[str, Any] = {}
        for name, (schema, validator) in self.query.items():
            values = request.query_params.getlist(name)
            if not values:
                if name in self.declaration.required_query:
                    raise ApiError(422, f"The query parameter {name!r} is missing.", field=name)
                continue
            if len(values) > 1:
                raise ApiError(
                    422,
                    f"Send the query parameter {name!r} once, not {len(values)} times.",
                    field=name,
                )
            value = _typed(values[0], schema)
            problems = validator.problems(value)
            if problems:
                raise ApiError(
                    422,
                    f"The query parameter {name!r} is {values[0][:60]!r}: {problems[0][1]}.",
                    field=name,
                )
            query[name] = value
        body = None
        if self.body is not None:
            body = await read_json(
                request, limit=self.declaration.body_limit, too_large=self.declaration.too_large
            )
            problems = self.body.problems(body)
            if problems:
                raise body_refusal(self.declaration.body, body, problems)
        return Call(request, body, query, path, user, request.scope.get(SERVICES))


_REQUIRED = re.compile(r"'(.+)' is a required property")  # reactor.json_schema's words
_INTEGER = re.compile(r"-?(0|[1-9][0-9]{0,17})")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def _typed(text: str, schema: Mapping[str, Any]) -> Any:
    """A query string's value as the JSON value its schema's type reads it as (the text itself
    when it is not one: the schema then refuses it)."""
    kind = schema.get("type")
    if kind == "integer" and _INTEGER.fullmatch(text):
        return int(text)
    if kind == "number" and _NUMBER.fullmatch(text) and len(text) <= 40:
        return float(text) if any(c in text for c in ".eE") else int(text)
    if kind == "boolean" and text in ("true", "false"):
        return text == "true"
    return text
