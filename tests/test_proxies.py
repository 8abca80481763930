"""reactor behind a proxy (reactor/server/proxies.py, logs.py, auth/protection.py), on CPython
against the real HTTP server: whose X-Forwarded-* count, the limits that hold against rotating
headers, the refusals that name the proxy setting to fix, and the JSON log. The Agents panel
behind a proxy that does not pass WebSockets on: tests/test_mcp_page.py."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import subprocess
import sys
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from conftest import app_server_over, bearer, run_reactor, start_server, stop_server

from reactor.server.auth.sign_in_limits import CLIENT_LIMIT
from reactor.server.gateway.config import AssistantConfig
from reactor.server.proxies import ForwardedHeaders
from reactor.testing.standins import StandIn

KEY = "sk-marker-77aa01"


@contextmanager
def serving(tmp_path, **options: Any):
    """The app on loopback behind uvicorn, as `reactor serve` runs it: the peer is 127.0.0.1."""
    live = start_server(tmp_path / "data", seed_demo=True, **options)
    try:
        with httpx.Client(base_url=live.url, timeout=30) as client:
            yield live, client
    finally:
        stop_server(live)


def sign_in(client, username, password, forwarded_for="", **headers):
    if forwarded_for:
        headers["x-forwarded-for"] = forwarded_for
    return client.post(
        "/auth/sign-in", json={"username": username, "password": password}, headers=headers
    ).status_code


# Whose headers count ------------------------------------------------------------------------------


def test_without_a_trusted_proxy_rotating_forwarded_for_values_are_one_client_and_limited(
    tmp_path,
):
    with serving(tmp_path) as (live, client):
        statuses = [
            sign_in(client, f"guess-{n}", "wrong", f"10.0.{n}.1", **{"x-forwarded-proto": "https"})
            for n in range(34)
        ]
    assert statuses == [401] * CLIENT_LIMIT + [429] * (34 - CLIENT_LIMIT)


def test_behind_a_trusted_proxy_the_client_is_the_last_untrusted_hop_and_cannot_spoof_it(tmp_path):
    with serving(tmp_path, trust_proxies=["127.0.0.1"]) as (live, client):
        # What a client writes itself comes first; the proxy appends the address it saw.
        for n in range(CLIENT_LIMIT):
            assert sign_in(client, f"guess-{n}", "wrong", f"10.0.{n}.1, 203.0.113.7") == 401
        assert sign_in(client, "ada", "ada-demo", "10.9.9.9, 203.0.113.7") == 429
        assert sign_in(client, "ada", "ada-demo", "203.0.113.7, 127.0.0.1") == 429, (
            "a trusted hop is skipped"
        )
        assert sign_in(client, "ada", "ada-demo", "203.0.113.8") == 200, (
            "another client behind the same proxy is limited on its own"
        )


def test_the_gateways_anonymous_limit_holds_against_rotating_forwarded_for_values(tmp_path):
    stand_in = StandIn("openai", KEY)
    config = AssistantConfig(
        provider="openai",
        model="site-model",
        api_key=KEY,
        base_url=stand_in.url,
        anonymous=True,
        limit_rpm=3,
    )
    body = {"messages": [{"role": "user", "content": "hello"}], "stream": True}

    def ask(client, forwarded_for):
        return client.post(
            "/api/assistant/v1/chat/completions",
            json=body,
            headers={"x-forwarded-for": forwarded_for},
        ).status_code

    try:
        with serving(tmp_path / "direct", assistant=config) as (live, client):
            assert [ask(client, f"10.0.0.{n}") for n in range(5)] == [200, 200, 200, 429, 429]
        with serving(tmp_path / "proxied", assistant=config, trust_proxies=["127.0.0.0/8"]) as (
            live,
            client,
        ):
            first = [ask(client, f"10.0.0.{n}, 203.0.113.7") for n in range(4)]
            assert first == [200, 200, 200, 429]
            assert ask(client, "203.0.113.8") == 200, "another client has its own allowance"
    finally:
        stand_in.stop()


def forwarded(peer, proxies, headers, kind="http"):
    """What ForwardedHeaders hands the app for a request from `peer` with `headers`."""
    seen: dict[str, Any] = {}

    async def app(scope, receive, send):
        seen.update(client=scope["client"][0], scheme=scope["scheme"])

    scope = {
        "type": kind,
        "scheme": "ws" if kind == "websocket" else "http",
        "client": (peer, 50000),
        "headers": [(k.encode(), v.encode("latin-1")) for k, v in headers],
    }
    asyncio.run(ForwardedHeaders(app, proxies=proxies)(scope, None, None))  # type: ignore[arg-type]
    return seen["client"], seen["scheme"]


XFF, PROTO = "x-forwarded-for", "x-forwarded-proto"
HOME, LOCAL = "127.0.0.1", ["127.0.0.1"]
NETS = ["127.0.0.0/8", "10.0.0.0/8"]
CLIENT = "203.0.113.7"


@pytest.mark.parametrize(
    "peer, proxies, headers, client, scheme",
    [
        # an untrusted peer's forwarded headers are ignored
        ("198.51.100.9", LOCAL, [(XFF, CLIENT), (PROTO, "https")], "198.51.100.9", "http"),
        (HOME, [], [(XFF, CLIENT), (PROTO, "https")], HOME, "http"),
        # a trusted one's are read
        (HOME, LOCAL, [(XFF, CLIENT), (PROTO, "https")], CLIENT, "https"),
        ("::ffff:127.0.0.1", LOCAL, [(XFF, CLIENT)], CLIENT, "http"),
        ("::1", ["::1"], [(XFF, "[2001:db8::7]:443")], "2001:db8::7", "http"),
        (HOME, LOCAL, [(XFF, f"{CLIENT}:5123")], CLIENT, "http"),
        # right to left, trusted hops skipped; all trusted: the leftmost
        (HOME, NETS, [(XFF, f"1.2.3.4, {CLIENT}, 10.1.2.3, 127.0.0.2")], CLIENT, "http"),
        (HOME, NETS, [(XFF, "10.0.0.1, 10.0.0.2")], "10.0.0.1", "http"),
        (HOME, LOCAL, [(XFF, "10.0.0.1"), (XFF, CLIENT)], CLIENT, "http"),
        # malformed values are ignored, never an error; a broken chain ends where it breaks
        (HOME, LOCAL, [(XFF, "unknown"), (PROTO, "ftp")], HOME, "http"),
        (HOME, NETS, [(XFF, f"{CLIENT}, garbage, 10.0.0.2")], "10.0.0.2", "http"),
        (HOME, LOCAL, [(XFF, ",,, ;" * 5000), (PROTO, "\u00ff")], HOME, "http"),
        (HOME, LOCAL, [(PROTO, "HTTPS, http")], HOME, "https"),
    ],
)
def test_the_client_and_scheme_come_only_from_a_trusted_proxys_headers(
    peer, proxies, headers, client, scheme
):
    assert forwarded(peer, proxies, headers) == (client, scheme)


def test_a_websockets_forwarded_scheme_is_ws_or_wss():
    assert forwarded("127.0.0.1", ["127.0.0.1"], [(PROTO, "https")], "websocket")[1] == "wss"
    assert forwarded("127.0.0.1", ["127.0.0.1"], [(PROTO, "http")], "websocket")[1] == "ws"


@pytest.mark.parametrize(
    "option, value, sentence",
    [
        ("--trust-proxy", "proxy.example", "'proxy.example' is not a proxy's address"),
        ("--trust-proxy", "127.0.0.1:80", "'127.0.0.1:80' is not a proxy's address"),
        ("--public-url", "reactor.test:8443", "'reactor.test:8443' is not the address people see"),
        ("--public-url", "https://reactor.test/app", "is not the address people see"),
        ("--log-format", "xml", "invalid choice: 'xml'"),
    ],
)
def test_reactor_serve_refuses_a_proxy_option_it_cannot_use_naming_it(
    tmp_path, option, value, sentence
):
    done = run_reactor("serve", "--port", "0", "--data", str(tmp_path), option, value)
    assert done.returncode == 2 and sentence in done.stderr


# Refusals that name the cause -------------------------------------------------------------------

PUBLIC = "https://reactor.test:8443"


@pytest.fixture
def proxied(tmp_path):
    """The app as nginx reaches it on 127.0.0.1, for the site https://reactor.test:8443."""
    return app_server_over(
        tmp_path / "data",
        plugins=[],
        seed_demo=True,
        allow_hosts=["127.0.0.1", "reactor.test"],
        trust_proxies=["127.0.0.1"],
    )


def refusals(caplog):
    return [r for r in caplog.records if r.levelno == logging.WARNING]


def test_a_host_that_lost_its_port_is_refused_naming_proxy_set_header_host(proxied, caplog):
    caplog.set_level(logging.WARNING)
    answer = proxied.client().post(
        "/auth/sign-in",
        json={"username": "ada", "password": "ada-demo"},
        headers={"origin": PUBLIC, "host": "reactor.test", PROTO: "https"},
    )
    assert answer.status_code == 403
    assert answer.json()["error"] == (
        "This server cannot tell that https://reactor.test:8443 is its own page: the proxy in "
        "front of it drops the page's port from the Host header (it sent 'reactor.test'; "
        "`proxy_set_header Host $http_host;` keeps it)."
    )
    [line] = refusals(caplog)
    assert "proxy_set_header Host $http_host;" in line.getMessage()
    assert "ada-demo" not in line.getMessage()
    kept = proxied.client().post(
        "/auth/sign-in",
        json={"username": "ada", "password": "ada-demo"},
        headers={"origin": PUBLIC, "host": "reactor.test:8443", PROTO: "https"},
    )
    assert kept.status_code == 200 and "secure" in kept.headers["set-cookie"].lower(), (
        "with the Host kept and the scheme forwarded, the session cookie is Secure"
    )


@pytest.mark.parametrize(
    "peer_trusted, proto, named",
    [
        (False, "https", "`reactor serve --trust-proxy ADDRESS`"),
        (True, "", "`proxy_set_header X-Forwarded-Proto $scheme;`"),
    ],
)
def test_an_https_page_reached_by_http_is_refused_naming_the_forwarded_scheme(
    tmp_path, caplog, peer_trusted, proto, named
):
    caplog.set_level(logging.WARNING)
    server = app_server_over(
        tmp_path / "data",
        plugins=[],
        seed_demo=True,
        allow_hosts=["reactor.test"],
        trust_proxies=["127.0.0.1"] if peer_trusted else [],
    )
    answer = server.client().post(
        "/auth/sign-in",
        json={"username": "ada", "password": "ada-demo"},
        headers={
            "origin": PUBLIC,
            "host": "reactor.test:8443",
            **({PROTO: proto} if proto else {}),
        },
    )
    assert answer.status_code == 403
    sentence = answer.json()["error"]
    assert sentence.startswith(
        "This server cannot tell that https://reactor.test:8443 is its own page: the proxy in "
        "front of it does not tell reactor that the page is https (`proxy_set_header "
        "X-Forwarded-Proto $scheme;`"
    )
    assert named in sentence and "port" not in sentence
    [line] = refusals(caplog)
    assert "trusted proxy" in line.getMessage()


def test_both_causes_at_once_are_named_in_one_sentence(tmp_path):
    server = app_server_over(tmp_path / "data", plugins=[], allow_hosts=["reactor.test"])
    answer = server.client().post(
        "/auth/sign-in",
        json={"username": "ada", "password": "x"},
        headers={"origin": PUBLIC, "host": "reactor.test"},
    )
    assert answer.status_code == 403
    assert answer.json()["error"] == (
        "This server cannot tell that https://reactor.test:8443 is its own page: the proxy in "
        "front of it drops the page's port from the Host header (it sent 'reactor.test'; "
        "`proxy_set_header Host $http_host;` keeps it) and does not tell reactor that the page "
        "is https (`proxy_set_header X-Forwarded-Proto $scheme;` does, from a proxy reactor "
        "trusts: `reactor serve --trust-proxy ADDRESS`)."
    )


@pytest.mark.parametrize(
    "origin",
    ["https://evil.example", "https://reactor.test.evil.example:8443", "http://reactor.test:8443"],
)
def test_another_site_is_still_refused_as_another_site(proxied, origin):
    answer = proxied.client().post(
        "/auth/sign-in",
        json={"username": "ada", "password": "ada-demo"},
        headers={"origin": origin, "host": "reactor.test:8443", PROTO: "https"},
    )
    assert answer.status_code == 403
    assert answer.json()["error"].startswith(f"A page of {origin} may not write to this server")


def test_a_default_port_is_the_same_whether_the_host_names_it_or_not(proxied):
    for host in ("reactor.test", "reactor.test:443"):
        answer = proxied.client().post(
            "/auth/sign-in",
            json={"username": "ada", "password": "ada-demo"},
            headers={"origin": "https://reactor.test", "host": host, PROTO: "https"},
        )
        assert answer.status_code == 200, host


def test_the_page_link_asked_without_its_upgrade_is_a_426_naming_the_proxy_lines(proxied, caplog):
    caplog.set_level(logging.WARNING)
    answer = proxied.client().get("/api/agent-pages/link?title=x&url=y")
    assert answer.status_code == 426 and answer.headers["upgrade"] == "websocket"
    assert answer.json()["error"] == (
        "/api/agent-pages/link takes a WebSocket only, and this request came without "
        "`Upgrade: websocket`: a proxy in front of reactor must pass WebSockets on (nginx: "
        "`proxy_http_version 1.1;`, `proxy_set_header Upgrade $http_upgrade;` and "
        '`proxy_set_header Connection "upgrade";`).'
    )
    [line] = refusals(caplog)
    assert 'proxy_set_header Connection "upgrade";' in line.getMessage()
    document = proxied.client().get("/openapi.json").json()
    assert "426" in document["paths"]["/api/agent-pages/link"]["get"]["responses"]


def test_a_websocket_from_the_https_page_reached_by_http_is_refused_with_a_line_saying_why(
    tmp_path, caplog
):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    caplog.set_level(logging.WARNING)
    live = start_server(tmp_path / "data", seed_demo=True)
    try:
        link = f"ws{live.url.removeprefix('http')}/api/agent-pages/link"
        origin = f"https{live.url.removeprefix('http')}"  # the page is https; the server sees ws
        with pytest.raises(InvalidStatus) as refused:
            connect(link, additional_headers={"origin": origin, **bearer(live, "ada")})
        assert refused.value.response.status_code == 403
    finally:
        stop_server(live)
    [line] = [r for r in refusals(caplog) if r.name == "reactor.server"]
    assert "X-Forwarded-Proto" in line.getMessage() and "not a trusted proxy" in line.getMessage()


# --public-url -----------------------------------------------------------------------------------


def test_the_public_url_is_served_and_is_the_address_an_agent_is_told(tmp_path):
    from test_agent_tokens import mcp_session_run
    from test_mcp_processes import agent_token

    with serving(tmp_path, public_url=PUBLIC) as (live, client):
        assert client.get("/openapi.json", headers={"host": "reactor.test:8443"}).status_code == 200

        async def work(session):
            return await session.call_tool("decks_list_decks", {})

        _, call = asyncio.run(mcp_session_run(live.url, agent_token(live), work))
    assert call.is_error and call.content[0].text.startswith(
        f"Open {PUBLIC}/, sign in and switch on *Let my agents use this page*."
    )


# --log-format json ------------------------------------------------------------------------------


def test_json_logs_are_one_object_a_line_with_the_request_id_and_no_secret(tmp_path):
    from conftest import INITIALIZE, MCP_HEADERS

    command = [
        sys.executable, "-m", "reactor", "serve", "--port", "0", "--data", str(tmp_path),
        "--log-format", "json",
    ]  # fmt: skip
    reset = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=reset,
        env={**os.environ, "REACTOR_TRUST_PROXIES": "127.0.0.1"},
    ) as server:
        url = server.stdout.readline().split()[3].rstrip("/")
        with httpx.Client(base_url=url, timeout=30) as client:
            signed = client.post(
                "/auth/sign-in",
                json={"username": "ada", "password": "ada-demo"},
                headers={"x-request-id": "edge-4f1c2a9e", XFF: "10.1.1.1, 203.0.113.7"},
            )
            session, cookie = signed.json()["token"], client.cookies["reactor_session"]
            made = client.post(
                "/api/agent-tokens",
                json={"name": "agent"},
                headers={"authorization": f"Bearer {session}"},
            )
            agent = made.json()["token"]
            mcp = client.post(
                "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "authorization": f"Bearer {agent}"}
            )
            queried = client.get("/auth/session?secret=query-marker-91")
            refused = client.post(  # the https page, no X-Forwarded-Proto: a warning line
                "/auth/sign-in",
                json={"username": "ada", "password": "ada-demo"},
                headers={"origin": f"https{url.removeprefix('http')}"},
            )
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    assert signed.headers["x-request-id"] == "edge-4f1c2a9e", "a trusted proxy's id is kept"
    assert refused.status_code == 403 and mcp.status_code == 200 and queried.status_code == 200
    lines = [json.loads(line) for line in err.splitlines()]
    for line in lines:
        assert {"time", "level", "logger", "message", "request_id"} <= set(line), line
    access = {line["request_id"]: line for line in lines if line["logger"] == "reactor.access"}
    ids = [answer.headers["x-request-id"] for answer in (signed, made, mcp, queried, refused)]
    assert len(set(ids)) == 5 and set(ids) <= set(access)
    assert access["edge-4f1c2a9e"] | {"duration_ms": 0, "time": ""} == {
        "time": "",
        "level": "info",
        "logger": "reactor.access",
        "message": "POST /auth/sign-in 200",
        "request_id": "edge-4f1c2a9e",
        "method": "POST",
        "path": "/auth/sign-in",
        "status": 200,
        "duration_ms": 0,
        "client": "203.0.113.7",
    }
    assert access[queried.headers["x-request-id"]]["path"] == "/auth/session"
    [warning] = [line for line in lines if line["level"] == "warning" and line["request_id"]]
    assert warning["request_id"] == refused.headers["x-request-id"]
    assert "X-Forwarded-Proto" in warning["message"]
    assert lines[-1]["message"] == "reactor stopped."
    for secret in ("ada-demo", session, cookie, agent, "query-marker-91", "Bearer", "secret="):
        assert secret not in err, secret


@pytest.mark.parametrize(
    "trusted, given, kept",
    [
        (True, "edge-4f1c2a9e", True),
        (False, "edge-4f1c2a9e", False),  # anyone may send one: only a named proxy's counts
        (True, "two words", False),
        (True, "x" * 129, False),
        (True, "", False),
    ],
)
def test_a_request_id_is_a_trusted_proxys_when_well_formed_else_a_new_one(
    tmp_path, trusted, given, kept
):
    server = app_server_over(
        tmp_path / "data", plugins=[], trust_proxies=["127.0.0.1"] if trusted else []
    )
    ids = [
        server.client()
        .get("/auth/session", headers={"x-request-id": given})
        .headers["x-request-id"]
        for _ in range(2)
    ]
    if kept:
        assert ids == [given, given]
    else:
        assert (
            given not in ids
            and ids[0] != ids[1]
            and all(re.fullmatch("[0-9a-f]{32}", i) for i in ids)
        )
