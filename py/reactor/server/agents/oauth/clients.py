"""The OAuth clients that may ask a person: each known by its client_id, in one of two ways.

- A Client ID Metadata Document (the MCP spec's first choice since 2025-11-25): the client_id is
  an https URL whose JSON names the client and its redirect URIs. It is fetched under the
  server's outbound guard (reactor.server.outbound: public addresses only, unless
  REACTOR_OAUTH_CLIENT_ALLOW names them; at most MAX_DOCUMENT bytes within FETCH_SECONDS; no
  redirect), its `client_id` must be its own URL, and it is kept CACHE_SECONDS. Such a client is
  public: it proves nothing at the token endpoint but the PKCE verifier.
- Dynamic Client Registration (RFC 7591), for older clients: `POST /register` with the client's
  metadata, checked by the `mcp` SDK's model. A confidential client's secret is answered once
  and stored as its SHA-256. A registration no grant uses ends after UNUSED_SECONDS.

Redirect URIs are https, http on a loopback address (any port at the request: RFC 8252 §7.3),
or an app's own scheme (`cursor://…`); never a fragment, nor a scheme a browser runs.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ....errors import ApiError, OAuthError, OutboundFailed, OutboundRefused
from ...api import Declaration, Reply, documented, routes_of, services_of
from ...database import Database
from ...outbound.fetch import FetchPolicy, fetch
from ...outbound.guard import AllowRule, Reader, parse_allow_list
from ...requests import read_json
from ..tokens import PREFIX, bearer_token
from .grants import ACCESS_PREFIX, REFRESH_PREFIX
from .metadata import REGISTER_PATH, for_every_origin

ALLOW_ENV = "REACTOR_OAUTH_CLIENT_ALLOW"
AGENT_PREFIXES = (PREFIX, ACCESS_PREFIX, REFRESH_PREFIX)
MAX_DOCUMENT = 8 * 1024  # the draft's advice is 5 KB; a logo's URL and a few redirects fit
FETCH_SECONDS = 5.0
CACHE_SECONDS = 600
UNUSED_SECONDS = 24 * 3600
MAX_UNUSED = 5000  # registrations no grant uses yet: past this, /register asks to wait
MAX_NAME, MAX_URIS, MAX_URI = 100, 10, 2000
# Schemes a browser runs or reads itself: never a place to send a code.
NOT_REDIRECTS = {"javascript", "data", "file", "vbscript", "about", "blob", "ws", "wss", "ftp"}
METADATA_READER = Reader(
    name="reactor",
    done="read as client metadata",
    plainly="name a client by an address",
    allow=f"the allow-list ({ALLOW_ENV})",
)
STEPS = [
    """
    CREATE TABLE IF NOT EXISTS oauth_clients (
        client_id TEXT PRIMARY KEY,
        document TEXT NOT NULL,
        secret_hash TEXT,
        fetched REAL,
        created REAL NOT NULL
    );
    """,
]
REGISTERED = {
    "type": "object",
    "required": ["client_id", "redirect_uris"],
    "properties": {
        "client_id": {"type": "string"},
        "client_secret": {"type": "string", "description": "Shown this once."},
        "client_name": {"type": "string"},
        "redirect_uris": {"type": "array", "items": {"type": "string"}},
        "token_endpoint_auth_method": {"type": "string"},
    },
}
OAUTH_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {"type": "string", "description": "The RFC's error code."},
        "error_description": {"type": "string", "description": "What was wrong, as a sentence."},
    },
}


@dataclass(frozen=True)
class Client:
    """A client that may ask: its id, the name it gives itself, where it may be sent back, how it
    proves itself at the token endpoint; `published` when an https document names it (its host
    vouches for the name), not a registration anyone could make."""

    client_id: str
    name: str
    redirect_uris: tuple[str, ...]
    auth_method: str
    secret_hash: str | None
    published: bool

    def redirect_for(self, given: str | None) -> str:
        """The redirect URI to send the person back to; OAuthError when `given` is not one of
        this client's (or none was given and it has several)."""
        if given is None:
            if len(self.redirect_uris) == 1:
                return self.redirect_uris[0]
            raise OAuthError(
                "invalid_request",
                f"{self.name} has several redirect URIs; the request must name one (redirect_uri).",
            )
        if any(_redirect_matches(known, given) for known in self.redirect_uris):
            return given
        raise OAuthError(
            "invalid_request",
            f"The redirect URI {given[:200]} is not one {self.name} registered, so reactor will "
            "not send you there.",
        )


class Clients:
    """The oauth_clients table: registrations, and the metadata documents read."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.migrate("oauth_clients", STEPS)
        self.rules: tuple[AllowRule, ...] = parse_allow_list(os.environ.get(ALLOW_ENV))

    async def find(self, client_id: str) -> Client:
        """The client `client_id` names; OAuthError `invalid_client` with the sentence why not."""
        if not client_id:
            raise OAuthError("invalid_request", "The request names no client (client_id).")
        if len(client_id) > MAX_URI:
            raise OAuthError("invalid_client", f"A client_id is at most {MAX_URI} characters.")
        if client_id.startswith("https://"):
            return await self._published(client_id)
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT * FROM oauth_clients WHERE client_id = ? AND fetched IS NULL", (client_id,)
            ).fetchone()
        if row is None:
            raise OAuthError(
                "invalid_client",
                f"reactor knows no client {client_id[:80]!r}: it may have been registered with "
                "another server, or its registration lapsed. Remove the server from your agent "
                "and add it again.",
                status=401,
            )
        return _client(client_id, json.loads(row["document"]), row["secret_hash"], False)

    async def _published(self, url: str) -> Client:
        """A client whose id is the https address of its metadata document: read it (or its
        copy of the last CACHE_SECONDS)."""
        problem = _document_address_problem(url)
        if problem:
            raise OAuthError("invalid_client", problem, status=401)
        now = time.time()
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT document FROM oauth_clients WHERE client_id = ? AND fetched > ?",
                (url, now - CACHE_SECONDS),
            ).fetchone()
        if row is not None:
            return _client(url, json.loads(row["document"]), None, True)
        policy = FetchPolicy(
            self.rules,
            FETCH_SECONDS,
            MAX_DOCUMENT,
            reader=METADATA_READER,
            user_agent="reactor-oauth",
            max_redirects=0,
        )
        try:
            fetched = await run_in_threadpool(fetch, url, policy, accept="application/json")
        except (OutboundRefused, OutboundFailed) as error:
            raise OAuthError(
                "invalid_client",
                f"reactor could not read the client's metadata document: {error}",
                status=401,
            ) from None
        document = _document(url, fetched.body)
        with self.database.transaction() as db:
            db.execute(
                "INSERT INTO oauth_clients (client_id, document, fetched, created) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (client_id) DO UPDATE SET "
                "document = excluded.document, fetched = excluded.fetched",
                (url, json.dumps(document), now, now),
            )
        return _client(url, document, None, True)

    async def authenticate(self, request: Request, form: dict[str, str]) -> Client:
        """The client a token or revocation request comes from, proven as it registered: its
        secret in the form or by HTTP Basic, or nothing (a public client). OAuthError
        `invalid_client` (401) otherwise."""
        client_id, secret = form.get("client_id", ""), form.get("client_secret")
        basic = _basic(Headers(scope=request.scope))
        if basic is not None:
            if client_id and client_id != basic[0]:
                raise OAuthError(
                    "invalid_client",
                    "The client_id of the form and of the Authorization header differ.",
                    status=401,
                )
            client_id, secret = basic
        if not client_id:
            raise OAuthError(
                "invalid_client", "Send your client_id (or HTTP Basic credentials).", status=401
            )
        client = await self.find(client_id)
        if client.secret_hash is None:
            if secret:
                raise OAuthError(
                    "invalid_client",
                    f"{client.name} is a public client: it has no secret to send.",
                    status=401,
                )
            return client
        if not secret:
            raise OAuthError(
                "invalid_client",
                f"{client.name} registered with a secret: send it ({client.auth_method}).",
                status=401,
            )
        if not hmac.compare_digest(_digest(secret), client.secret_hash):
            raise OAuthError("invalid_client", "The client secret is wrong.", status=401)
        return client

    def register(self, metadata: OAuthClientMetadata) -> dict[str, Any]:
        """RFC 7591: a new client for `metadata` (checked), answered with its id and, for a
        confidential client, its secret (this once)."""
        method = metadata.token_endpoint_auth_method or "client_secret_basic"
        if method not in ("none", "client_secret_post", "client_secret_basic"):
            raise OAuthError(
                "invalid_client_metadata",
                f"reactor takes token_endpoint_auth_method none, client_secret_post or "
                f"client_secret_basic, not {method!r}.",
            )
        _check_client(metadata.model_dump(mode="json"))
        client_id, now = secrets.token_urlsafe(16), time.time()
        secret = None if method == "none" else secrets.token_urlsafe(32)
        record = OAuthClientInformationFull.model_validate(
            {
                **metadata.model_dump(mode="json", exclude_none=True),
                "token_endpoint_auth_method": method,
                "client_id": client_id,
                "client_id_issued_at": int(now),
                "client_secret": secret,
                "client_secret_expires_at": None if secret is None else 0,
            }
        )
        stored = record.model_dump(mode="json", exclude_none=True, exclude={"client_secret"})
        with self.database.transaction(immediate=True) as db:
            db.execute(
                "DELETE FROM oauth_clients WHERE fetched IS NULL AND created < ? AND NOT EXISTS "
                "(SELECT 1 FROM oauth_grants WHERE oauth_grants.client_id = "
                "oauth_clients.client_id)",
                (now - UNUSED_SECONDS,),
            )
            unused = db.execute(
                "SELECT COUNT(*) FROM oauth_clients WHERE fetched IS NULL AND NOT EXISTS "
                "(SELECT 1 FROM oauth_grants WHERE oauth_grants.client_id = "
                "oauth_clients.client_id)"
            ).fetchone()[0]
            if unused >= MAX_UNUSED:
                raise ApiError(
                    429,
                    "Too many clients registered lately; try again in an hour.",
                    retry_after=3600,
                )
            db.execute(
                "INSERT INTO oauth_clients (client_id, document, secret_hash, created) "
                "VALUES (?, ?, ?, ?)",
                (client_id, json.dumps(stored), None if secret is None else _digest(secret), now),
            )
        return record.model_dump(mode="json", exclude_none=True)

    def routes(self) -> list[Route]:
        return routes_of(*ENDPOINTS, services=ClientServices(self))


@dataclass(frozen=True)
class ClientServices:
    """What /register works with, one set per app: it takes it from the request
    (`services_of(request)`, routes_of)."""

    clients: Clients


@documented(
    "POST",
    REGISTER_PATH,
    Declaration(
        "Register an OAuth client (RFC 7591 Dynamic Client Registration), for agents "
        "that cannot name a client ID metadata document",
        description="A JSON body of client metadata (redirect_uris required). Errors "
        "are RFC 7591's: {error, error_description}.",
        replies={
            201: Reply(REGISTERED, headers={"cache-control": "no-store"}),
            400: Reply(OAUTH_ERROR),
        },
        refusals={
            413: "The body is larger than 16,384 bytes.",
            429: "Too many clients were registered lately.",
        },
        name="oauth_register",
    ),
)
async def register(request: Request) -> Response:
    services: ClientServices = services_of(request)
    try:
        header_refusal(request)
        body = await read_json(request, limit=16 * 1024)
        metadata = OAuthClientMetadata.model_validate(body)
        made = services.clients.register(metadata)
    except ValidationError as error:
        return oauth_error(OAuthError("invalid_client_metadata", _validation_sentence(error)))
    except OAuthError as error:
        return oauth_error(error)
    except ApiError as error:
        if error.status == 429:
            raise
        return oauth_error(OAuthError("invalid_client_metadata", error.sentence))
    return JSONResponse(made, 201, headers={"cache-control": "no-store"})


ENDPOINTS = for_every_origin(register)  # /register, readable by any origin, and its preflight


def header_refusal(request: Request) -> None:
    """OAuthError when the client sends a token of reactor's in its Authorization header: one
    configured by hand with a token /mcp refused (revoked) authorizes in vain, since its header
    would stand in for whatever it is given; say what to do instead of asking the person."""
    if bearer_token(Headers(scope=request.scope)).startswith(AGENT_PREFIXES):
        raise OAuthError(
            "invalid_request",
            "This agent sends a reactor token in its Authorization header, and /mcp refused it "
            "(it was revoked, or is unknown). Make a new token in the page's Agents panel, or "
            "remove the header from the agent's configuration to sign in instead.",
        )


def oauth_error(error: OAuthError) -> JSONResponse:
    """An OAuth endpoint's refusal as its RFCs spell it: `{error, error_description}`, never
    cached; a client that failed to authenticate is told how (401, WWW-Authenticate)."""
    headers = {"cache-control": "no-store", "pragma": "no-cache"}
    if error.status == 401:
        headers["www-authenticate"] = 'Basic realm="reactor"'
    return JSONResponse(
        {"error": error.code, "error_description": error.description}, error.status, headers
    )


def _client(
    client_id: str, document: dict[str, Any], secret_hash: str | None, published: bool
) -> Client:
    name = document.get("client_name") or (
        urlsplit(client_id).hostname or client_id if published else "An unnamed application"
    )
    return Client(
        client_id,
        str(name)[:MAX_NAME],
        tuple(str(u) for u in document.get("redirect_uris") or ()),
        str(document.get("token_endpoint_auth_method") or "none"),
        secret_hash,
        published,
    )


def _document_address_problem(url: str) -> str:
    """What keeps `url` from being a client ID metadata document's address, or ""."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return f"The client_id {url[:200]} is not a well-formed URL."
    if parts.path in ("", "/") or parts.fragment or parts.username or parts.password:
        return (
            f"The client_id {url[:200]} is not a client metadata document's address: one is "
            "https, with a path, no fragment and no user name."
        )
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        return f"The client_id {url[:200]} has a dot segment in its path."
    return ""


def _document(url: str, body: bytes) -> dict[str, Any]:
    """The metadata document at `url`, checked: JSON naming itself and its redirect URIs."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        document = None
    if not isinstance(document, dict):
        raise OAuthError(
            "invalid_client",
            f"The client's metadata document at {url[:200]} is not a JSON object.",
            status=401,
        )
    if document.get("client_id") != url:
        raise OAuthError(
            "invalid_client",
            f"The client's metadata document at {url[:200]} names another client_id; it must "
            "name its own address.",
            status=401,
        )
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise OAuthError(
            "invalid_client",
            f"The client's metadata document asks for {str(method)[:40]!r}; reactor takes "
            "client metadata documents of public clients (token_endpoint_auth_method none).",
            status=401,
        )
    if "client_secret" in document or "client_secret_expires_at" in document:
        raise OAuthError(
            "invalid_client",
            "A client metadata document may not carry a client secret.",
            status=401,
        )
    try:
        _check_client(document)
    except OAuthError as error:
        raise OAuthError("invalid_client", error.description, status=401) from None
    return document


def _check_client(document: dict[str, Any]) -> None:
    """A client's name and redirect URIs, as reactor takes them (OAuthError naming what not)."""
    name = document.get("client_name")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME):
        raise OAuthError(
            "invalid_client_metadata",
            f"A client_name is 1 to {MAX_NAME} characters of text.",
        )
    if isinstance(name, str) and any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise OAuthError(
            "invalid_client_metadata", "A client_name may not hold control characters."
        )
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_URIS:
        raise OAuthError(
            "invalid_redirect_uri",
            f"A client names 1 to {MAX_URIS} redirect URIs (redirect_uris).",
        )
    for uri in uris:
        problem = _redirect_problem(uri)
        if problem:
            raise OAuthError("invalid_redirect_uri", problem)


def _redirect_problem(uri: Any) -> str:
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI:
        return f"A redirect URI is text of at most {MAX_URI} characters."
    try:
        parts = urlsplit(uri)
    except ValueError:
        return f"The redirect URI {uri[:200]} is not a well-formed URI."
    scheme = parts.scheme.lower()
    if not scheme or scheme in NOT_REDIRECTS:
        return (
            f"The redirect URI {uri[:200]} cannot receive a code: use https, http on "
            "localhost or 127.0.0.1, or your app's own scheme."
        )
    if parts.fragment:
        return f"The redirect URI {uri[:200]} has a fragment; OAuth forbids one."
    if scheme == "http" and not _is_loopback(parts.hostname or ""):
        return (
            f"The redirect URI {uri[:200]} is plain http to another machine; use https, or "
            "http on localhost or 127.0.0.1."
        )
    if scheme in ("http", "https") and not parts.hostname:
        return f"The redirect URI {uri[:200]} names no host."
    return ""


def _redirect_matches(known: str, given: str) -> bool:
    """Exact, but for a loopback http redirect, whose port is the app's to choose at each request
    (RFC 8252 §7.3)."""
    if known == given:
        return True
    try:
        a, b = urlsplit(known), urlsplit(given)
        b.port  # noqa: B018 - a port that is no number raises here
    except ValueError:
        return False
    return (
        a.scheme == b.scheme == "http"
        and a.hostname == b.hostname
        and _is_loopback(a.hostname or "")
        and (a.path, a.query, b.fragment, b.username) == (b.path, b.query, "", None)
    )


def _is_loopback(host: str) -> bool:
    return host.lower() in ("127.0.0.1", "::1", "localhost")


def _basic(headers: Headers) -> tuple[str, str] | None:
    """(client_id, secret) of an HTTP Basic Authorization header (RFC 6749 §2.3.1), or None."""
    header = headers.get("authorization", "")
    if not header.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise OAuthError(
            "invalid_client", "The Authorization header is not HTTP Basic's.", status=401
        ) from None
    client_id, colon, secret = decoded.partition(":")
    if not colon:
        raise OAuthError(
            "invalid_client", "The Authorization header is not HTTP Basic's.", status=401
        )
    return unquote(client_id), unquote(secret)


def _validation_sentence(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    return f"The client metadata's {where!r} is wrong: {first['msg']}."


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
