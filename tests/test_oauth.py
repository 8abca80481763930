"""MCP authorization on CPython, against a real loopback server on each backend: the metadata a
client discovers, the code flow with PKCE and its refusals (each the RFC's error code with a
sentence), refresh tokens that rotate, revocation by the client and in the panel, client metadata
documents behind the outbound guard, and what the cross-site write guard leaves to OAuth. The
flow with real clients and a real browser is tests/test_oauth_clients.py."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import httpx2
import pytest
from conftest import INITIALIZE, MCP_HEADERS, start_server, stop_server
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from reactor.server.agents.oauth.grants import ACCESS_PREFIX, REFRESH_PREFIX

CALLBACK = "http://127.0.0.1:8765/callback"


@pytest.fixture
def live(tmp_path, database_target):
    server = start_server(tmp_path / "data", seed_demo=True, database=database_target)
    yield server
    stop_server(server)


@dataclass
class Agent:
    """An OAuth client, step by step: its registration, one authorization's PKCE pair and state,
    what came back."""

    url: str
    client_id: str = ""
    verifier: str = field(default_factory=lambda: secrets.token_urlsafe(48))
    state: str = field(default_factory=lambda: secrets.token_urlsafe(8))

    @property
    def challenge(self) -> str:
        digest = hashlib.sha256(self.verifier.encode()).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def register(self, **metadata: Any) -> dict[str, Any]:
        answer = httpx.post(
            f"{self.url}/register",
            json={
                "client_name": "Test Agent",
                "redirect_uris": [CALLBACK],
                "token_endpoint_auth_method": "none",
                **metadata,
            },
        )
        assert answer.status_code == 201, answer.text
        self.client_id = answer.json()["client_id"]
        return answer.json()

    def query(self, **changes: Any) -> str:
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": CALLBACK,
            "code_challenge": self.challenge,
            "code_challenge_method": "S256",
            "state": self.state,
            "resource": f"{self.url}/mcp",
        }
        params.update(changes)
        return urlencode({k: v for k, v in params.items() if v is not None})

    def token(self, **form: str) -> httpx.Response:
        return httpx.post(f"{self.url}/token", data={"client_id": self.client_id, **form})

    def exchange(self, code: str, **changes: str) -> httpx.Response:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": CALLBACK,
            "code_verifier": self.verifier,
            "resource": f"{self.url}/mcp",
        }
        return self.token(**{**form, **changes})


@contextmanager
def person(live: Any, username: str = "ada") -> Iterator[httpx.Client]:
    """A browser of `username`'s, signed in (its cookie)."""
    with httpx.Client(base_url=live.url) as client:
        answer = client.post(
            "/auth/sign-in", json={"username": username, "password": f"{username}-demo"}
        )
        assert answer.status_code == 200
        yield client


def decide(browser: httpx.Client, query: str, decision: str = "allow") -> dict[str, list[str]]:
    """The person's decision, as the consent page sends it: the query of where it sends them."""
    answer = browser.post("/authorize/decision", json={"request": query, "decision": decision})
    assert answer.status_code == 200, answer.text
    redirect = answer.json()["redirect"]
    assert redirect.startswith(CALLBACK + "?")
    return parse_qs(urlsplit(redirect).query)


def allowed(live: Any, agent: Agent, username: str = "ada") -> dict[str, Any]:
    """The token answer of a whole authorization: registered, allowed, exchanged."""
    if not agent.client_id:
        agent.register()
    with person(live, username) as browser:
        back = decide(browser, agent.query())
    answer = agent.exchange(back["code"][0])
    assert answer.status_code == 200, answer.text
    return answer.json()


def mcp(live: Any, token: str, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{live.url}/mcp",
        json=INITIALIZE,
        headers={**MCP_HEADERS, "authorization": f"Bearer {token}", **headers},
    )


def refused_back(answer: httpx.Response, agent: Agent) -> dict[str, str]:
    """The error parameters of an authorization refused back to the client (a 302)."""
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    assert location.startswith(CALLBACK + "?")
    back = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    assert back["state"] == agent.state and back["iss"] == agent.url
    return back


def test_the_401_of_mcp_leads_a_client_to_this_servers_authorization(live):
    answer = httpx.post(f"{live.url}/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    where = f"{live.url}/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith("Bearer ") and f'resource_metadata="{where}"' in challenge
    assert "error=" not in challenge, "no token, no error code (RFC 6750 §3.1)"
    resource = httpx.get(where)
    assert resource.headers["access-control-allow-origin"] == "*"
    assert resource.json()["resource"] == f"{live.url}/mcp"
    assert resource.json()["authorization_servers"] == [live.url]
    server = httpx.get(f"{live.url}/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == live.url
    assert server["authorization_endpoint"] == f"{live.url}/authorize"
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["client_id_metadata_document_supported"] is True
    assert server["authorization_response_iss_parameter_supported"] is True
    assert {"registration_endpoint", "revocation_endpoint", "token_endpoint"} <= set(server)


def test_a_browser_based_client_of_any_origin_may_ask_each_endpoint_it_calls_alone(live):
    # the MCP Inspector runs in a page of its own origin: its browser asks first (a preflight)
    asked = {"origin": "https://inspector.example", "access-control-request-method": "POST"}
    for path, method in [
        ("/.well-known/oauth-protected-resource/mcp", "GET"),
        ("/.well-known/oauth-authorization-server", "GET"),
        ("/token", "POST"),
        ("/revoke", "POST"),
        ("/register", "POST"),
    ]:
        preflight = httpx.options(f"{live.url}{path}", headers=asked)
        assert preflight.status_code == 204, path
        assert preflight.headers["access-control-allow-origin"] == "*", path
        assert preflight.headers["access-control-allow-methods"] == method, path
        assert "mcp-protocol-version" in preflight.headers["access-control-allow-headers"], path
        answer = httpx.request(method, f"{live.url}{path}", headers={"origin": asked["origin"]})
        assert answer.headers["access-control-allow-origin"] == "*", path  # a refusal too


def test_an_allowed_agent_calls_mcp_and_is_listed_in_the_panel_with_its_last_call(live):
    agent = Agent(live.url)
    tokens = allowed(live, agent)
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600
    assert tokens["access_token"].startswith(ACCESS_PREFIX)
    assert tokens["refresh_token"].startswith(REFRESH_PREFIX)
    answer = mcp(live, tokens["access_token"])
    assert answer.status_code == 200, answer.text
    with person(live) as ada, person(live, "bob") as bob:
        listed = ada.get("/api/agent-connections").json()
        assert [(c["name"], c["clientId"], c["redirectUri"]) for c in listed] == [
            ("Test Agent", agent.client_id, CALLBACK)
        ]
        assert listed[0]["lastUsed"] is not None
        assert bob.get("/api/agent-connections").json() == [], "never another person's"
        assert bob.delete(f"/api/agent-connections/{listed[0]['id']}").status_code == 404
    # an access token opens /mcp only, as an agent token does
    elsewhere = httpx.get(
        f"{live.url}/auth/me", headers={"authorization": f"Bearer {tokens['access_token']}"}
    )
    assert elsewhere.status_code == 401 and "/mcp" in elsewhere.json()["error"]


def test_deny_goes_back_to_the_client_as_access_denied_with_state_and_iss(live):
    agent = Agent(live.url)
    agent.register()
    with person(live) as browser:
        back = decide(browser, agent.query(), "deny")
    assert back["error"] == ["access_denied"] and back["state"] == [agent.state]
    assert back["iss"] == [live.url] and "code" not in back
    assert back["error_description"] == [
        "The person denied Test Agent the use of their reactor pages."
    ]


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"code_challenge": None, "code_challenge_method": None}, "PKCE is required"),
        ({"code_challenge_method": "plain"}, "S256 only, not 'plain'"),
        ({"code_challenge_method": None}, "without a method, PKCE means plain"),
    ],
)
def test_pkce_missing_or_plain_is_refused_back_to_the_client_with_a_sentence(live, changes, words):
    agent = Agent(live.url)
    agent.register()
    with person(live) as browser:
        answer = browser.get(f"/authorize?{agent.query(**changes)}")
        back = refused_back(answer, agent)
        assert back["error"] == "invalid_request" and words in back["error_description"]
        assert (
            browser.post(
                "/authorize/decision", json={"request": agent.query(**changes), "decision": "allow"}
            )
            .json()["redirect"]
            .startswith(CALLBACK + "?error=invalid_request")
        ), "no code, ever"


def test_a_wrong_verifier_is_invalid_grant_and_leaves_the_code_to_its_client(live):
    agent = Agent(live.url)
    agent.register()
    with person(live) as browser:
        code = decide(browser, agent.query())["code"][0]
    wrong = agent.exchange(code, code_verifier=secrets.token_urlsafe(48))
    assert wrong.status_code == 400 and wrong.headers["cache-control"] == "no-store"
    assert wrong.json() == {
        "error": "invalid_grant",
        "error_description": "The code_verifier does not match the code_challenge of the "
        "authorization request.",
    }
    missing = agent.exchange(code, code_verifier="")
    assert missing.json()["error"] == "invalid_request"
    assert "PKCE is required" in missing.json()["error_description"]
    assert agent.exchange(code).status_code == 200


def test_a_redirect_uri_the_client_did_not_register_is_refused_on_the_page_not_sent_there(live):
    agent = Agent(live.url)
    agent.register()
    elsewhere = "https://attacker.example/callback"
    with person(live) as browser:
        answer = browser.get(f"/authorize?{agent.query(redirect_uri=elsewhere)}")
        assert answer.status_code == 400 and "location" not in answer.headers
        assert answer.headers["content-type"].startswith("text/html")
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert 'data-testid="consent-error">invalid_request<' in answer.text
        assert f"The redirect URI {elsewhere} is not one Test Agent registered" in answer.text
        decided = browser.post(
            "/authorize/decision",
            json={"request": agent.query(redirect_uri=elsewhere), "decision": "allow"},
        )
        assert (
            decided.status_code == 400
            and "is not one Test Agent registered" in (decided.json()["error"])
        )


def test_a_loopback_redirect_may_change_its_port_and_nothing_else(live):
    agent = Agent(live.url)
    agent.register()
    with person(live) as browser:
        answer = browser.get(
            f"/authorize?{agent.query(redirect_uri='http://127.0.0.1:9999/callback')}"
        )
        assert answer.status_code == 200 and "http://127.0.0.1:9999/callback" in answer.text
        other_path = browser.get(
            f"/authorize?{agent.query(redirect_uri='http://127.0.0.1:8765/x')}"
        )
        assert other_path.status_code == 400


def test_a_code_used_twice_is_refused_and_ends_the_connection_it_made(live):
    agent = Agent(live.url)
    agent.register()
    with person(live) as browser:
        code = decide(browser, agent.query())["code"][0]
        first = agent.exchange(code)
        assert (
            first.status_code == 200 and mcp(live, first.json()["access_token"]).status_code == 200
        )
        second = agent.exchange(code)
        assert second.status_code == 400 and second.json() == {
            "error": "invalid_grant",
            "error_description": "This authorization code was used already, so reactor ended "
            "the connection it made; authorize again.",
        }
        assert browser.get("/api/agent-connections").json() == []
    refused = mcp(live, first.json()["access_token"])
    assert (
        refused.status_code == 401
        and 'error="invalid_token"' in (refused.headers["www-authenticate"])
    )


def test_a_token_for_another_resource_is_refused_at_each_step(live):
    agent = Agent(live.url)
    agent.register()
    with person(live) as browser:
        answer = browser.get(f"/authorize?{agent.query(resource='https://other.example/mcp')}")
        back = refused_back(answer, agent)
        assert back["error"] == "invalid_target"
        assert back["error_description"] == (
            f"reactor gives tokens for its own MCP endpoint ({live.url}/mcp) only, not for "
            "https://other.example/mcp."
        )
        code = decide(browser, agent.query())["code"][0]
    at_token = agent.exchange(code, resource="https://other.example/mcp")
    assert at_token.status_code == 400 and at_token.json()["error"] == "invalid_target"
    tokens = agent.exchange(code).json()
    # The same server under another of its names is another resource: the token is not for it.
    other_name = live.url.replace("127.0.0.1", "localhost")
    answer = httpx.post(
        f"{other_name}/mcp",
        json=INITIALIZE,
        headers={**MCP_HEADERS, "authorization": f"Bearer {tokens['access_token']}"},
    )
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    assert f'resource_metadata="{other_name}/.well-known/oauth-protected-resource/mcp"' in challenge
    sentence = answer.json()["error"]["message"]
    assert sentence.startswith(f"This token was given for {live.url}/mcp, not for {other_name}/mcp")
    assert f'error_description="{sentence}"' in challenge


def test_refresh_tokens_rotate_and_a_reused_one_ends_the_connection(live):
    agent = Agent(live.url)
    first = allowed(live, agent)
    second = agent.token(grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert second.status_code == 200, second.text
    second_tokens = second.json()
    assert second_tokens["refresh_token"] != first["refresh_token"]
    assert mcp(live, second_tokens["access_token"]).status_code == 200
    reused = agent.token(grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    assert "used already" in reused.json()["error_description"]
    # the whole connection ended: the newer pair too
    assert mcp(live, second_tokens["access_token"]).status_code == 401
    later = agent.token(grant_type="refresh_token", refresh_token=second_tokens["refresh_token"])
    assert later.json()["error"] == "invalid_grant"


def test_the_client_revokes_by_rfc_7009_and_the_person_in_the_panel_each_at_once(live):
    agent = Agent(live.url)
    tokens = allowed(live, agent)
    assert (
        httpx.post(
            f"{live.url}/revoke",
            data={"client_id": agent.client_id, "token": tokens["refresh_token"]},
        ).status_code
        == 200
    )
    refused = mcp(live, tokens["access_token"])
    assert refused.status_code == 401
    assert refused.json()["error"]["message"].startswith(
        "This access token is unknown to reactor or was revoked"
    )
    unknown = httpx.post(
        f"{live.url}/revoke", data={"client_id": agent.client_id, "token": "nothing"}
    )
    assert unknown.status_code == 200, "an unknown token is no error (RFC 7009 §2.2)"
    again = allowed(live, agent)
    with person(live) as ada:
        [connection] = ada.get("/api/agent-connections").json()
        assert ada.delete(f"/api/agent-connections/{connection['id']}").json() == {
            "revoked": connection["id"]
        }
    assert mcp(live, again["access_token"]).status_code == 401
    assert (
        agent.token(grant_type="refresh_token", refresh_token=again["refresh_token"]).json()[
            "error"
        ]
        == "invalid_grant"
    )


def test_a_confidential_client_proves_itself_with_its_secret(live):
    agent = Agent(live.url)
    made = agent.register(token_endpoint_auth_method="client_secret_post")
    secret = made["client_secret"]
    with person(live) as browser:
        code = decide(browser, agent.query())["code"][0]
    without = agent.exchange(code)
    assert without.status_code == 401 and without.json()["error"] == "invalid_client"
    assert "registered with a secret" in without.json()["error_description"]
    wrong = agent.exchange(code, client_secret="not-it")
    assert wrong.status_code == 401 and wrong.json()["error_description"] == (
        "The client secret is wrong."
    )
    assert agent.exchange(code, client_secret=secret).status_code == 200


@pytest.mark.parametrize(
    "metadata, code, words",
    [
        ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri", "cannot receive"),
        ({"redirect_uris": ["http://example.com/cb"]}, "invalid_redirect_uri", "plain http"),
        ({"redirect_uris": ["https://example.com/cb#x"]}, "invalid_redirect_uri", "fragment"),
        ({"redirect_uris": []}, "invalid_client_metadata", "redirect_uris"),
        ({"client_name": "x" * 101}, "invalid_client_metadata", "1 to 100 characters"),
        (
            {"token_endpoint_auth_method": "private_key_jwt"},
            "invalid_client_metadata",
            "not 'private_key_jwt'",
        ),
    ],
)
def test_registration_refuses_what_cannot_be_a_safe_client_with_the_rfcs_error(
    live, metadata, code, words
):
    answer = httpx.post(
        f"{live.url}/register",
        json={"client_name": "Bad", "redirect_uris": [CALLBACK], **metadata},
    )
    assert answer.status_code == 400 and answer.json()["error"] == code, answer.text
    assert words in answer.json()["error_description"]


@pytest.mark.parametrize(
    "client_id, words",
    [
        ("https://10.0.0.1/client.json", "10.0.0.1, a private address"),
        ("https://127.0.0.1:9/client.json", "127.0.0.1, a loopback address"),
        ("https://169.254.169.254/latest", "169.254.169.254, a link-local address"),
        ("https://localhost/oauth/client", "a loopback address"),
    ],
)
def test_a_client_metadata_url_on_a_private_address_is_refused_before_any_connection(
    live, client_id, words
):
    agent = Agent(live.url, client_id=client_id)
    with person(live) as browser:
        page = browser.get(f"/authorize?{agent.query()}")
    assert page.status_code == 400 and "location" not in page.headers
    assert 'data-testid="consent-error">invalid_client<' in page.text
    assert "reactor could not read the client&#x27;s metadata document" in page.text
    assert words in page.text and "REACTOR_OAUTH_CLIENT_ALLOW" in page.text
    at_token = agent.token(grant_type="authorization_code", code="x", code_verifier=agent.verifier)
    assert at_token.status_code == 401 and at_token.json()["error"] == "invalid_client"
    assert words in at_token.json()["error_description"]


def test_an_unknown_client_is_told_to_the_person_and_to_the_token_endpoint(live):
    agent = Agent(live.url, client_id="never-registered")
    with person(live) as browser:
        page = browser.get(f"/authorize?{agent.query()}")
    assert page.status_code == 400 and "reactor knows no client" in page.text
    at_token = agent.exchange("x")
    assert at_token.status_code == 401 and at_token.json()["error"] == "invalid_client"


def test_oauths_client_endpoints_take_cross_site_forms_and_no_other_write_does(live):
    """/token, /register and /revoke are posted by agents from anywhere, as forms (RFC 6749);
    the cross-site write guard leaves exactly these to OAuth's own rules."""
    hostile = {"origin": "https://attacker.example", "sec-fetch-site": "cross-site"}
    token = httpx.post(f"{live.url}/token", data={"grant_type": "x"}, headers=hostile)
    assert token.status_code == 401 and token.json()["error"] == "invalid_client"
    revoke = httpx.post(f"{live.url}/revoke", data={"token": "x"}, headers=hostile)
    assert revoke.status_code == 401 and revoke.json()["error"] == "invalid_client"
    with person(live) as browser:
        for path in ("/authorize/decision", "/auth/sign-out", "/api/agent-tokens", "/token/x"):
            answer = browser.post(path, data={"request": "x", "decision": "allow"}, headers=hostile)
            assert answer.status_code == 415, path
        assert browser.get("/auth/me").status_code == 200, "still signed in"


def test_the_consent_page_shows_who_asks_where_it_goes_and_what_it_may_do_escaped(live):
    agent = Agent(live.url)
    agent.register(client_name='<img src=x onerror="alert(1)">')
    signed_out = httpx.get(f"{live.url}/authorize?{agent.query()}")
    assert signed_out.status_code == 200 and 'data-testid="consent-sign-in"' in signed_out.text
    assert "<img src=x" not in signed_out.text and "&lt;img src=x" in signed_out.text
    assert signed_out.headers["cache-control"] == "no-store"
    policy = signed_out.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    with person(live) as browser:
        page = browser.get(f"/authorize?{agent.query()}").text
    assert "Signed in as <strong" in page and ">Allow</button>" in page and ">Deny</button>" in page
    assert f"<code>{CALLBACK}</code> (an app on this computer)" in page
    assert "Call the tools of your open pages; anything that changes data still asks you." in page
    assert "the name is its own word for itself" in page


def test_a_decision_needs_the_person_signed_in(live):
    agent = Agent(live.url)
    agent.register()
    answer = httpx.post(
        f"{live.url}/authorize/decision", json={"request": agent.query(), "decision": "allow"}
    )
    assert answer.status_code == 401 and "Sign in" in answer.json()["error"]


def test_a_client_given_a_revoked_token_by_hand_shows_the_person_the_sentence(live):
    """A client configured with a header runs no authorization: the 401's body is a JSON-RPC
    error, which the SDK's transport hands to the caller, sentence and all."""
    agent = Agent(live.url)
    tokens = allowed(live, agent)
    agent_token = httpx.post(
        f"{live.url}/api/agent-tokens",
        json={"name": "by hand"},
        headers={"authorization": f"Bearer {person_token(live)}"},
    ).json()["token"]
    with person(live) as ada:
        [connection] = ada.get("/api/agent-connections").json()
        ada.delete(f"/api/agent-connections/{connection['id']}")
        [made] = ada.get("/api/agent-tokens").json()
        ada.delete(f"/api/agent-tokens/{made['id']}")
    for token, sentence in [
        (tokens["access_token"], "This access token is unknown to reactor or was revoked"),
        (agent_token, "This agent token is unknown or revoked"),
    ]:
        with pytest.raises(BaseException) as refused:
            asyncio.run(sdk_initialize(f"{live.url}/mcp", token))
        error = innermost(refused.value)
        assert isinstance(error, MCPError) and str(error).startswith(sentence), refused.value


def test_a_revocation_on_one_server_process_refuses_the_next_call_on_another(
    tmp_path, database_target, backend
):
    if backend != "postgresql":
        pytest.skip("several server processes share a PostgreSQL database, not a SQLite file")
    one = start_server(tmp_path / "one", seed_demo=True, database=database_target)
    other = start_server(tmp_path / "other", seed_demo=False, database=database_target)
    try:
        agent = Agent(one.url)
        tokens = allowed(one, agent)
        # the token was asked for one's address: the other process serves it under its own
        at_other = lambda: httpx.post(  # noqa: E731
            f"{other.url}/mcp",
            json=INITIALIZE,
            headers={
                **MCP_HEADERS,
                "authorization": f"Bearer {tokens['access_token']}",
                "host": urlsplit(one.url).netloc,
            },
        )
        assert at_other().status_code == 200
        with person(one) as ada:
            [connection] = ada.get("/api/agent-connections").json()
            ada.delete(f"/api/agent-connections/{connection['id']}")
        assert at_other().status_code == 401
    finally:
        stop_server(other)
        stop_server(one)


def person_token(live: Any) -> str:
    answer = httpx.post(
        f"{live.url}/auth/sign-in", json={"username": "ada", "password": "ada-demo"}
    )
    return str(answer.json()["token"])


async def sdk_initialize(url: str, token: str) -> Any:
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                return await session.initialize()


def innermost(error: BaseException) -> BaseException:
    """The one error an exception group (the SDK's task groups) carries."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def test_a_client_sending_a_refused_token_in_its_header_is_told_to_fix_it_not_to_register(live):
    """A client configured with a header (mcp-remote's --header) authorizes after /mcp refuses
    its token, and keeps sending the header: signing in could never replace it. Discovery
    answers it; registration says what to do instead."""
    header = {"authorization": "Bearer reactor_agent_revoked-long-ago"}
    metadata = httpx.get(f"{live.url}/.well-known/oauth-protected-resource/mcp", headers=header)
    assert metadata.status_code == 200
    registered = httpx.post(
        f"{live.url}/register",
        json={"client_name": "Bridge", "redirect_uris": [CALLBACK]},
        headers=header,
    )
    assert registered.status_code == 400 and registered.json() == {
        "error": "invalid_request",
        "error_description": "This agent sends a reactor token in its Authorization header, and "
        "/mcp refused it (it was revoked, or is unknown). Make a new token in the page's Agents "
        "panel, or remove the header from the agent's configuration to sign in instead.",
    }
    token = httpx.post(f"{live.url}/token", data={"grant_type": "x"}, headers=header)
    assert (
        token.status_code == 400 and "Authorization header" in (token.json()["error_description"])
    )
