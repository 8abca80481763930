"""Agent tokens (`/api/agent-tokens`) and the doors of `/mcp`, on CPython: who may make, see and
revoke a token, what a hostile body gets (a sentence, never a 500), and that a token opens /mcp
and nothing else. The relay to a real page is tests/test_mcp_page.py."""

from __future__ import annotations

import asyncio
import hashlib
import json

import httpx
import httpx2
import pytest
from conftest import INITIALIZE, MCP_HEADERS, bearer, start_server, stop_server
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from reactor.server.agents.tokens import MAX_TOKENS, PREFIX, RATE_LIMIT, TOO_MANY


def make_token(client, headers, name="Claude Code") -> dict:
    answer = client.post("/api/agent-tokens", json={"name": name}, headers=headers)
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_a_signed_in_person_makes_sees_and_revokes_tokens_whose_secret_is_shown_once(app_server):
    ada = bearer(app_server, "ada")
    with app_server.client() as client:
        made = make_token(client, ada)
        assert set(made) == {"id", "name", "token", "created"} and made["name"] == "Claude Code"
        # 256 bits, URL-safe
        assert made["token"].startswith(PREFIX) and len(made["token"]) >= len(PREFIX) + 43
        listed = client.get("/api/agent-tokens", headers=ada).json()
        assert listed == [
            {"id": made["id"], "name": "Claude Code", "created": made["created"], "lastUsed": None}
        ]
        assert made["token"] not in json.dumps(listed)
        assert client.get("/api/agent-tokens", headers=bearer(app_server, "bob")).json() == [], (
            "never another person's"
        )
        assert (
            client.delete(
                f"/api/agent-tokens/{made['id']}", headers=bearer(app_server, "bob")
            ).status_code
            == 404
        )
        assert client.delete(f"/api/agent-tokens/{made['id']}", headers=ada).json() == {
            "revoked": made["id"]
        }
        assert client.get("/api/agent-tokens", headers=ada).json() == []


def test_a_person_with_the_most_tokens_is_told_to_revoke_one_first(app_server):
    ada = bearer(app_server, "ada")
    with app_server.client() as client:
        for number in range(MAX_TOKENS):
            make_token(client, ada, f"agent {number}")
        refused = client.post("/api/agent-tokens", json={"name": "one more"}, headers=ada)
        assert refused.status_code == 409
        assert refused.json()["error"] == TOO_MANY and str(MAX_TOKENS) in TOO_MANY
        assert len(client.get("/api/agent-tokens", headers=ada).json()) == MAX_TOKENS


def test_the_database_keeps_only_the_hash_of_a_token(app_server):
    with app_server.client() as client:
        made = make_token(client, bearer(app_server, "ada"))
    store = app_server.app.state.context.database
    with store.transaction() as db:
        (stored,) = db.execute("SELECT token_hash FROM agent_tokens").fetchone()
    assert stored == hashlib.sha256(made["token"].encode()).hexdigest()


@pytest.mark.parametrize(
    ("body", "status", "sentence"),
    [
        ({}, 422, "1 to 80 characters"),
        ({"name": ""}, 422, "1 to 80 characters"),
        ({"name": "   "}, 422, "1 to 80 characters"),
        ({"name": "x" * 81}, 422, "1 to 80 characters"),
        ({"name": "tab\there"}, 422, "no control characters"),
        ({"name": 7}, 422, "1 to 80 characters"),
        ({"name": "a", "token": "mine"}, 422, 'Send {"name": "…"}'),
        ({"name": "\ud800"}, 422, "surrogate"),
        ({"name": "a" * 5000}, 413, "larger than"),
    ],
)
def test_a_bad_token_request_gets_a_sentence_not_a_500(app_server, body, status, sentence):
    with app_server.client() as client:
        answer = client.post(
            "/api/agent-tokens",
            content=json.dumps(body),
            headers={**bearer(app_server, "ada"), **MCP_HEADERS},
        )
    assert answer.status_code == status, answer.text
    assert sentence in answer.json()["error"]


def test_signed_out_nobody_makes_lists_or_revokes_tokens(app_server):
    with app_server.client() as client:
        assert client.post("/api/agent-tokens", json={"name": "x"}).status_code == 401
        assert client.get("/api/agent-tokens").status_code == 401
        assert (
            client.delete(
                "/api/agent-tokens/abc", headers={"content-type": "application/json"}
            ).status_code
            == 401
        )
        answer = client.post(
            "/api/agent-tokens",
            content="not json",
            headers={**bearer(app_server, "ada"), **MCP_HEADERS},
        )
        assert answer.status_code == 400 and "not valid JSON" in answer.json()["error"]


def test_an_agent_token_is_refused_everywhere_but_mcp(app_server):
    with app_server.client() as client:
        token = make_token(client, bearer(app_server, "ada"))["token"]
        agent = {"authorization": f"Bearer {token}"}
        for method, path in [
            ("GET", "/auth/me"),
            ("GET", "/api/agent-tokens"),
            ("POST", "/api/agent-tokens"),
            ("GET", "/plugins"),
        ]:
            answer = client.request(method, path, headers=agent, json={"name": "more"})
            assert answer.status_code == 401, (method, path)
            assert "works only on /mcp" in answer.json()["error"]


@pytest.fixture
def live(tmp_path):
    server = start_server(tmp_path / "data", seed_demo=True)
    yield server
    stop_server(server)


def agent_token(live, username="ada") -> str:
    with httpx.Client(base_url=live.url) as client:
        return make_token(client, bearer(live, username))["token"]


def test_mcp_refuses_no_token_a_session_token_a_cookie_and_a_revoked_token_with_www_authenticate(
    live,
):
    session = bearer(live, "ada")
    token = agent_token(live)
    with httpx.Client(base_url=live.url, headers=MCP_HEADERS) as client:
        for headers in [{}, session, {"authorization": "Bearer reactor_agent_made-up"}]:
            answer = client.post("/mcp", json=INITIALIZE, headers=headers)
            assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith(
                "Bearer"
            ), headers
        client.cookies.set("reactor_session", session["authorization"].removeprefix("Bearer "))
        assert client.post("/mcp", json=INITIALIZE).status_code == 401, "no cookie opens /mcp"
        client.cookies.clear()
        assert (
            client.post(
                "/mcp", json=INITIALIZE, headers={"authorization": f"Bearer {token}"}
            ).status_code
            == 200
        )
        listed = client.get("/api/agent-tokens", headers=session).json()
        assert listed[0]["lastUsed"] is not None
        client.delete(f"/api/agent-tokens/{listed[0]['id']}", headers=session)
        answer = client.post("/mcp", json=INITIALIZE, headers={"authorization": f"Bearer {token}"})
        assert answer.status_code == 401 and "revoked" in answer.json()["error"]["message"]


def test_mcp_answers_403_to_a_foreign_origin_and_serves_its_own(live):
    token = agent_token(live)
    with httpx.Client(
        base_url=live.url, headers={**MCP_HEADERS, "authorization": f"Bearer {token}"}
    ) as client:
        answer = client.post("/mcp", json=INITIALIZE, headers={"origin": "http://evil.example"})
        assert answer.status_code == 403 and "evil.example" in answer.json()["error"]
        assert client.get("/mcp", headers={"origin": "null"}).status_code == 403
        assert client.post("/mcp", json=INITIALIZE, headers={"origin": live.url}).status_code == 200


def test_mcp_answers_421_to_a_host_it_does_not_serve(live):
    token = agent_token(live)
    answer = httpx.post(
        f"{live.url}/mcp",
        json=INITIALIZE,
        headers={**MCP_HEADERS, "authorization": f"Bearer {token}", "host": "rebound.example"},
    )
    assert answer.status_code == 421


def test_a_token_past_its_rate_gets_429_with_retry_after(live):
    token = agent_token(live)
    headers = {**MCP_HEADERS, "authorization": f"Bearer {token}"}
    with httpx.Client(base_url=live.url, headers=headers) as client:
        statuses = [
            client.post("/mcp", json={"jsonrpc": "2.0", "method": "ping"}).status_code
            for _ in range(RATE_LIMIT + 1)
        ]
        assert 429 not in statuses[:RATE_LIMIT] and statuses[-1] == 429
        answer = client.post("/mcp", json=INITIALIZE)
        assert answer.status_code == 429 and int(answer.headers["retry-after"]) >= 1
        other = agent_token(live)
        assert (
            client.post(
                "/mcp", json=INITIALIZE, headers={"authorization": f"Bearer {other}"}
            ).status_code
            == 200
        )


async def mcp_session_run(url: str, token: str, work):
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                initialized = await session.initialize()
                return initialized, await work(session)


def test_the_sdk_client_with_no_page_connected_hears_where_to_switch_it_on(live):
    async def work(session):
        listed = await session.list_tools()
        return (
            listed,
            await session.call_tool("decks_list_decks", {}),
            await session.call_tool("reactor_pages", {}),
        )

    initialized, (listed, call, pages) = asyncio.run(
        mcp_session_run(live.url, agent_token(live), work)
    )
    assert initialized.protocol_version == "2025-11-25"
    assert initialized.capabilities.tools.list_changed is True
    assert [t.name for t in listed.tools] == ["reactor_pages", "reactor_call"]
    assert call.is_error and call.content[0].text.startswith(
        f"Open {live.url}/, sign in and switch on *Let my agents use this page*."
    )
    assert pages.is_error is False and pages.structured_content["pages"] == []


def test_an_mcp_session_opened_with_one_token_is_not_another_tokens(live):
    ada, bob = agent_token(live, "ada"), agent_token(live, "bob")
    with httpx.Client(base_url=live.url, headers=MCP_HEADERS) as client:
        opened = client.post("/mcp", json=INITIALIZE, headers={"authorization": f"Bearer {ada}"})
        session = opened.headers["mcp-session-id"]
        answer = client.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={
                "authorization": f"Bearer {bob}",
                "mcp-session-id": session,
                "mcp-protocol-version": "2025-11-25",
            },
        )
        assert answer.status_code == 404


def test_the_2026_07_28_protocol_is_served_too(live):
    """No initialize and no session: `server/discover`, then requests carrying their version."""

    async def run(token: str):
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http:
            async with streamable_http_client(f"{live.url}/mcp", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    discovered = await session.discover()
                    return (
                        discovered,
                        await session.list_tools(),
                        await session.call_tool("decks_list_decks", {}),
                    )

    discovered, listed, call = asyncio.run(run(agent_token(live)))
    assert "2026-07-28" in discovered.supported_versions
    assert [t.name for t in listed.tools] == ["reactor_pages", "reactor_call"]
    assert call.is_error and "switch on *Let my agents use this page*" in call.content[0].text
