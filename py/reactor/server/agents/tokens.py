"""Agent tokens: what a desktop agent (Claude Code, Claude Desktop, Cursor, VS Code) presents on
`/mcp` to act as the person who made it.

A signed-in person makes one with `POST /api/agent-tokens {"name"}` and sees it once; the
database keeps only its SHA-256 (as it does for sessions). A token works on `/mcp` only, and
`/mcp` takes nothing else: a session token is refused there and an agent token everywhere else
(`AgentTokensOnlyOnMcp`), so a token pasted into an agent's configuration cannot sign anyone in
to the page or write through the page's API. `DELETE /api/agent-tokens/{id}` revokes it: its next
request is refused (on another server process as soon as the bus tells it, and within a second
whatever comes). Each token is held to RATE_LIMIT requests per RATE_WINDOW seconds: on
PostgreSQL, where several server processes share the database, the count is in the token's row,
moved by the same statement that checks the token, a lease of requests at a time
(server/agents/leases.py), so it holds across processes; on SQLite, which one server process
owns, in that process's memory (a write per request there would cost a commit, 1-5 ms, on every
call).
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import ApiError
from ..api import NO_STORE, Call, Refusal, Reply, declare, error_answer, routes_of
from ..auth.sessions import Auth, User, signed_in
from ..database import Database
from .leases import Leases

PREFIX = "reactor_agent_"  # tells an agent token from a session token without a database read
MAX_NAME = 80
# A token's name: text that tells the person which agent holds it; no control characters, not blank.
NAME_PATTERN = "^[^\\u0000-\\u001f\\u007f]*[^\\u0000-\\u0020\\u007f][^\\u0000-\\u001f\\u007f]*$"
MAX_TOKENS = 50  # per person: enough for every agent on every machine, not a table to fill
TOO_MANY = f"You have {MAX_TOKENS} agent tokens already; revoke one you no longer use first."
RATE_LIMIT, RATE_WINDOW = 120, 60.0
# What ending an agent's access answers: a token's revocation, or a connection's (oauth/grants.py)
REVOKED = Reply(
    {"type": "object", "required": ["revoked"], "properties": {"revoked": {"type": "string"}}}
)
STEPS = [
    """
    CREATE TABLE IF NOT EXISTS agent_tokens (
        id TEXT PRIMARY KEY,
        username TEXT NOT NULL REFERENCES users(username) ON DELETE CASCADE,
        name TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        created REAL NOT NULL,
        last_used REAL
    );
    CREATE INDEX IF NOT EXISTS agent_tokens_by_user ON agent_tokens (username);
    """,
    # The rate window shared by server processes on PostgreSQL: when it began, requests in it.
    """
    ALTER TABLE agent_tokens ADD COLUMN window_start REAL;
    ALTER TABLE agent_tokens ADD COLUMN window_count INTEGER NOT NULL DEFAULT 0;
    """,
]
# Checks a token and counts `take` requests in one statement (server/agents/leases.py), less `back`
# that its last lease here did not serve when that was in this window: a window older than
# RATE_WINDOW starts again at this request (SET's right-hand sides all read the row as it was).
CHECK_AND_COUNT = """
UPDATE agent_tokens SET
    last_used = :now,
    window_count = CASE WHEN window_start IS NULL OR window_start <= :since THEN :take
        ELSE GREATEST(window_count - CASE WHEN window_start = :window THEN :back ELSE 0 END, 0)
            + :take END,
    window_start = CASE WHEN window_start IS NULL OR window_start <= :since THEN :now
        ELSE window_start END
WHERE token_hash = :hash
    -- A count or a last-use time lost in a crash is harmless: this statement's commit need not
    -- wait for the disk (set for its own transaction only, as SET LOCAL would).
    AND set_config('synchronous_commit', 'off', true) = 'off'
RETURNING id, name, username, window_start, window_count,
    (SELECT groups FROM users WHERE users.username = agent_tokens.username) AS groups
"""
LAST_USED_SECONDS = 60  # how stale `last_used` may get before a request writes it again
TOKEN: dict[str, Any] = {
    "type": "object",
    "required": ["id", "name", "created"],
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "created": {"type": "number"},
        "lastUsed": {"type": ["number", "null"]},
    },
}
MADE = {
    **TOKEN,
    "required": ["id", "name", "token", "created"],
    "properties": {**TOKEN["properties"], "token": {"type": "string"}},
}


@dataclass(frozen=True)
class AgentToken:
    """A valid agent token: whose, and which (its id, never the secret); `retry_after` is the
    seconds to wait when this request is past the token's rate, else 0."""

    id: str
    name: str
    user: User
    retry_after: int = 0


class AgentTokens:
    """The agent_tokens table, its routes, and the per-token rate limit."""

    def __init__(self, database: Database, auth: Auth) -> None:
        self.database, self.auth = database, auth
        database.migrate("agent_tokens", STEPS)
        self.shared_count = database.kind == "postgresql"
        self.recent: dict[str, deque[float]] = {}  # SQLite: each token's requests in the window
        self.leases = Leases[
            AgentToken
        ]()  # PostgreSQL: requests counted ahead, server/agents/leases.py
        self.on_revoke: list[Callable[[str], None]] = []  # told of each token revoked

    def make(self, user: User, name: str) -> dict[str, object]:
        """A new token for `user`: the only time its secret is returned."""
        secret = PREFIX + secrets.token_urlsafe(32)  # 256 random bits
        row = {"id": secrets.token_hex(8), "name": name, "created": time.time()}
        with self.database.transaction(immediate=True) as db:
            count = db.execute(
                "SELECT COUNT(*) FROM agent_tokens WHERE username = ?", (user.username,)
            ).fetchone()[0]
            if count >= MAX_TOKENS:
                raise ApiError(409, TOO_MANY)
            db.execute(
                "INSERT INTO agent_tokens (id, username, name, token_hash, created) VALUES "
                "(?, ?, ?, ?, ?)",
                (row["id"], user.username, name, _digest(secret), row["created"]),
            )
        return {**row, "token": secret}

    def listed(self, user: User) -> list[dict[str, object]]:
        with self.database.transaction() as db:
            rows = db.execute(
                "SELECT id, name, created, last_used FROM agent_tokens WHERE username = ? "
                "ORDER BY created",
                (user.username,),
            ).fetchall()
        return [
            {"id": r["id"], "name": r["name"], "created": r["created"], "lastUsed": r["last_used"]}
            for r in rows
        ]

    def revoke(self, user: User, token_id: str) -> bool:
        with self.database.transaction() as db:
            gone = db.execute(
                "DELETE FROM agent_tokens WHERE id = ? AND username = ?", (token_id, user.username)
            ).rowcount
        self.recent.pop(token_id, None)
        self.leases.forget(token_id)
        return bool(gone)

    def check(self, secret: str) -> AgentToken | None:
        """The token `secret` is, if it is one that has not been revoked, with this request
        counted."""
        if not secret.startswith(PREFIX) or len(secret) > 200:
            return None
        now = time.time()
        if self.shared_count:
            return self._check_and_count(secret, now)
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT agent_tokens.id, agent_tokens.name, agent_tokens.last_used, "
                "users.username, users.groups "
                "FROM agent_tokens JOIN users USING (username) WHERE token_hash = ?",
                (_digest(secret),),
            ).fetchone()
            if row is not None and (
                row["last_used"] is None or now - row["last_used"] > LAST_USED_SECONDS
            ):
                db.execute("UPDATE agent_tokens SET last_used = ? WHERE id = ?", (now, row["id"]))
        if row is None:
            return None
        user = User(row["username"], tuple(json.loads(row["groups"])))
        return AgentToken(row["id"], row["name"], user, self._count_here(row["id"]))

    def _check_and_count(self, secret: str, now: float) -> AgentToken | None:
        digest = _digest(secret)
        leased = self.leases.use(digest)
        if leased is not None:
            return leased
        counted = self.leases.count(digest)
        rows = self.database.statement(CHECK_AND_COUNT, counted.params(digest, now, RATE_WINDOW))
        if not rows:
            return None
        row = rows[0]
        user = User(row["username"], tuple(json.loads(row["groups"])))
        token = AgentToken(row["id"], row["name"], user)
        window, total = row["window_start"], row["window_count"]
        ends_in = window + RATE_WINDOW - now
        if self.leases.hold(digest, token.id, token, counted, window, total, RATE_LIMIT, ends_in):
            return token
        return replace(token, retry_after=max(1, math.ceil(ends_in)))

    def _count_here(self, token_id: str) -> int:
        """0 when `token_id` may make a request now (and counts it), else the seconds to wait."""
        now = time.monotonic()
        recent = self.recent.setdefault(token_id, deque())
        while recent and recent[0] <= now - RATE_WINDOW:
            recent.popleft()
        if len(recent) >= RATE_LIMIT:
            return max(1, math.ceil(recent[0] + RATE_WINDOW - now))
        recent.append(now)
        return 0

    def routes(self) -> list[Route]:
        return routes_of(
            make_token, list_tokens, revoke_token, services=AgentTokenServices(self, self.auth)
        )


@dataclass(frozen=True)
class AgentTokenServices:
    """What the token routes work with, one set per app: they take it from the call
    (`call.services`, routes_of)."""

    tokens: AgentTokens
    auth: Auth


def _tokens(call: Call) -> AgentTokens:
    services: AgentTokenServices = call.services
    return services.tokens


# The routes, each declared once at import; a request tries them in this order.


@declare(
    "POST",
    "/api/agent-tokens",
    "Make an agent token for /mcp (signed in): its secret is answered this once",
    body={
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {
                "type": "string",
                "pattern": NAME_PATTERN,
                "maxLength": MAX_NAME,
                "x-refusal": f"A token's name is 1 to {MAX_NAME} characters of text, no "
                "control characters.",
            }
        },
        "additionalProperties": False,
        "x-unknown": 'Send {"name": "…"}: a name that tells you which agent holds the token.',
    },
    body_limit=2048,
    replies={201: Reply(MADE, headers=NO_STORE)},
    refusals={
        401: "Nobody is signed in.",
        409: f"The person has {MAX_TOKENS} tokens already.",
    },
    who=signed_in("Sign in to make an agent token."),
)
async def make_token(call: Call) -> Response:
    made = _tokens(call).make(call.user, call.body["name"].strip(" "))
    return JSONResponse(made, 201, headers={"cache-control": "no-store"})


@declare(
    "GET",
    "/api/agent-tokens",
    "The signed-in person's agent tokens: name, made, last used (never the secret)",
    replies={200: Reply({"type": "array", "items": TOKEN}, headers=NO_STORE)},
    refusals={401: "Nobody is signed in."},
    who=signed_in("Sign in to see your agent tokens."),
)
async def list_tokens(call: Call) -> Response:
    return JSONResponse(_tokens(call).listed(call.user), headers={"cache-control": "no-store"})


@declare(
    "DELETE",
    "/api/agent-tokens/{id}",
    "Revoke one of the signed-in person's agent tokens: refused from the next request on",
    replies={200: REVOKED},
    refusals={401: "Nobody is signed in.", 404: "The person has no token with that id."},
    who=signed_in("Sign in to revoke an agent token."),
)
async def revoke_token(call: Call) -> Any:
    token_id = call.path["id"]
    tokens = _tokens(call)
    if not tokens.revoke(call.user, token_id):
        raise ApiError(
            404,
            f"You have no agent token {token_id[:40]!r}; GET /api/agent-tokens lists yours.",
            field="id",
        )
    for revoked in tokens.on_revoke:  # what the token opened ends now, not at its next use
        revoked(token_id)
    return {"revoked": token_id}


class AgentTokensOnlyOnMcp:
    """ASGI middleware: an agent's token (a token of `prefixes`: agent tokens, OAuth's) anywhere
    but `/mcp` is a 401 with a sentence, not an anonymous visit (the agent's configuration is
    wrong, and should say so). On the `unread` paths no bearer is read at all (OAuth's discovery
    and client endpoints): a client configured with a header sends it there too while it
    authorizes, and must not be refused for it."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str = "/mcp",
        prefixes: tuple[str, ...] = (PREFIX,),
        unread: tuple[str, ...] = (),
    ) -> None:
        self.app, self.path, self.prefixes = app, path, prefixes
        self.unread = frozenset(unread)

    @classmethod
    def refusals(
        cls, *, path: str = "/mcp", unread: tuple[str, ...] = (), **options: Any
    ) -> tuple[Refusal, ...]:
        return (
            Refusal(
                401, f"An agent token was sent: it works only on {path}.", None, (path, *unread)
            ),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] != self.path
            and not scope["path"].startswith(self.path + "/")
            and scope["path"] not in self.unread
        ):
            if bearer_token(Headers(scope=scope)).startswith(self.prefixes):
                refusal = ApiError(
                    401,
                    f"An agent token works only on {self.path}; sign in to use the rest of "
                    "the server.",
                )
                await error_answer(refusal)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def bearer_token(headers: Headers) -> str:
    header = headers.get("authorization", "")
    return header[7:].strip() if header.lower().startswith("bearer ") else ""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
