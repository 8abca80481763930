"""MCP authorization (OAuth 2.1): an agent is given the person's say-so on a page of this server,
instead of a secret pasted by hand. Both eras of the MCP spec (2025-11-25, 2026-07-28) ask the
same of a server: one file each, in the order an agent meets them.

- metadata.py   where it all is: protected resource (RFC 9728) and authorization server
                (RFC 8414) metadata, made from the request's own origin
- clients.py    who asks: client ID metadata documents (fetched under the outbound guard) and
                Dynamic Client Registration (RFC 7591)
- authorize.py  the request read (PKCE S256, resource, redirect URI), and the person's decision
- consent.py    the consent page the person reads, with the sign-in
- token.py      /token (code + verifier, refresh) and /revoke (RFC 7009)
- grants.py     what was allowed: codes, grants, tokens (hashed), rotation, the panel's list
- resource.py   /mcp's side: whose bearer, and the 401 that starts authorization
"""

from __future__ import annotations

from typing import Any

from ...auth.sessions import Auth
from ...database import Database
from .authorize import authorize_routes
from .clients import Clients
from .grants import ACCESS_PREFIX, REFRESH_PREFIX, Grants
from .metadata import CLIENT_PATHS, UNAUTHENTICATED_PATHS, metadata_routes
from .token import token_routes

__all__ = ["ACCESS_PREFIX", "CLIENT_PATHS", "REFRESH_PREFIX", "UNAUTHENTICATED_PATHS", "OAuth"]


class OAuth:
    """This server as its own authorization server, made once per app: its tables and routes."""

    def __init__(self, database: Database, auth: Auth) -> None:
        self.auth = auth
        self.clients = Clients(database)
        self.grants = Grants(database, auth)

    def routes(self) -> list[Any]:
        return [
            *metadata_routes(),
            *authorize_routes(self.auth, self.clients, self.grants),
            *token_routes(self.clients, self.grants),
            *self.clients.routes(),
            *self.grants.routes(),
        ]
