"""Sign-in and sessions: one system for the page, the CMS, plugin visibility and tool calls.

Passwords are stored as salted PBKDF2 hashes. A session is a random token, sent as an HttpOnly
cookie to the page and accepted as `Authorization: Bearer <token>` from other clients.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Iterable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .database import Database
from .requests import read_json

COOKIE = "reactor_session"
SESSION_SECONDS = 12 * 3600
ITERATIONS = 120_000
SCHEMA = """
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
"""
# Demo accounts, created only with the demo seed; their passwords are in the README.
DEMO_USERS = [("ada", "ada-demo", ["operators", "staff"]), ("bob", "bob-demo", ["staff"]), ("eve", "eve-demo", [])]


@dataclass(frozen=True)
class User:
    username: str
    groups: tuple[str, ...]

    def describe(self) -> dict[str, object]:
        return {"username": self.username, "groups": list(self.groups)}


class Auth:
    """Users and sessions in the server's SQLite file."""

    def __init__(self, database: Database, *, seed: bool) -> None:
        self.database = database
        database.migrate(SCHEMA)
        if seed:
            with database.transaction() as db:
                empty = db.execute("SELECT COUNT(*) FROM users").fetchone()[0] == 0
            if empty:
                for username, password, groups in DEMO_USERS:
                    self.create_user(username, password, groups)

    def create_user(self, username: str, password: str, groups: Iterable[str] = ()) -> User:
        if not username or not password:
            raise ValueError("A user needs a name and a password.")
        salt = secrets.token_bytes(16)
        with self.database.transaction() as db:
            db.execute(
                "INSERT INTO users (username, salt, password_hash, groups) VALUES (?, ?, ?, ?)",
                (username, salt, _hash(password, salt), json.dumps(sorted(set(groups)))),
            )
        return User(username, tuple(sorted(set(groups))))

    def set_groups(self, username: str, groups: Iterable[str]) -> None:
        with self.database.transaction() as db:
            db.execute("UPDATE users SET groups = ? WHERE username = ?", (json.dumps(sorted(set(groups))), username))

    def sign_in(self, username: str, password: str) -> str | None:
        """A new session token, or None for a wrong name or password (the same answer for both)."""
        with self.database.transaction() as db:
            row = db.execute("SELECT salt, password_hash FROM users WHERE username = ?", (username,)).fetchone()
        if row is None or not hmac.compare_digest(_hash(password, row["salt"]), row["password_hash"]):
            return None
        token = secrets.token_urlsafe(32)
        with self.database.transaction() as db:
            db.execute("DELETE FROM sessions WHERE expires_at < ?", (time.time(),))
            db.execute("INSERT INTO sessions VALUES (?, ?, ?)", (token, username, time.time() + SESSION_SECONDS))
        return token

    def sign_out(self, token: str) -> None:
        with self.database.transaction() as db:
            db.execute("DELETE FROM sessions WHERE token = ?", (token,))

    def user_for(self, request: Request) -> User | None:
        """The signed-in user of this request (cookie or bearer token), or None."""
        return self.user_for_token(_token(request))

    def user_for_token(self, token: str) -> User | None:
        if not token:
            return None
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT users.username, users.groups FROM sessions JOIN users USING (username) "
                "WHERE token = ? AND expires_at > ?",
                (token, time.time()),
            ).fetchone()
        return None if row is None else User(row["username"], tuple(json.loads(row["groups"])))

    def routes(self) -> list[Route]:
        async def sign_in(request: Request) -> Response:
            body = await read_json(request, limit=4096)
            if isinstance(body, Response):
                return body
            username, password = body.get("username"), body.get("password")
            if not isinstance(username, str) or not isinstance(password, str):
                return JSONResponse({"error": 'Send {"username": "...", "password": "..."}.'}, 422)
            token = self.sign_in(username, password)
            if token is None:
                return JSONResponse({"error": "Wrong user name or password."}, 401)
            user = self.user_for_token(token)
            response = JSONResponse({"token": token, "user": user.describe() if user else None})
            response.set_cookie(COOKIE, token, max_age=SESSION_SECONDS, httponly=True, samesite="lax")
            return response

        async def sign_out(request: Request) -> Response:
            token = _token(request)
            if token:
                self.sign_out(token)
            response = JSONResponse({"signedOut": True})
            response.delete_cookie(COOKIE)
            return response

        async def me(request: Request) -> Response:
            user = self.user_for(request)
            if user is None:
                return JSONResponse({"error": "Nobody is signed in."}, 401)
            return JSONResponse(user.describe())

        return [
            Route("/auth/sign-in", sign_in, methods=["POST"]),
            Route("/auth/sign-out", sign_out, methods=["POST"]),
            Route("/auth/me", me),
        ]


def _token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get(COOKIE, "")


def _hash(password: str, salt: bytes) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", password.encode(), salt, ITERATIONS)
