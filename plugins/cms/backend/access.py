"""Who may do what: every API call passes here first, so a refusal happens before any change.

Roles rise viewer < editor < publisher. No session is 401; a site where the user has no role,
or too low a role, is 403 — the same answer whether the site exists or not.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from reactor.errors import ApiError
from reactor.server.auth.sessions import Auth

from .store import SiteStore

RANKS = {"viewer": 1, "editor": 2, "publisher": 3}
ACTIONS = {"read": "viewer", "write": "editor", "publish": "publisher"}


class AccessDenied(ApiError):
    """Refused: `.status` is 401 or 403; the message is the sentence to send."""


@dataclass(frozen=True)
class Grant:
    """A signed-in user's role on one site, checked."""

    username: str
    site: str
    role: str

    def allows(self, action: str) -> bool:
        return RANKS[self.role] >= RANKS[ACTIONS[action]]

    def require(self, action: str, doing: str) -> None:
        """AccessDenied(403) unless the role allows `action`; `doing` says what was tried."""
        needed = ACTIONS[action]
        if not self.allows(action):
            raise AccessDenied(
                403,
                f"User {self.username!r} is {_article(self.role)} {self.role} on site "
                f"{self.site!r}; {doing} needs the {needed} role.",
            )


class Access:
    """Session and role checks against the server's sign-in system and the CMS roles."""

    def __init__(self, auth: Auth, store: SiteStore) -> None:
        self.auth = auth
        self.store = store

    def username(self, request: Request) -> str:
        user = self.auth.user_for(request)
        if user is None:
            raise AccessDenied(
                401,
                "Nobody is signed in, or the session has expired; sign in at /auth/sign-in first.",
            )
        return user.username

    def grant(self, request: Request, site: str, action: str, doing: str) -> Grant:
        username = self.username(request)
        role = self.store.role_of(site, username)
        if role is None:
            raise AccessDenied(
                403,
                f"User {username!r} has no role on site {site[:80]!r}; ask its publisher for "
                "access.",
            )
        grant = Grant(username, site, role)
        grant.require(action, doing)
        return grant


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"
