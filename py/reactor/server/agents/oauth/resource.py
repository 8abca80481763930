"""/mcp as an OAuth resource server: whose bearer a request carries, and the 401 that sends an
agent to authorization (RFC 6750 §3, RFC 9728 §5.1).

A bearer is an OAuth access token (grants.py, bound to this server's /mcp under the name it was
asked by) or an agent token made in the Agents panel (tokens.py, for headless clients). A
refusal names the protected resource metadata (`resource_metadata`), so that a client finds this
server's authorization; when a token was sent and is unknown, revoked, expired or for another
resource, it says `error="invalid_token"` with the sentence as `error_description`, so that the
client authorizes again and the person sees the consent page. The body is the same sentence as
a JSON-RPC error: MCP's SDKs show it to a person whose client was given a token by hand (their
transport reads a JSON-RPC error from an answer of any status).
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import Scope

from ..tokens import PREFIX, AgentToken, AgentTokens
from .grants import ACCESS_PREFIX, Grants
from .metadata import metadata_url, resource_of

UNAUTHORIZED = -32001  # JSON-RPC's implementation-defined server errors: the one servers use here
# The 401's body, for /mcp's declaration: a JSON-RPC error holding the sentence.
REFUSAL = {
    "type": "object",
    "required": ["jsonrpc", "id", "error"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": "null"},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "integer"},
                "message": {"type": "string", "description": "Why, as a sentence to act on."},
            },
        },
    },
}
CHALLENGE = {
    "www-authenticate": "Bearer, with resource_metadata (RFC 9728), and error=invalid_token "
    "with error_description when a token was sent"
}
PLAIN = str.maketrans({"…": "...", "‘": "'", "’": "'", "“": "'", "”": "'", '"': "'", "\\": "/"})


def holder(
    tokens: AgentTokens, grants: Grants, secret: str, scope: Scope
) -> tuple[AgentToken | None, str]:
    """The agent a bearer stands for, with this request counted; else None and the sentence for
    its person."""
    if secret.startswith(ACCESS_PREFIX):
        return grants.check(secret, resource_of(scope))
    agent = tokens.check(secret) if secret else None
    return agent, "" if agent is not None else refusal(secret)


def refusal(secret: str) -> str:
    """Why a bearer that is no OAuth access token opens nothing here."""
    if not secret:
        return (
            "Sign in through your agent: add this server's /mcp address to it and allow it in "
            "the reactor page. Or send an agent token, made in the page's Agents panel, as "
            "Authorization: Bearer."
        )
    if not secret.startswith(PREFIX):
        return (
            "/mcp takes a token reactor gave your agent (by your Allow, or made in the page's "
            "Agents panel), not a session."
        )
    return "This agent token is unknown or revoked; make a new one in the page's Agents panel."


def challenge(scope: Scope, sentence: str, *, invalid: bool) -> JSONResponse:
    """The 401 of /mcp: where authorization is, why this request was refused."""
    header = f'Bearer realm="reactor", resource_metadata="{metadata_url(scope)}"'
    if invalid:
        header += f', error="invalid_token", error_description="{_quotable(sentence)}"'
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": UNAUTHORIZED, "message": sentence}}
    return JSONResponse(body, 401, headers={"www-authenticate": header})


def _quotable(sentence: str) -> str:
    """The sentence in the characters RFC 6750 §3 lets error_description hold: printable ASCII
    without a double quote or backslash."""
    plain = sentence.translate(PLAIN)
    return "".join(c if " " <= c <= "~" else "?" for c in plain)
