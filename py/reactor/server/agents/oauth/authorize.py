"""/authorize: an agent's request to act as a person, shown to that person, who allows or denies.

`GET /authorize` reads the request (RFC 6749 §4.1.1, with OAuth 2.1's rules). The client
(clients.py) and its redirect URI come first: while either is in doubt nothing may be sent to
the redirect URI, so the person reads the refusal on the page (RFC 6749 §4.1.2.1). Then PKCE (S256
only, its method named: RFC 7636's default, plain, is refused), the response type and the
resource (this server's /mcp; any other is RFC 8707's `invalid_target`), each refused back to the
client. A request that passes is the consent page (consent.py), with the sign-in when nobody is
signed in.

The person's Allow or Deny is `POST /authorize/decision` from that page: JSON with the session
cookie, so the cross-site write guard holds it to this server's own pages, and the page cannot be
framed. It reads the whole request again (nothing is kept between the two), and answers where
the browser goes next: the redirect URI with a code, or with `access_denied`; `state` and `iss`
(RFC 9207) on every answer that goes back to the client.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from mcp.server.auth.provider import construct_redirect_uri
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from ....errors import ApiError, OAuthError, ReactorError
from ...api import HTML, Call, Declaration, Reply, declare, documented, routes_of, services_of
from ...auth.sessions import Auth, signed_in
from .clients import Clients
from .consent import AuthorizationRequest, consent_page, refusal_page
from .grants import MAX_GRANTS, Asked, Grants
from .metadata import AUTHORIZE_PATH, origin_of, resource_of, same_resource

CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")  # base64url of a SHA-256, unpadded
MAX_STATE = 1000
MAX_REQUEST = 8192
PARAMETERS = (
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
    "resource",
)
QUERY: dict[str, dict[str, Any]] = {
    "response_type": {"type": "string", "enum": ["code"]},
    "client_id": {
        "type": "string",
        "description": "A registered id, or an https address of a client ID metadata document.",
    },
    "redirect_uri": {"type": "string"},
    "code_challenge": {"type": "string", "pattern": "^[A-Za-z0-9_-]{43}$"},
    "code_challenge_method": {"type": "string", "enum": ["S256"]},
    "state": {"type": "string", "maxLength": MAX_STATE},
    "resource": {"type": "string", "description": "This server's /mcp (RFC 8707)."},
    "scope": {"type": "string", "description": "Read, not needed: one permission is granted."},
}
REQUIRED = ("response_type", "client_id", "code_challenge", "code_challenge_method")


class ToThePerson(ReactorError):
    """A refusal shown on the page: the redirect URI is not trusted (yet)."""

    def __init__(self, error: OAuthError) -> None:
        super().__init__(error.description)
        self.error = error


class ToTheClient(ReactorError):
    """A refusal sent back to the client, at its redirect URI."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


async def read_request(
    clients: Clients, pairs: Iterable[tuple[str, str]], scope: Scope
) -> AuthorizationRequest:
    """The request of these query pairs; ToThePerson or ToTheClient with the refusal."""
    params: dict[str, str] = {}
    for name, value in pairs:
        if name in PARAMETERS and name in params:
            raise ToThePerson(
                OAuthError("invalid_request", f"The request names {name} twice; OAuth allows once.")
            )
        params[name] = value
    try:
        client = await clients.find(params.get("client_id", ""))
        redirect_uri = client.redirect_for(params.get("redirect_uri"))
    except OAuthError as error:
        raise ToThePerson(error) from None
    state = params.get("state")
    issuer = origin_of(scope)
    if state is not None and len(state) > MAX_STATE:
        back = construct_redirect_uri(
            redirect_uri,
            error="invalid_request",
            error_description=f"The state is longer than {MAX_STATE} characters.",
            iss=issuer,
        )
        raise ToTheClient(back)
    asked_resource = params.get("resource", "")
    ours = resource_of(scope)
    request = AuthorizationRequest(
        client,
        redirect_uri,
        "redirect_uri" in params,
        params.get("code_challenge", ""),
        ours,
        state,
        issuer,
    )
    problem = _problem(params, asked_resource, ours)
    if problem is not None:
        raise ToTheClient(request.back(error=problem.code, error_description=problem.description))
    return request


def _problem(params: dict[str, str], asked_resource: str, ours: str) -> OAuthError | None:
    if params.get("response_type") != "code":
        return OAuthError(
            "unsupported_response_type",
            f"reactor answers response_type=code only, not {params.get('response_type', '')!r}.",
        )
    challenge, method = params.get("code_challenge"), params.get("code_challenge_method")
    if not challenge:
        return OAuthError(
            "invalid_request",
            "PKCE is required: send code_challenge with code_challenge_method=S256.",
        )
    if method != "S256":
        return OAuthError(
            "invalid_request",
            "reactor takes PKCE with code_challenge_method=S256 only"
            + (f", not {method[:20]!r}." if method else " (without a method, PKCE means plain)."),
        )
    if not CHALLENGE.fullmatch(challenge):
        return OAuthError(
            "invalid_request",
            "The code_challenge must be 43 characters of base64url: the SHA-256 of the verifier.",
        )
    if asked_resource and not same_resource(asked_resource, ours):
        return OAuthError(
            "invalid_target",
            f"reactor gives tokens for its own MCP endpoint ({ours}) only, not for "
            f"{asked_resource[:200]}.",
        )
    return None


@dataclass(frozen=True)
class AuthorizeServices:
    """What the two routes work with, one set per app: they take it from the call
    (`call.services`, `services_of(request)`: routes_of)."""

    auth: Auth
    clients: Clients
    grants: Grants


def authorize_routes(auth: Auth, clients: Clients, grants: Grants) -> list[Route]:
    """The two routes: the request shown, the person's decision."""
    return routes_of(authorize, decide, services=AuthorizeServices(auth, clients, grants))


@documented(
    "GET",
    AUTHORIZE_PATH,
    Declaration(
        "OAuth's authorization endpoint: the consent page, where the person signs in and "
        "allows or denies the agent",
        description="RFC 6749 §4.1.1 with PKCE S256 (RFC 7636) and resource (RFC 8707). "
        "A request whose client and redirect URI are known is refused back to the "
        "client (302 with error, error_description, state, iss); else on the page (400).",
        query=QUERY,
        required_query=frozenset(REQUIRED),
        replies={
            200: Reply(content=HTML, headers={"cache-control": "no-store"}),
            302: Reply(headers={"location": "The redirect URI, with error and iss"}),
            400: Reply(content=HTML),
        },
        name="oauth_authorize",
    ),
)
async def authorize(request: Request) -> Response:
    services: AuthorizeServices = services_of(request)
    try:
        asked = await read_request(
            services.clients, request.query_params.multi_items(), request.scope
        )
    except ToThePerson as refused:
        return refusal_page(refused.error)
    except ToTheClient as refused:
        return RedirectResponse(refused.url, 302, headers={"cache-control": "no-store"})
    return consent_page(asked, services.auth.user_for(request))


@declare(
    "POST",
    AUTHORIZE_PATH + "/decision",
    "The person's Allow or Deny of an authorization request (from the consent page): "
    "where the browser goes next",
    body={
        "type": "object",
        "required": ["request", "decision"],
        "properties": {
            "request": {
                "type": "string",
                "maxLength": MAX_REQUEST,
                "description": "The authorization request's query string.",
            },
            "decision": {"enum": ["allow", "deny"]},
        },
        "additionalProperties": False,
        "x-unknown": 'Send {"request": "<the query of /authorize>", "decision": "allow" | "deny"}.',
    },
    body_limit=2 * MAX_REQUEST,
    replies={
        200: Reply(
            {
                "type": "object",
                "required": ["redirect"],
                "properties": {
                    "redirect": {
                        "type": "string",
                        "description": "The client's redirect URI, with the answer.",
                    }
                },
            },
            headers={"cache-control": "no-store"},
        )
    },
    refusals={
        400: "The request is not one reactor sends back to its client.",
        401: "Nobody is signed in.",
        409: f"The person has {MAX_GRANTS} connected agents already.",
    },
    who=signed_in("Sign in to allow or deny an agent."),
)
async def decide(call: Call) -> Response:
    services: AuthorizeServices = call.services
    pairs = parse_qsl(call.body["request"], keep_blank_values=True, max_num_fields=50)
    try:
        asked = await read_request(services.clients, pairs, call.request.scope)
    except ToThePerson as refused:
        raise ApiError(400, refused.error.description) from None
    except ToTheClient as refused:
        return _going(refused.url)
    if call.body["decision"] == "deny":
        return _going(
            asked.back(
                error="access_denied",
                error_description=f"The person denied {asked.client.name} the use of "
                "their reactor pages.",
            )
        )
    if services.grants.count(call.user) >= MAX_GRANTS:
        raise ApiError(
            409,
            f"You have {MAX_GRANTS} connected agents already; revoke one you no longer "
            "use in the Agents panel first.",
        )
    code = services.grants.issue_code(
        Asked(
            call.user,
            asked.client.client_id,
            asked.client.name,
            asked.redirect_uri,
            asked.redirect_given,
            asked.challenge,
            asked.resource,
        )
    )
    return _going(asked.back(code=code))


def _going(url: str) -> Response:
    return JSONResponse({"redirect": url}, headers={"cache-control": "no-store"})
