"""The consent page: what the person reads before an agent may act as them, in their words.

One small page of its own, server-rendered (every value escaped), with the server's one sign-in:
who asks (the client's name, and whether an https document vouches for it or it only named
itself), where the answer sends the person back, what the agent may do, until when; then Allow
and Deny, or the sign-in form when nobody is signed in. `web/consent.js` sends the choice
(`POST /authorize/decision`) and follows the answer. The page runs only this server's script
(no inline script), may not be framed (no clickjacking of Allow) and is never cached.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from urllib.parse import urlsplit

from mcp.server.auth.provider import construct_redirect_uri
from starlette.responses import HTMLResponse

from ....errors import OAuthError
from ...auth.sessions import User
from .clients import Client

HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "connect-src 'self'; img-src 'self'; form-action 'none'; base-uri 'none'; "
    "frame-ancestors 'none'",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
}
WHAT_IT_MAY_DO = "Call the tools of your open pages; anything that changes data still asks you."


@dataclass(frozen=True)
class AuthorizationRequest:
    """An authorization request that passed: who asks, where the answer goes, what it proves."""

    client: Client
    redirect_uri: str
    redirect_given: bool
    challenge: str
    resource: str
    state: str | None
    issuer: str

    def back(self, **parameters: str) -> str:
        """The redirect URI with `parameters`, the request's `state` and this server's `iss`."""
        return construct_redirect_uri(
            self.redirect_uri, **parameters, state=self.state, iss=self.issuer
        )


def consent_page(asked: AuthorizationRequest, user: User | None) -> HTMLResponse:
    """The request, for the person to allow or deny (or to sign in first)."""
    client = asked.client
    name = _e(client.name)
    if client.published:
        host = urlsplit(client.client_id).hostname or client.client_id
        who = (
            f"<strong>{name}</strong>, as described at "
            f'<code data-testid="consent-client-id">{_e(client.client_id)}</code> '
            f"(published by {_e(host)})."
        )
    else:
        who = (
            f"<strong>{name}</strong>. It registered itself with this server: the name is its "
            "own word for itself."
        )
    if user is None:
        decide = (
            '<form class="consent-sign-in" data-testid="consent-sign-in">'
            "<h2>Sign in to decide</h2>"
            '<label>User name <input name="username" autocomplete="username" required></label>'
            '<label>Password <input name="password" type="password" '
            'autocomplete="current-password" required></label>'
            '<button type="submit">Sign in</button></form>'
        )
    else:
        decide = (
            f'<p>Signed in as <strong data-testid="consent-user">{_e(user.username)}</strong>. '
            '<button type="button" class="consent-sign-out">Not you? Sign out</button></p>'
            '<form class="consent-decision">'
            '<button type="submit" value="allow">Allow</button> '
            '<button type="submit" value="deny">Deny</button></form>'
        )
    back = f"<code>{_e(asked.redirect_uri)}</code>{_where(asked.redirect_uri)}"
    body = f"""
<h1 id="consent-title">Allow {name} to use your reactor pages?</h1>
<dl>
  <dt>Who asks</dt>
  <dd data-testid="consent-client">{who}</dd>
  <dt>Where you go next</dt>
  <dd data-testid="consent-redirect">{back}</dd>
  <dt>What it may do</dt>
  <dd data-testid="consent-scope">{_e(WHAT_IT_MAY_DO)} It acts as you until you revoke it in the
  Agents panel.</dd>
</dl>
{decide}
<p class="consent-status" role="alert" data-testid="consent-status"></p>"""
    return HTMLResponse(_page(f"Allow {client.name}?", body), headers=HEADERS)


def refusal_page(error: OAuthError) -> HTMLResponse:
    """A request reactor will not send back to its client: the person reads why (and the code,
    for whoever debugs the agent)."""
    body = f"""
<h1 id="consent-title">This agent cannot connect</h1>
<p data-testid="consent-refusal">{_e(error.description)}</p>
<p class="consent-code">OAuth error: <code data-testid="consent-error">{_e(error.code)}</code>.
Nothing was sent to the agent; you can close this page.</p>"""
    return HTMLResponse(_page("This agent cannot connect", body), 400, headers=HEADERS)


def _where(redirect_uri: str) -> str:
    parts = urlsplit(redirect_uri)
    if parts.scheme == "http" and parts.hostname in ("127.0.0.1", "::1", "localhost"):
        return " (an app on this computer)"
    if parts.scheme not in ("http", "https"):
        return f" (the app that opens {_e(parts.scheme)}: addresses)"
    return ""


def _page(title: str, body: str) -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)} · reactor</title>
<link rel="stylesheet" href="/web/consent.css">
<script type="module" src="/web/consent.js"></script>
</head>
<body>
<main class="consent" aria-labelledby="consent-title">{body}
</main>
</body>
</html>
"""


def _e(text: str) -> str:
    return html.escape(text, quote=True)
