"""Grants: what a person allowed an agent's OAuth client to do, and the tokens that carry it.

The person's Allow on the consent page makes a code (single-use, CODE_SECONDS); the client's
exchange of it makes the grant, which holds the client's name as the consent page showed it, the
resource its tokens are for (this server's /mcp, under the name the client asked by), and when
it last called. Its tokens are 256 random bits behind a prefix, stored as their SHA-256 as agent
tokens are: an access token lives ACCESS_SECONDS; a refresh token REFRESH_SECONDS and one use —
refreshing answers a new pair, and an old refresh token used again ends the grant (one of the
two holders is not the client: RFC 9700 §4.14.2). A code used again ends the grant it made
(RFC 6749 §4.1.2).

Revoking (the Agents panel, or the client by RFC 7009) deletes the grant and its tokens. Every
/mcp request reads these tables, so the next one is refused, on every server process. Requests
are rate-limited per grant as agent tokens are per token (tokens.py): counted in the grant's
row on PostgreSQL, in this process's memory on SQLite.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import re
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ....errors import ApiError, OAuthError
from ...api import NO_STORE, Call, Reply, declare, routes_of
from ...auth.sessions import Auth, User, signed_in
from ...database import Database
from ..leases import Leases
from ..tokens import (
    LAST_USED_SECONDS,
    RATE_LIMIT,
    RATE_WINDOW,
    REVOKED,
    AgentToken,
)
from .metadata import same_resource

ACCESS_PREFIX, REFRESH_PREFIX = "reactor_oauth_", "reactor_refresh_"
CODE_SECONDS = 120  # the person's Allow to the client's exchange: a redirect and one request
ACCESS_SECONDS = 3600
REFRESH_SECONDS = 30 * 24 * 3600
KEEP_SECONDS = 24 * 3600  # how long a used code is remembered, to end the grant of a second use
MAX_GRANTS = 100  # per person: every agent on every machine, not a table to fill
VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")  # RFC 7636 §4.1
STEPS = [
    """
    CREATE TABLE IF NOT EXISTS oauth_grants (
        id TEXT PRIMARY KEY,
        username TEXT NOT NULL REFERENCES users(username) ON DELETE CASCADE,
        client_id TEXT NOT NULL,
        client_name TEXT NOT NULL,
        redirect_uri TEXT NOT NULL,
        resource TEXT NOT NULL,
        created REAL NOT NULL,
        last_used REAL,
        window_start REAL,
        window_count INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS oauth_grants_by_user ON oauth_grants (username);
    CREATE TABLE IF NOT EXISTS oauth_tokens (
        token_hash TEXT PRIMARY KEY,
        grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        expires REAL NOT NULL,
        used REAL
    );
    CREATE INDEX IF NOT EXISTS oauth_tokens_by_grant ON oauth_tokens (grant_id);
    CREATE TABLE IF NOT EXISTS oauth_codes (
        code_hash TEXT PRIMARY KEY,
        username TEXT NOT NULL REFERENCES users(username) ON DELETE CASCADE,
        client_id TEXT NOT NULL,
        client_name TEXT NOT NULL,
        redirect_uri TEXT NOT NULL,
        redirect_given INTEGER NOT NULL,
        challenge TEXT NOT NULL,
        resource TEXT NOT NULL,
        expires REAL NOT NULL,
        grant_id TEXT
    );
    """,
]
# Checks an access token and counts the request in the grant's row, in one statement (as
# tokens.py's CHECK_AND_COUNT does for agent tokens).
CHECK_AND_COUNT = """
UPDATE oauth_grants SET
    last_used = :now,
    window_count = CASE WHEN window_start IS NULL OR window_start <= :since THEN :take
        ELSE GREATEST(window_count - CASE WHEN window_start = :window THEN :back ELSE 0 END, 0)
            + :take END,
    window_start = CASE WHEN window_start IS NULL OR window_start <= :since THEN :now
        ELSE window_start END
WHERE id = (SELECT grant_id FROM oauth_tokens
            WHERE token_hash = :hash AND kind = 'access' AND expires > :now)
    -- A count or a last-use time lost in a crash is harmless: this statement's commit need not
    -- wait for the disk (set for its own transaction only, as SET LOCAL would).
    AND set_config('synchronous_commit', 'off', true) = 'off'
RETURNING id, client_name, resource, username, window_start, window_count,
    (SELECT groups FROM users WHERE users.username = oauth_grants.username) AS groups,
    (SELECT expires FROM oauth_tokens WHERE token_hash = :hash) AS expires
"""
CONNECTION = {
    "type": "object",
    "required": ["id", "name", "clientId", "redirectUri", "created"],
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string", "description": "The client's name, as the person allowed it."},
        "clientId": {"type": "string"},
        "redirectUri": {"type": "string"},
        "created": {"type": "number"},
        "lastUsed": {"type": ["number", "null"]},
    },
}
GRANT_ID = {"type": "string", "pattern": "^[0-9a-f]{16}$"}


@dataclass(frozen=True)
class Asked:
    """An authorization request the person allowed: who allowed which client what, and how the
    code must be redeemed."""

    user: User
    client_id: str
    client_name: str
    redirect_uri: str
    redirect_given: bool
    challenge: str
    resource: str


class Grants:
    """The oauth_grants, oauth_tokens and oauth_codes tables, the panel's routes, and the check of
    an access token on /mcp."""

    def __init__(self, database: Database, auth: Auth) -> None:
        self.database, self.auth = database, auth
        database.migrate("oauth", STEPS)
        self.shared_count = database.kind == "postgresql"
        self.recent: dict[str, deque[float]] = {}  # SQLite: each grant's requests in the window
        # PostgreSQL: requests counted ahead (server/agents/leases.py), with the resource given for
        self.leases = Leases[tuple[AgentToken, str]]()
        # told of each connection that ends, by the id its agent has at /mcp ("oauth:<grant>")
        self.on_revoke: list[Callable[[str], None]] = []

    # The authorization code ---------------------------------------------------------------

    def issue_code(self, asked: Asked) -> str:
        """A new code for what the person allowed: the only time it is returned."""
        code, now = secrets.token_urlsafe(32), time.time()
        with self.database.transaction() as db:
            db.execute("DELETE FROM oauth_codes WHERE expires < ?", (now - KEEP_SECONDS,))
            db.execute(
                "INSERT INTO oauth_codes (code_hash, username, client_id, client_name, "
                "redirect_uri, redirect_given, challenge, resource, expires) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    _digest(code),
                    asked.user.username,
                    asked.client_id,
                    asked.client_name,
                    asked.redirect_uri,
                    asked.redirect_given,
                    asked.challenge,
                    asked.resource,
                    now + CODE_SECONDS,
                ),
            )
        return code

    def exchange_code(
        self, client_id: str, code: str, redirect_uri: str | None, verifier: str, resource: str
    ) -> dict[str, Any]:
        """The token answer for `code`, once (OAuthError with the RFC's code otherwise). Checked
        before it is spent: a wrong verifier leaves the code to its client."""
        if not verifier:
            raise OAuthError(
                "invalid_request", "Send the code_verifier of this request: PKCE is required."
            )
        if not VERIFIER.fullmatch(verifier):
            raise OAuthError(
                "invalid_request",
                "The code_verifier must be 43 to 128 characters of letters, digits and - . _ ~ "
                "(RFC 7636).",
            )
        now = time.time()
        problem: OAuthError | None = None
        answer: dict[str, Any] = {}
        ended = ""  # a grant ended because its code or refresh token was used twice
        with self.database.transaction(immediate=True) as db:
            row = db.execute(
                "SELECT * FROM oauth_codes WHERE code_hash = ?", (_digest(code),)
            ).fetchone()
            if row is None or row["client_id"] != client_id:
                problem = OAuthError(
                    "invalid_grant",
                    "This authorization code is not one reactor gave this client; authorize again.",
                )
            elif row["grant_id"] is not None:
                # Spent already: whoever redeemed it first may not be the client. End what it made.
                db.execute("DELETE FROM oauth_grants WHERE id = ?", (row["grant_id"],))
                ended = row["grant_id"]
                problem = OAuthError(
                    "invalid_grant",
                    "This authorization code was used already, so reactor ended the connection "
                    "it made; authorize again.",
                )
            elif row["expires"] <= now:
                problem = OAuthError(
                    "invalid_grant",
                    f"This authorization code expired (a code lasts {CODE_SECONDS} seconds); "
                    "authorize again.",
                )
            elif (redirect_uri is not None or row["redirect_given"]) and redirect_uri != row[
                "redirect_uri"
            ]:
                problem = OAuthError(
                    "invalid_grant",
                    "The redirect_uri is not the one of the authorization request "
                    f"({row['redirect_uri'][:200]}).",
                )
            elif resource and not same_resource(resource, row["resource"]):
                problem = OAuthError(
                    "invalid_target",
                    f"This code was given for the resource {row['resource']}, not "
                    f"{resource[:200]}; authorize again for that one.",
                )
            elif not hmac.compare_digest(_challenge(verifier), row["challenge"]):
                problem = OAuthError(
                    "invalid_grant",
                    "The code_verifier does not match the code_challenge of the authorization "
                    "request.",
                )
            else:
                grant_id = secrets.token_hex(8)
                db.execute(
                    "INSERT INTO oauth_grants (id, username, client_id, client_name, "
                    "redirect_uri, resource, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        grant_id,
                        row["username"],
                        client_id,
                        row["client_name"],
                        row["redirect_uri"],
                        row["resource"],
                        now,
                    ),
                )
                db.execute(
                    "UPDATE oauth_codes SET grant_id = ? WHERE code_hash = ?",
                    (grant_id, row["code_hash"]),
                )
                answer = _new_tokens(db, grant_id, now)
        if ended:
            self._ended(ended)  # its access tokens stop at once, on every process
        if problem is not None:
            raise problem
        return answer

    # Refreshing ---------------------------------------------------------------------------

    def refresh(self, client_id: str, refresh_token: str, resource: str) -> dict[str, Any]:
        """A new pair for a refresh token, which is spent; a spent one ends its grant."""
        now = time.time()
        problem: OAuthError | None = None
        answer: dict[str, Any] = {}
        ended = ""  # a grant ended because its code or refresh token was used twice
        with self.database.transaction(immediate=True) as db:
            row = db.execute(
                "SELECT oauth_tokens.grant_id, oauth_tokens.expires, oauth_tokens.used, "
                "oauth_grants.client_id, oauth_grants.resource FROM oauth_tokens "
                "JOIN oauth_grants ON oauth_grants.id = oauth_tokens.grant_id "
                "WHERE token_hash = ? AND kind = 'refresh'",
                (_digest(refresh_token),),
            ).fetchone()
            if row is None or row["client_id"] != client_id:
                problem = OAuthError(
                    "invalid_grant",
                    "This refresh token is unknown to reactor, or was revoked; authorize again.",
                )
            elif row["used"] is not None:
                db.execute("DELETE FROM oauth_grants WHERE id = ?", (row["grant_id"],))
                ended = row["grant_id"]
                problem = OAuthError(
                    "invalid_grant",
                    "This refresh token was used already, so reactor ended the connection (a "
                    "copy of it may be in other hands); authorize again.",
                )
            elif row["expires"] <= now:
                problem = OAuthError(
                    "invalid_grant", "This refresh token expired; authorize again."
                )
            elif resource and not same_resource(resource, row["resource"]):
                problem = OAuthError(
                    "invalid_target",
                    f"This connection was allowed for the resource {row['resource']}, not "
                    f"{resource[:200]}.",
                )
            else:
                db.execute(
                    "UPDATE oauth_tokens SET used = ? WHERE token_hash = ?",
                    (now, _digest(refresh_token)),
                )
                # What can no longer be used: expired tokens, and spent refresh tokens old enough
                # that no copy of them would still be alive.
                db.execute(
                    "DELETE FROM oauth_tokens WHERE grant_id = ? AND (expires <= ? OR used < ?)",
                    (row["grant_id"], now, now - REFRESH_SECONDS),
                )
                answer = _new_tokens(db, row["grant_id"], now)
        if ended:
            self._ended(ended)  # its access tokens stop at once, on every process
        if problem is not None:
            raise problem
        return answer

    # Revoking -----------------------------------------------------------------------------

    def revoke_token(self, client_id: str, token: str) -> None:
        """RFC 7009: the grant of `token` (access or refresh) ends, if it is this client's; an
        unknown token is no error."""
        with self.database.transaction() as db:
            ended = db.execute(
                "DELETE FROM oauth_grants WHERE client_id = ? AND id = "
                "(SELECT grant_id FROM oauth_tokens WHERE token_hash = ?) RETURNING id",
                (client_id, _digest(token)),
            ).fetchall()
        for row in ended:
            self._ended(row[0])

    def _ended(self, grant_id: str) -> None:
        """What the connection opened at /mcp ends now, not at its next request."""
        self.leases.forget(f"oauth:{grant_id}")
        for revoked in self.on_revoke:
            revoked(f"oauth:{grant_id}")

    def end(self, user: User, grant_id: str) -> bool:
        """The person revokes a connection: its tokens are refused from the next request on."""
        with self.database.transaction() as db:
            gone = db.execute(
                "DELETE FROM oauth_grants WHERE id = ? AND username = ?", (grant_id, user.username)
            ).rowcount
        self.recent.pop(grant_id, None)
        if gone:
            self._ended(grant_id)
        return bool(gone)

    def listed(self, user: User) -> list[dict[str, Any]]:
        with self.database.transaction() as db:
            rows = db.execute(
                "SELECT id, client_id, client_name, redirect_uri, created, last_used "
                "FROM oauth_grants WHERE username = ? ORDER BY created",
                (user.username,),
            ).fetchall()
        return [
            {
                "id": r["id"],
                "name": r["client_name"],
                "clientId": r["client_id"],
                "redirectUri": r["redirect_uri"],
                "created": r["created"],
                "lastUsed": r["last_used"],
            }
            for r in rows
        ]

    def count(self, user: User) -> int:
        with self.database.transaction() as db:
            return int(
                db.execute(
                    "SELECT COUNT(*) FROM oauth_grants WHERE username = ?", (user.username,)
                ).fetchone()[0]
            )

    # The check on /mcp --------------------------------------------------------------------

    def check(self, secret: str, resource: str) -> tuple[AgentToken | None, str]:
        """The agent an access token stands for, with this request counted; else None and the
        sentence saying why (for the agent's person: what to do)."""
        if not secret.startswith(ACCESS_PREFIX) or len(secret) > 200:
            return None, UNKNOWN
        now = time.time()
        if self.shared_count:
            return self._check_and_count(secret, resource, now)
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT oauth_grants.id, oauth_grants.client_name, oauth_grants.resource, "
                "oauth_grants.last_used, users.username, users.groups FROM oauth_tokens "
                "JOIN oauth_grants ON oauth_grants.id = oauth_tokens.grant_id "
                "JOIN users ON users.username = oauth_grants.username "
                "WHERE token_hash = ? AND kind = 'access' AND expires > ?",
                (_digest(secret), now),
            ).fetchone()
            if row is not None and (
                row["last_used"] is None or now - row["last_used"] > LAST_USED_SECONDS
            ):
                db.execute("UPDATE oauth_grants SET last_used = ? WHERE id = ?", (now, row["id"]))
        if row is None:
            return None, self._why_not(secret, now)
        user = User(row["username"], tuple(json.loads(row["groups"])))
        agent = AgentToken(f"oauth:{row['id']}", row["client_name"], user)
        return _for_resource(agent, row["resource"], resource, self._count_here(row["id"]))

    def _check_and_count(
        self, secret: str, resource: str, now: float
    ) -> tuple[AgentToken | None, str]:
        """PostgreSQL: the check and the count in one statement, a lease of requests at a time
        (server/agents/leases.py)."""
        digest = _digest(secret)
        leased = self.leases.use(digest)
        if leased is not None:
            return _for_resource(leased[0], leased[1], resource, 0)
        counted = self.leases.count(digest)
        rows = self.database.statement(CHECK_AND_COUNT, counted.params(digest, now, RATE_WINDOW))
        if not rows:
            return None, self._why_not(secret, now)
        row = rows[0]
        user = User(row["username"], tuple(json.loads(row["groups"])))
        agent = AgentToken(f"oauth:{row['id']}", row["client_name"], user)
        window, total = row["window_start"], row["window_count"]
        ends_in = min(window + RATE_WINDOW, row["expires"]) - now
        holder = (agent, str(row["resource"]))
        if self.leases.hold(digest, agent.id, holder, counted, window, total, RATE_LIMIT, ends_in):
            return _for_resource(agent, row["resource"], resource, 0)
        wait = max(1, math.ceil(window + RATE_WINDOW - now))
        return _for_resource(agent, row["resource"], resource, wait)

    def _why_not(self, secret: str, now: float) -> str:
        with self.database.transaction() as db:
            expired = db.execute(
                "SELECT 1 FROM oauth_tokens WHERE token_hash = ? AND kind = 'access' "
                "AND expires <= ?",
                (_digest(secret), now),
            ).fetchone()
        return EXPIRED if expired is not None else UNKNOWN

    def _count_here(self, grant_id: str) -> int:
        """0 when the grant may make a request now (and counts it), else the seconds to wait."""
        now = time.monotonic()
        recent = self.recent.setdefault(grant_id, deque())
        while recent and recent[0] <= now - RATE_WINDOW:
            recent.popleft()
        if len(recent) >= RATE_LIMIT:
            return max(1, math.ceil(recent[0] + RATE_WINDOW - now))
        recent.append(now)
        return 0

    # The Agents panel's routes ------------------------------------------------------------

    def routes(self) -> list[Route]:
        return routes_of(list_connections, end_connection, services=GrantServices(self, self.auth))


@dataclass(frozen=True)
class GrantServices:
    """What the Agents panel's routes work with, one set per app: they take it from the call
    (`call.services`, routes_of)."""

    grants: Grants
    auth: Auth


def _grants(call: Call) -> Grants:
    services: GrantServices = call.services
    return services.grants


@declare(
    "GET",
    "/api/agent-connections",
    "The signed-in person's connected agents (OAuth): name, allowed, last called",
    replies={200: Reply({"type": "array", "items": CONNECTION}, headers=NO_STORE)},
    refusals={401: "Nobody is signed in."},
    who=signed_in("Sign in to see your connected agents."),
)
async def list_connections(call: Call) -> Response:
    return JSONResponse(_grants(call).listed(call.user), headers={"cache-control": "no-store"})


@declare(
    "DELETE",
    "/api/agent-connections/{id}",
    "End one of the signed-in person's agent connections: refused from its next request on",
    path={"id": GRANT_ID},
    replies={200: REVOKED},
    refusals={401: "Nobody is signed in.", 404: "The person has no connection of that id."},
    who=signed_in("Sign in to end an agent's connection."),
)
async def end_connection(call: Call) -> Any:
    grant_id = call.path["id"]
    if not _grants(call).end(call.user, grant_id):
        raise ApiError(
            404,
            f"You have no connected agent {grant_id!r}; GET /api/agent-connections lists yours.",
            field="id",
        )
    return {"revoked": grant_id}


UNKNOWN = (
    "This access token is unknown to reactor or was revoked; connect your agent again and allow "
    "it in the reactor page."
)
EXPIRED = (
    "This access token expired; your agent refreshes it, or asks you to allow it again in the "
    "reactor page."
)


def _new_tokens(db: Any, grant_id: str, now: float) -> dict[str, Any]:
    """A new access and refresh token of `grant_id`, as the token endpoint answers them."""
    access = ACCESS_PREFIX + secrets.token_urlsafe(32)
    refresh = REFRESH_PREFIX + secrets.token_urlsafe(32)
    db.executemany(
        "INSERT INTO oauth_tokens (token_hash, grant_id, kind, expires) VALUES (?, ?, ?, ?)",
        [
            (_digest(access), grant_id, "access", now + ACCESS_SECONDS),
            (_digest(refresh), grant_id, "refresh", now + REFRESH_SECONDS),
        ],
    )
    return {
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": ACCESS_SECONDS,
        "refresh_token": refresh,
    }


def _challenge(verifier: str) -> str:
    """RFC 7636's S256: the code_challenge a verifier answers."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _for_resource(
    agent: AgentToken, given_for: str, resource: str, wait: int
) -> tuple[AgentToken | None, str]:
    """The agent, when its token was given for the resource it is used at (`wait`: the seconds
    it is past its rate); else the sentence saying so."""
    if not same_resource(resource, given_for):
        return None, (
            f"This token was given for {given_for}, not for {resource}: connect your "
            "agent to the address you allowed it on, or allow it again for this one."
        )
    return (replace(agent, retry_after=wait) if wait else agent), ""
