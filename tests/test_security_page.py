"""Cross-site request forgery as a browser commits it, in real Chromium: an operator is signed in
to reactor, then opens an attacker's page on another port of the same host (the same site, so
the SameSite=Lax session cookie travels). Every write the page can forge is tried; nothing may
change. The same writes, as JSON from an allowed origin, still work."""

from __future__ import annotations

import base64
import hashlib
import json
from contextlib import contextmanager
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from conftest import start_server, stop_server
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from reactor.server.loopback import LoopbackServer

pytestmark = pytest.mark.browser

PLANTED = {
    "id": "planted",
    "name": "planted",
    "location": "ai-tool",
    "language": "python",
    "code": "def invoke(args, context):\n    return 'planted'\n",
    "settings": {"tool": {"description": "Planted.", "inputSchema": {"type": "object"}}},
    "visibility": {"users": [], "groups": ["staff"]},
    "enabled": True,
}
DECK = {"id": "onboarding", "title": "Defaced", "slides": [{"title": "Defaced"}]}
# (method, path, body): every write route a forged request could aim at.
WRITES = [
    ("POST", "/plugins", PLANTED),
    ("PUT", "/plugins/maintenance-backlog", {**PLANTED, "id": "maintenance-backlog"}),
    ("DELETE", "/plugins/maintenance-backlog", None),
    ("PATCH", "/plugins/cms", {"enabled": False}),
    ("PUT", "/api/decks/onboarding", DECK),
    ("PUT", "/api/decks/planted", {**DECK, "id": "planted"}),
    ("DELETE", "/api/decks/quarterly-review", None),
    ("POST", "/api/cms/sites/acme/entries", {"title": "Planted", "publish": True}),
    ("PATCH", "/api/cms/sites/acme/entries/welcome", {"title": "Defaced"}),
    ("POST", "/api/cms/sites/acme/entries/roadmap/publish", {}),
    ("DELETE", "/api/cms/sites/acme/entries/roadmap?confirm=roadmap", None),
    ("POST", "/api/cms/sites/acme/crawl", {"kind": "feed", "url": "/demo-sources/feed.xml"}),
    ("POST", "/api/agent-tokens", {"name": "planted"}),
    ("POST", "/auth/sign-out", {}),
    ("POST", "/auth/sign-in", {"username": "eve", "password": "eve-demo"}),
]
ATTACK = """<!doctype html><meta charset="utf-8"><title>attack</title><body><script>
const target = %(target)s, writes = %(writes)s;
const done = [];
function form(action, enctype, body) {
  return new Promise((resolve) => {
    const frame = document.createElement("iframe");
    frame.name = "f" + Math.random().toString(36).slice(2);
    frame.onload = () => resolve();
    document.body.append(frame);
    const f = Object.assign(document.createElement("form"),
                            {method: "POST", action, enctype, target: frame.name});
    const field = Object.assign(document.createElement("input"),
                                {name: body.slice(0, body.length - 1) + '", "x": "', value: '"}'});
    f.append(field);
    document.body.append(f);
    f.submit();
  });
}
(async () => {
  for (const [method, path, body] of writes) {
    const text = body === null ? "" : JSON.stringify(body);
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]) {
      await fetch(target + path, {method, mode: "no-cors", credentials: "include",
                                  body: text || undefined,
                                  headers: {"content-type": type}}).catch(() => null);
    }
    // Without a content type at all (a Blob with no type sends none).
    await fetch(target + path, {method, mode: "no-cors", credentials: "include",
                                body: text ? new Blob([text]) : undefined}).catch(() => null);
    if (method === "POST") {
      for (const enctype of [
        "text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
      ]) await form(target + path, enctype, text || "{}");
    }
    done.push(path);
  }
  document.title = "done " + done.length;
})();
</script>"""


@contextmanager
def attacker_site(target: str, writes: list[tuple[str, str, object]] = WRITES):
    async def page(request):
        return HTMLResponse(ATTACK % {"target": json.dumps(target), "writes": json.dumps(writes)})

    server = LoopbackServer(Starlette(routes=[Route("/", page)]), start_timeout=10)
    try:
        yield server.url
    finally:
        server.stop()


def server_state(live) -> dict:
    """Everything the forged writes could change, read from the database itself."""
    with live.app.state.context.database.transaction() as db:
        return {
            "records": [
                tuple(r) for r in db.execute("SELECT id, record FROM plugin_records ORDER BY id")
            ],
            "decks": [tuple(r) for r in db.execute("SELECT id, spec FROM decks ORDER BY id")],
            "entries": [
                tuple(r)
                for r in db.execute("SELECT slug, title, status FROM cms_entries ORDER BY slug")
            ],
            "plugins": [
                tuple(r) for r in db.execute("SELECT name, enabled FROM plugin_state ORDER BY name")
            ],
            "sessions": db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            "agent_tokens": db.execute("SELECT COUNT(*) FROM agent_tokens").fetchone()[0],
            "oauth_codes": db.execute("SELECT COUNT(*) FROM oauth_codes").fetchone()[0],
            "oauth_grants": db.execute("SELECT COUNT(*) FROM oauth_grants").fetchone()[0],
        }


def allowed_agent(live) -> tuple[str, str]:
    """An agent ada allowed (OAuth): the query of its authorization request, and the id of the
    connection it made."""
    registered = httpx.post(
        f"{live.url}/register",
        json={"redirect_uris": ["http://127.0.0.1:9/cb"], "token_endpoint_auth_method": "none"},
    ).json()
    verifier = "v" * 64
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    query = urlencode(
        {
            "response_type": "code",
            "client_id": registered["client_id"],
            "redirect_uri": "http://127.0.0.1:9/cb",
            "code_challenge": challenge.decode().rstrip("="),
            "code_challenge_method": "S256",
        }
    )
    session = httpx.post(
        f"{live.url}/auth/sign-in", json={"username": "ada", "password": "ada-demo"}
    ).json()["token"]
    ada = {"authorization": f"Bearer {session}"}
    decided = httpx.post(
        f"{live.url}/authorize/decision",
        json={"request": query, "decision": "allow"},
        headers=ada,
    ).json()
    code = parse_qs(urlsplit(decided["redirect"]).query)["code"][0]
    httpx.post(
        f"{live.url}/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": registered["client_id"],
            "redirect_uri": "http://127.0.0.1:9/cb",
            "code_verifier": verifier,
        },
    ).raise_for_status()
    [connection] = httpx.get(f"{live.url}/api/agent-connections", headers=ada).json()
    httpx.post(f"{live.url}/auth/sign-out", headers=ada)
    return query, connection["id"]


def sign_in(page, live, username="ada"):
    page.goto(f"{live.url}/auth/me")
    answer = page.evaluate(
        """async ([name, password]) => (await fetch('/auth/sign-in', {method: 'POST',
             headers: {'content-type': 'application/json'},
             body: JSON.stringify({username: name, password})})).status""",
        [username, f"{username}-demo"],
    )
    assert answer == 200


def test_an_attacker_page_of_the_same_site_changes_nothing(page, tmp_path):
    live = start_server(tmp_path, seed_demo=True)
    try:
        query, connection = allowed_agent(live)
        # the person's consent and the panel's Revoke: an attacker may neither allow nor end
        writes = [
            *WRITES,
            ("POST", "/authorize/decision", {"request": query, "decision": "allow"}),
            ("DELETE", f"/api/agent-connections/{connection}", None),
        ]
        sign_in(page, live)
        before = server_state(live)
        assert before["sessions"] == 1
        assert (before["oauth_codes"], before["oauth_grants"]) == (1, 1)
        with attacker_site(live.url, writes) as attacker:
            page.goto(attacker)
            page.wait_for_function(f"document.title === 'done {len(writes)}'", timeout=60_000)
        assert server_state(live) == before
        page.goto(f"{live.url}/auth/me")
        # not signed out, not signed in as eve
        assert json.loads(page.inner_text("body"))["username"] == "ada"
    finally:
        stop_server(live)


def test_an_allowed_origin_writes_with_json_and_the_cookie_and_anyone_with_a_bearer_token(
    page, tmp_path
):
    with attacker_site("") as other:  # a second origin, allowed this time
        live = start_server(tmp_path, seed_demo=True, allow_origins=[other])
        try:
            sign_in(page, live)
            page.goto(other)
            status = page.evaluate(
                """async ([target, record]) => (await fetch(target + '/plugins', {
                     method: 'POST', credentials: 'include',
                     headers: {'content-type': 'application/json'},
                     body: JSON.stringify(record)})).status""",
                [live.url, PLANTED],
            )
            assert status == 201
            token = page.evaluate(
                """async (target) => (await (await fetch(target + '/auth/sign-in', {method: 'POST',
                     headers: {'content-type': 'application/json'},
                     body: JSON.stringify({username: 'ada', password: 'ada-demo'}),
                   })).json()).token""",
                live.url,
            )
            status = page.evaluate(
                """async ([target, token]) => (await fetch(target + '/plugins/planted', {
                     method: 'DELETE', headers: {authorization: 'Bearer ' + token}})).status""",
                [live.url, token],
            )
            assert status == 200
            assert [r[0] for r in server_state(live)["records"]] == [
                "backlog-chart",
                "maintenance-backlog",
                "open-task-count",
                "slow-lookup",
            ]
        finally:
            stop_server(live)
