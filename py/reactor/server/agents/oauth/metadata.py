"""Where this server's OAuth is, as a client discovers it: the protected resource is this server's
/mcp (RFC 9728), and its authorization server is this server itself (RFC 8414).

Every URL is made from the request's own origin (its scheme and Host): the server answers to
several names (loopback, `--host`, `--allow-host`), and a token is bound to the resource it was
asked for under one of them. The documents are the `mcp` SDK's models, so they say what its
clients read; any origin may read them (`Access-Control-Allow-Origin: *`, no credentials), as
browser-based clients such as the MCP Inspector must.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from ...api import Declaration, Reply, declaration_of, documented, routes_of

RESOURCE_PATH = "/mcp"
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource" + RESOURCE_PATH
AUTHORIZATION_SERVER_PATH = "/.well-known/oauth-authorization-server"
AUTHORIZE_PATH, TOKEN_PATH = "/authorize", "/token"
REGISTER_PATH, REVOKE_PATH = "/register", "/revoke"
# What agents POST with no cookie, form-encoded (RFC 6749, 7009) or JSON (RFC 7591), from
# anywhere: the cross-site write guard leaves these three paths, and only them, to OAuth's rules.
CLIENT_PATHS = (TOKEN_PATH, REGISTER_PATH, REVOKE_PATH)
# Where the middleware reads no bearer (tokens.py AgentTokensOnlyOnMcp): a client configured
# with a header sends it here too while it authorizes (mcp-remote, the Inspector); the metadata
# answers it, and the client endpoints tell it what to do (clients.py header_refusal).
UNAUTHENTICATED_PATHS = (PROTECTED_RESOURCE_PATH, AUTHORIZATION_SERVER_PATH, *CLIENT_PATHS)
CLIENT_AUTH_METHODS = ["none", "client_secret_post", "client_secret_basic"]
CACHED = {"cache-control": "public, max-age=3600"}
EVERY_ORIGIN = {"access-control-allow-origin": "*"}


def origin_of(scope: Scope) -> str:
    """This server's origin as the request names it: the issuer, and the resource's base."""
    host = Headers(scope=scope).get("host", "").strip().lower()
    return f"{scope.get('scheme', 'http')}://{host}"


def resource_of(scope: Scope) -> str:
    """The canonical URI of this server's MCP endpoint (RFC 8707), as the request names it."""
    return origin_of(scope) + RESOURCE_PATH


def metadata_url(scope: Scope) -> str:
    return origin_of(scope) + PROTECTED_RESOURCE_PATH


def same_resource(asked: str, resource: str) -> bool:
    """Whether `asked` names `resource`: scheme and host compare without case, a final slash
    is no difference (the MCP spec's canonical URI)."""

    def canonical(uri: str) -> tuple[str, str, str, str]:
        try:
            parts = urlsplit(uri.strip())
        except ValueError:
            return ("", "", "", uri)
        return (
            parts.scheme.lower(),
            parts.netloc.lower(),
            parts.path.rstrip("/") or "",
            parts.query + "#" + parts.fragment,
        )

    return canonical(asked) == canonical(resource)


def protected_resource(scope: Scope) -> dict[str, Any]:
    """RFC 9728: this /mcp, and this server as its authorization server."""
    document = ProtectedResourceMetadata.model_validate(
        {
            "resource": resource_of(scope),
            "authorization_servers": [origin_of(scope)],
            "bearer_methods_supported": ["header"],
            "resource_name": "reactor: the tools of your open pages",
        }
    )
    return document.model_dump(mode="json", exclude_none=True)


def authorization_server(scope: Scope) -> dict[str, Any]:
    """RFC 8414: the endpoints, the code flow with PKCE S256 only, client ID metadata documents
    and registration, and `iss` in every authorization response (RFC 9207)."""
    issuer = origin_of(scope)
    document = OAuthMetadata.model_validate(
        {
            "issuer": issuer,
            "authorization_endpoint": issuer + AUTHORIZE_PATH,
            "token_endpoint": issuer + TOKEN_PATH,
            "registration_endpoint": issuer + REGISTER_PATH,
            "revocation_endpoint": issuer + REVOKE_PATH,
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": CLIENT_AUTH_METHODS,
            "revocation_endpoint_auth_methods_supported": CLIENT_AUTH_METHODS,
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }
    )
    return document.model_dump(mode="json", exclude_none=True)


def for_every_origin(endpoint: Callable[[Request], Awaitable[Response]]) -> list[Any]:
    """`endpoint` (declared) readable by a page of any origin (no credentials): its answers say
    so, and a preflight OPTIONS at its path is answered (a client sending MCP-Protocol-Version
    needs one), declared too."""
    declaration = declaration_of(endpoint)
    assert declaration is not None, endpoint
    method = ", ".join(declaration.methods)

    async def answered(request: Request) -> Response:
        response = await endpoint(request)
        response.headers.update(EVERY_ORIGIN)
        return response

    answered.__name__ = endpoint.__name__
    name = f"{declaration.name or endpoint.__name__}_preflight"
    preflight = functools.partial(answer_preflight, method)
    preflight.__name__ = name  # type: ignore[attr-defined]
    documented(declaration.methods, declaration.paths, declaration)(answered)
    documented(
        "OPTIONS",
        declaration.paths,
        Declaration(
            f"CORS preflight of {method} {declaration.paths[0]}: a page of any origin may ask",
            replies={204: Reply(headers=PREFLIGHT)},
            name=name,
        ),
    )(preflight)
    return [answered, preflight]


async def answer_preflight(method: str, request: Request) -> Response:
    """The answer of a CORS preflight at a path that takes `method`."""
    return Response(status_code=204, headers={**EVERY_ORIGIN, **preflight_headers(method)})


def preflight_headers(method: str) -> dict[str, str]:
    return {
        "access-control-allow-methods": method,
        "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
        "access-control-max-age": "600",
    }


# What a preflight's answer sends, by name (the document lists them).
PREFLIGHT = {
    "access-control-allow-origin": "*: any origin may ask, without credentials",
    "access-control-allow-methods": "The method the path takes",
    "access-control-allow-headers": "The headers a request may send",
    "access-control-max-age": "Seconds a browser may keep this answer",
}


@documented(
    "GET",
    PROTECTED_RESOURCE_PATH,
    Declaration(
        "OAuth protected resource metadata (RFC 9728) of /mcp: its authorization server",
        replies={200: Reply({"type": "object"}, headers=CACHED)},
        name="oauth_protected_resource",
    ),
)
async def protected_resource_document(request: Request) -> Response:
    return JSONResponse(protected_resource(request.scope), headers=CACHED)


@documented(
    "GET",
    AUTHORIZATION_SERVER_PATH,
    Declaration(
        "OAuth authorization server metadata (RFC 8414): endpoints, PKCE S256, client ID "
        "metadata documents",
        replies={200: Reply({"type": "object"}, headers=CACHED)},
        name="oauth_authorization_server",
    ),
)
async def authorization_server_document(request: Request) -> Response:
    return JSONResponse(authorization_server(request.scope), headers=CACHED)


# Each made from the request alone (nothing per app), readable by any origin, with its preflight.
ENDPOINTS = [
    *for_every_origin(protected_resource_document),
    *for_every_origin(authorization_server_document),
]


def metadata_routes() -> list[Route]:
    return routes_of(*ENDPOINTS)
