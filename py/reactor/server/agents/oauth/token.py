"""The endpoints an agent's client calls without the person: `/token` (RFC 6749 §4.1.3 and §6:
a code and its PKCE verifier, or a refresh token, for a new pair) and `/revoke` (RFC 7009).

Both take `application/x-www-form-urlencoded`, each parameter once, at most FORM_LIMIT bytes,
and answer refusals as the RFCs spell them (`{error, error_description}`, never cached), the
description a sentence the client can show its person.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ....errors import OAuthError
from ...api import Declaration, Reply, documented, routes_of, services_of
from ...requests import read_body
from .clients import OAUTH_ERROR, Clients, header_refusal, oauth_error
from .grants import Grants
from .metadata import REVOKE_PATH, TOKEN_PATH, for_every_origin

FORM_LIMIT = 16 * 1024
NO_STORE = {"cache-control": "no-store", "pragma": "no-cache"}
FORM = "application/x-www-form-urlencoded"
TOKENS = {
    "type": "object",
    "required": ["access_token", "token_type", "expires_in", "refresh_token"],
    "properties": {
        "access_token": {"type": "string"},
        "token_type": {"const": "Bearer"},
        "expires_in": {"type": "integer"},
        "refresh_token": {"type": "string"},
    },
}


async def read_form(request: Request) -> dict[str, str]:
    """The form of an OAuth request; OAuthError `invalid_request` for anything else."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != FORM:
        raise OAuthError(
            "invalid_request", f"Send the parameters as {FORM}, as OAuth says (RFC 6749 §3.2)."
        )
    body = await read_body(request, limit=FORM_LIMIT)
    if body is None:
        raise OAuthError("invalid_request", f"The form is larger than {FORM_LIMIT} bytes.")
    try:
        pairs = parse_qsl(
            body.decode("utf-8"), keep_blank_values=True, strict_parsing=False, max_num_fields=30
        )
    except (UnicodeDecodeError, ValueError):
        raise OAuthError(
            "invalid_request", "The form is not UTF-8 text of at most 30 fields."
        ) from None
    form: dict[str, str] = {}
    for name, value in pairs:
        if name in form:
            raise OAuthError(
                "invalid_request", f"The form names {name[:40]} twice; OAuth allows once."
            )
        form[name] = value
    return form


@dataclass(frozen=True)
class TokenServices:
    """What the two endpoints work with, one set per app: they take it from the request
    (`services_of(request)`, routes_of)."""

    clients: Clients
    grants: Grants


def token_routes(clients: Clients, grants: Grants) -> list[Route]:
    """The two endpoints, each readable by any origin."""
    return routes_of(*ENDPOINTS, services=TokenServices(clients, grants))


async def _new_tokens(services: TokenServices, request: Request) -> dict[str, Any]:
    header_refusal(request)
    form = await read_form(request)
    client = await services.clients.authenticate(request, form)
    grant_type = form.get("grant_type", "")
    resource = form.get("resource", "")
    if grant_type == "authorization_code":
        code = form.get("code", "")
        if not code:
            raise OAuthError("invalid_request", "Send the authorization code (code).")
        return services.grants.exchange_code(
            client.client_id,
            code,
            form.get("redirect_uri"),
            form.get("code_verifier", ""),
            resource,
        )
    if grant_type == "refresh_token":
        refresh = form.get("refresh_token", "")
        if not refresh:
            raise OAuthError("invalid_request", "Send the refresh token (refresh_token).")
        return services.grants.refresh(client.client_id, refresh, resource)
    if not grant_type:
        raise OAuthError("invalid_request", "Send a grant_type.")
    raise OAuthError(
        "unsupported_grant_type",
        f"reactor takes grant_type authorization_code or refresh_token, not {grant_type[:60]!r}.",
    )


async def _revoke(services: TokenServices, request: Request) -> None:
    header_refusal(request)
    form = await read_form(request)
    client = await services.clients.authenticate(request, form)
    token = form.get("token", "")
    if not token:
        raise OAuthError("invalid_request", "Send the token to revoke (token).")
    services.grants.revoke_token(client.client_id, token)


@documented(
    "POST",
    TOKEN_PATH,
    Declaration(
        "OAuth's token endpoint: an authorization code with its PKCE verifier, or a "
        "refresh token, for a new access and refresh token",
        description=f"{FORM}: grant_type, code, redirect_uri, code_verifier, "
        "refresh_token, resource, client_id (and client_secret, or HTTP Basic, for a "
        "confidential client). A refresh token works once; used again, its connection "
        "ends.",
        replies={
            200: Reply(TOKENS, headers=NO_STORE),
            400: Reply(OAUTH_ERROR, headers=NO_STORE),
            401: Reply(OAUTH_ERROR, headers=NO_STORE),
        },
        name="oauth_token",
    ),
)
async def token(request: Request) -> Response:
    try:
        answer = await _new_tokens(services_of(request), request)
    except OAuthError as error:
        return oauth_error(error)
    return JSONResponse(answer, headers=NO_STORE)


@documented(
    "POST",
    REVOKE_PATH,
    Declaration(
        "Revoke an access or refresh token (RFC 7009): its connection ends",
        description=f"{FORM}: token, token_type_hint, client_id (and its secret). An "
        "unknown token is no error.",
        replies={
            200: Reply(headers=NO_STORE),
            400: Reply(OAUTH_ERROR, headers=NO_STORE),
            401: Reply(OAUTH_ERROR, headers=NO_STORE),
        },
        name="oauth_revoke",
    ),
)
async def revoke(request: Request) -> Response:
    try:
        await _revoke(services_of(request), request)
    except OAuthError as error:
        return oauth_error(error)
    return Response(status_code=200, headers=NO_STORE)


# Each served to any origin, with its preflight; a request tries them in this order.
ENDPOINTS = [*for_every_origin(token), *for_every_origin(revoke)]
