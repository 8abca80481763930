"""Sign-in and sessions: one system for the page, the CMS, plugin visibility and tool calls.

Passwords are stored as salted scrypt hashes (`passwords.py`), checked off the event loop on a
small pool of their own, with the same work for a user that does not exist; failed attempts are
limited per user and per client (`sign_in_limits.py`). A session is a random token, sent as an
HttpOnly cookie to the page and accepted as `Authorization: Bearer <token>` from other clients;
the database keeps only its SHA-256, and it ends after SESSION_SECONDS, or IDLE_SECONDS unused.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import secrets
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ...errors import ApiError, DeclarationError, NotFoundError
from ..api import NO_STORE, Call, Reply, declare, routes_of, services_of
from ..database import Database
from .passwords import LEGACY, burn_time, hash_password, is_current, verify_password
from .sign_in_limits import SignInLimits

COOKIE = "reactor_session"
SESSION_SECONDS = 12 * 3600
IDLE_SECONDS = 2 * 3600
TOUCH_SECONDS = 60  # how stale `last_seen` may get before a request writes it again
MAX_NAME, MAX_PASSWORD = 150, 1024
STEPS = [
    """
    CREATE TABLE IF NOT EXISTS users (
        username TEXT PRIMARY KEY,
        salt BLOB NOT NULL,
        password_hash BLOB NOT NULL,
        groups TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE IF NOT EXISTS sessions (
        token TEXT PRIMARY KEY,
        username TEXT NOT NULL REFERENCES users(username) ON DELETE CASCADE,
        expires_at REAL NOT NULL
    );
    """,
    # Hash schemes beside the hashes; sessions keyed by the token's SHA-256 and ended when idle
    # (the sessions of before held the token itself: they end here).
    f"""
    ALTER TABLE users ADD COLUMN hash_scheme TEXT NOT NULL DEFAULT '{LEGACY}';
    DELETE FROM sessions;
    ALTER TABLE sessions ADD COLUMN last_seen REAL NOT NULL DEFAULT 0;
    """,
]
USER = {
    "type": "object",
    "required": ["username", "groups"],
    "properties": {
        "username": {"type": "string"},
        "groups": {"type": "array", "items": {"type": "string"}},
    },
}
SIGNED_IN = {
    "type": "object",
    "required": ["token", "user"],
    "properties": {"token": {"type": "string"}, "user": USER},
}
# Demo accounts, created only with the demo seed; their passwords are in the README.
DEMO_USERS = [
    ("ada", "ada-demo", ["operators", "staff"]),
    ("bob", "bob-demo", ["staff"]),
    ("eve", "eve-demo", []),
]
# Password checks take ~55 ms of CPU each: a pool of their own keeps them from holding the event
# loop or the thread pool every other request uses.
HASHING = ThreadPoolExecutor(max_workers=2, thread_name_prefix="reactor-hashing")


@dataclass(frozen=True)
class User:
    username: str
    groups: tuple[str, ...]

    def describe(self) -> dict[str, object]:
        return {"username": self.username, "groups": list(self.groups)}


class Auth:
    """Users and sessions in the server's database."""

    def __init__(self, database: Database, *, seed: bool) -> None:
        self.database = database
        database.migrate("auth", STEPS)
        self.limits = SignInLimits(database)
        if seed:
            with database.transaction() as db:
                empty = db.execute("SELECT COUNT(*) FROM users").fetchone()[0] == 0
            if empty:
                for username, password, groups in DEMO_USERS:
                    self.create_user(username, password, groups)

    def create_user(self, username: str, password: str, groups: Iterable[str] = ()) -> User:
        if not username or not password:
            rule = "A user needs a name and a password."
            raise DeclarationError(rule, owner=username or "user", field="password")
        with self.database.transaction() as db:
            db.execute(
                "INSERT INTO users (username, salt, password_hash, hash_scheme, groups) "
                "VALUES (?, ?, ?, ?, ?)",
                (username, *_stored(password), json.dumps(sorted(set(groups)))),
            )
        return User(username, tuple(sorted(set(groups))))

    def set_password(self, username: str, password: str) -> None:
        """Replace a user's password; their sessions end."""
        if not password:
            raise DeclarationError("A password cannot be empty.", owner=username, field="password")
        with self.database.transaction() as db:
            if not db.execute(
                "UPDATE users SET salt = ?, password_hash = ?, hash_scheme = ? WHERE username = ?",
                (*_stored(password), username),
            ).rowcount:
                raise NotFoundError(f"There is no user {username!r}.")
            db.execute("DELETE FROM sessions WHERE username = ?", (username,))

    def set_groups(self, username: str, groups: Iterable[str]) -> None:
        with self.database.transaction() as db:
            db.execute(
                "UPDATE users SET groups = ? WHERE username = ?",
                (json.dumps(sorted(set(groups))), username),
            )

    def has_password(self, username: str, password: str) -> bool:
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT salt, password_hash, hash_scheme FROM users WHERE username = ?", (username,)
            ).fetchone()
        return row is not None and verify_password(
            password, row["hash_scheme"], row["salt"], row["password_hash"]
        )

    def demo_passwords_left(self) -> list[str]:
        """The demo accounts that still have the password the README publishes."""
        return [name for name, password, _ in DEMO_USERS if self.has_password(name, password)]

    def sign_in(self, username: str, password: str) -> str | None:
        """A new session token, or None for a wrong name or password: the same answer, and the
        same work, for both. A hash in an older scheme is replaced by a current one."""
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT salt, password_hash, hash_scheme FROM users WHERE username = ?", (username,)
            ).fetchone()
        if row is None:
            burn_time(password)
            return None
        if not verify_password(password, row["hash_scheme"], row["salt"], row["password_hash"]):
            return None
        token, now = secrets.token_urlsafe(32), time.time()
        with self.database.transaction() as db:
            if not is_current(row["hash_scheme"]):
                db.execute(
                    "UPDATE users SET salt = ?, password_hash = ?, hash_scheme = ? WHERE "
                    "username = ?",
                    (*_stored(password), username),
                )
            db.execute(
                "DELETE FROM sessions WHERE expires_at < ? OR last_seen < ?",
                (now, now - IDLE_SECONDS),
            )
            db.execute(
                "INSERT INTO sessions (token, username, expires_at, last_seen) VALUES (?, ?, ?, ?)",
                (_digest(token), username, now + SESSION_SECONDS, now),
            )
        return token

    def sign_out(self, token: str) -> None:
        with self.database.transaction() as db:
            db.execute("DELETE FROM sessions WHERE token = ?", (_digest(token),))

    def signed_in(
        self, sentence: str, *, group: str = "", outside: str = ""
    ) -> Callable[[Request], User]:
        """A route's `who`: the signed-in user, ApiError 401 (`sentence`) when nobody is, and 403
        (`outside`, or `sentence`) when `group` is given and the user is not in it."""

        def who(request: Request) -> User:
            user = self.user_for(request)
            if user is None:
                raise ApiError(401, sentence)
            if group and group not in user.groups:
                raise ApiError(403, outside or sentence)
            return user

        return who

    def user_for(self, request: Request) -> User | None:
        """The signed-in user of this request (cookie or bearer token), or None."""
        return self.user_for_token(session_token(request))

    def user_for_token(self, token: str) -> User | None:
        if not token:
            return None
        now, key = time.time(), _digest(token)
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT users.username, users.groups, sessions.last_seen FROM sessions "
                "JOIN users USING (username) WHERE token = ? AND expires_at > ? AND last_seen > ?",
                (key, now, now - IDLE_SECONDS),
            ).fetchone()
            if row is not None and now - row["last_seen"] > TOUCH_SECONDS:
                db.execute("UPDATE sessions SET last_seen = ? WHERE token = ?", (now, key))
        return None if row is None else User(row["username"], tuple(json.loads(row["groups"])))

    def routes(self) -> list[Route]:
        return routes_of(session, sign_in, sign_out, me, services=SessionServices(self))


@dataclass(frozen=True)
class SessionServices:
    """What the handlers work with, one set per app: they take it from the call
    (`call.services`, routes_of)."""

    auth: Auth


def _auth(call: Call) -> Auth:
    services: SessionServices = call.services
    return services.auth


def signed_in(sentence: str, *, group: str = "", outside: str = "") -> Callable[[Request], User]:
    """A module-level handler's `who`: the signed-in user of the app serving the request (its
    services' `auth`, routes_of), as `Auth.signed_in` says: 401 with `sentence` when nobody is,
    403 when `group` is given and the user is not in it."""

    def who(request: Request) -> User:
        auth: Auth = services_of(request).auth
        return auth.signed_in(sentence, group=group, outside=outside)(request)

    return who


# The routes, each declared once at import; a request tries them in the order of Auth.routes.
@declare(
    "POST",
    "/auth/sign-in",
    "Sign in: a session as an HttpOnly cookie, and the same token for `Authorization: Bearer`",
    body={
        "type": "object",
        "required": ["username", "password"],
        "properties": {
            "username": {"type": "string", "maxLength": MAX_NAME},
            "password": {"type": "string", "maxLength": MAX_PASSWORD},
        },
        "additionalProperties": False,
    },
    body_limit=8192,  # the longest name and password, every character escaped
    replies={200: Reply(SIGNED_IN, headers={"set-cookie": f"{COOKIE}: the session, HttpOnly"})},
    refusals={
        401: "A wrong name or password (the same answer for both).",
        429: "Too many failed sign-ins for the user or from the client.",
    },
)
async def sign_in(call: Call) -> Response:
    auth = _auth(call)
    username, password = call.body["username"], call.body["password"]
    client = call.request.client.host if call.request.client else ""
    wait, ticket = auth.limits.admit(username, client)
    if wait:
        raise ApiError(
            429,
            f"Too many failed sign-ins; try again in {_duration(wait)}.",
            retry_after=wait,
        )
    token = await asyncio.get_running_loop().run_in_executor(
        HASHING, auth.sign_in, username, password
    )
    if token is None:
        raise ApiError(401, "Wrong user name or password.")
    auth.limits.succeeded(username, client, ticket)
    user = auth.user_for_token(token)
    response = JSONResponse({"token": token, "user": user.describe() if user else None})
    response.set_cookie(
        COOKIE,
        token,
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="lax",
        secure=call.request.url.scheme == "https",
    )
    return response


@declare(
    "POST",
    "/auth/sign-out",
    "End this session (cookie or bearer token)",
    replies={
        200: Reply(
            {
                "type": "object",
                "required": ["signedOut"],
                "properties": {"signedOut": {"const": True}},
            },
            headers={"set-cookie": f"{COOKIE}: cleared"},
        )
    },
)
async def sign_out(call: Call) -> Response:
    token = session_token(call.request)
    if token:
        _auth(call).sign_out(token)
    response = JSONResponse({"signedOut": True})
    response.delete_cookie(COOKIE)
    return response


@declare(
    "GET",
    "/auth/me",
    "Who is signed in (401 when nobody is)",
    replies={200: Reply(USER, headers=NO_STORE)},
    refusals={401: "Nobody is signed in."},
    who=signed_in("Nobody is signed in."),
)
async def me(call: Call) -> Response:
    return JSONResponse(call.user.describe(), headers={"cache-control": "no-store"})


@declare(
    "GET",
    "/auth/session",
    "Who is signed in, if anyone: the page asks at every load, and a signed-out "
    "visitor is no error",
    replies={
        200: Reply(
            {
                "type": "object",
                "required": ["user"],
                "properties": {"user": {"anyOf": [USER, {"type": "null"}]}},
            },
            headers=NO_STORE,
        )
    },
)
async def session(call: Call) -> Response:
    user = _auth(call).user_for(call.request)
    return JSONResponse(
        {"user": user.describe() if user else None}, headers={"cache-control": "no-store"}
    )


def session_token(request: HTTPConnection) -> str:
    """The session token a request (or a WebSocket's handshake) carries: bearer, else the cookie."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get(COOKIE, "")


def _stored(password: str) -> tuple[bytes, bytes, str]:
    """(salt, digest, scheme), in the order of the users table's columns."""
    scheme, salt, digest = hash_password(password)
    return salt, digest, scheme


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _duration(seconds: int) -> str:
    return f"{seconds} seconds" if seconds < 120 else f"{math.ceil(seconds / 60)} minutes"
