"""MCP authorization with real clients, a real loopback server and a real Chromium signed in as
ada: the Python SDK's OAuth client (mcp.client.auth) on both protocol eras — 2025-11-25 with
Dynamic Client Registration, 2026-07-28 with a client ID metadata document served over https —
and mcp-remote with no header (the bridge Claude Desktop starts), which opens the person's
browser at the authorize URL. In each, the person allows in the consent page, the client lists
and calls a page tool; the person revokes in the Agents panel, the next call is refused with
`invalid_token` and the client asks the person again; Deny ends with the sentence in the
client."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import os
import queue
import ssl
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import mcp.types as types
import pytest
from conftest import open_2025_session
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import ClientSession, StdioServerParameters
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp.shared.exceptions import MCPError
from playwright.sync_api import expect

from reactor.server.agents.oauth.clients import ALLOW_ENV
from test_mcp_page import NPM_MCP, connect_page

pytestmark = pytest.mark.browser
AGENT_NAME = "reactor test agent"
DENIED = f"The person denied {AGENT_NAME} the use of their reactor pages."
BRIDGE = "MCP CLI Proxy"  # the name mcp-remote registers by


class Callback:
    """A client's redirect URI: a loopback HTTP server handing each query it receives to the
    test, as a desktop agent's own callback server does."""

    def __init__(self) -> None:
        self.queries: queue.Queue[dict[str, str]] = queue.Queue()
        heard = self.queries

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                heard.put({k: v[0] for k, v in parse_qs(parts.query).items()})
                self.send_response(200)
                self.send_header("content-type", "text/plain")
                self.end_headers()
                self.wfile.write(b"You may close this page.")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Storage:
    """The SDK client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class OAuthAgent:
    """The Python SDK's MCP client with its OAuth client, on a loop of its own thread (Playwright's
    sync API holds the test's): each authorization URL it would open in the person's browser
    lands in `authorize_urls`; the redirect it waits for comes to `callback`."""

    def __init__(
        self, url: str, callback: Callback, *, modern: bool, metadata_url: str | None = None
    ) -> None:
        self.authorize_urls: queue.Queue[str] = queue.Queue()
        self.callback = callback
        self.provider = OAuthClientProvider(
            f"{url}/mcp",
            OAuthClientMetadata(
                client_name=AGENT_NAME,
                redirect_uris=[callback.url],  # type: ignore[list-item]
                token_endpoint_auth_method="none",
            ),
            Storage(),
            redirect_handler=self.redirect,
            callback_handler=self.called_back,
            client_metadata_url=metadata_url,
        )
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.session: ClientSession | None = None
        self.stop = asyncio.Event()
        self.opening: Future[Any] = Future()
        self.served = asyncio.run_coroutine_threadsafe(self.serve(url, modern), self.loop)

    async def redirect(self, url: str) -> None:
        self.authorize_urls.put(url)

    async def called_back(self) -> AuthorizationCodeResult:
        query = await asyncio.to_thread(self.callback.queries.get, True, 60)
        if "error" in query:
            # What a client built on the SDK shows its person: the server's sentence.
            raise OAuthFlowError(f"{query['error']}: {query.get('error_description', '')}")
        return AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )

    async def serve(self, url: str, modern: bool) -> None:
        try:
            async with httpx2.AsyncClient(auth=self.provider, timeout=60) as http:
                async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write):
                    async with ClientSession(read, write) as session:
                        opened = await (session.discover() if modern else session.initialize())
                        self.session = session
                        self.opening.set_result(opened)
                        await self.stop.wait()
        except BaseException as error:
            if not self.opening.done():
                self.opening.set_exception(error)
            raise

    def call(self, name: str, arguments: dict[str, Any]) -> Future[types.CallToolResult]:
        assert self.session is not None
        return asyncio.run_coroutine_threadsafe(self.session.call_tool(name, arguments), self.loop)

    def list_names(self) -> list[str]:
        assert self.session is not None
        listed = asyncio.run_coroutine_threadsafe(self.session.list_tools(), self.loop)
        return [tool.name for tool in listed.result(30).tools]

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        try:
            self.served.result(10)
        except BaseException:
            pass  # a session ended by a refusal has nothing left to close
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def tls_pair(folder: Path) -> tuple[Path, Path, Path]:
    """A certificate authority and a certificate for 127.0.0.1 signed by it: (ca, cert, key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "reactor test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


class MetadataDocument:
    """A client ID metadata document served over https on loopback, as a client publishes it at
    its client_id."""

    def __init__(self, folder: Path, callback: Callback) -> None:
        ca, cert, key = tls_pair(folder)
        self.ca = ca
        document: dict[str, Any] = {}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps(document).encode()
                self.send_response(200 if self.path == "/oauth/client.json" else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        port = self.server.server_address[1]
        self.url = f"https://127.0.0.1:{port}/oauth/client.json"
        self.allow = f"127.0.0.1:{port}"
        document.update(
            client_id=self.url,
            client_name=AGENT_NAME,
            redirect_uris=[callback.url],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def callback() -> Iterator[Callback]:
    served = Callback()
    yield served
    served.close()


@pytest.fixture
def metadata_document(tmp_path, callback, monkeypatch) -> Iterator[MetadataDocument]:
    """The document, and a server that may read it: the allow-list names its loopback address,
    and the server trusts its certificate authority (set before the server starts)."""
    served = MetadataDocument(tmp_path, callback)
    monkeypatch.setenv(ALLOW_ENV, served.allow)
    monkeypatch.setenv("SSL_CERT_FILE", str(served.ca))
    yield served
    served.close()


def allow_in_the_page(
    consent: Any, url: str, decision: str = "Allow", published: str = "", name: str = AGENT_NAME
) -> None:
    """The person's part: the consent page at the authorize URL, read, then Allow (or Deny).
    `published`: the address of the client's metadata document the page names."""
    consent.goto(url)
    expect(consent.get_by_role("heading", level=1)).to_have_text(
        f"Allow {name} to use your reactor pages?"
    )
    expect(consent.get_by_test_id("consent-user")).to_have_text("ada")
    expect(consent.get_by_test_id("consent-scope")).to_contain_text(
        "Call the tools of your open pages; anything that changes data still asks you."
    )
    if published:
        expect(consent.get_by_test_id("consent-client-id")).to_have_text(published)
    else:
        expect(consent.get_by_test_id("consent-client")).to_contain_text("its own word for itself")
    consent.get_by_role("button", name=decision, exact=True).click()


def revoke_in_the_panel(page: Any, name: str = AGENT_NAME) -> None:
    connection = page.get_by_test_id("agent-connections").get_by_role("listitem")
    expect(connection).to_have_count(1)
    expect(connection).to_contain_text(name)
    expect(connection).not_to_contain_text("last called never")
    connection.get_by_role("button", name="Revoke").click()
    expect(connection).to_contain_text(f"Revoke {name}?")
    connection.get_by_role("button", name="Revoke").click()
    expect(page.get_by_test_id("agent-connections").get_by_role("listitem")).to_have_count(0)


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_the_python_sdks_oauth_client_is_allowed_in_the_page_and_asks_again_once_revoked(
    era, metadata_document, callback, reactor_page
):
    page, live = reactor_page.page, reactor_page.server
    reactor_page.allow_origin(callback.url)
    connect_page(reactor_page)
    modern = era == "2026-07-28"
    # 2026-07-28's clients name a client ID metadata document; 2025-11-25's here register (DCR).
    agent = OAuthAgent(
        live.url, callback, modern=modern, metadata_url=metadata_document.url if modern else None
    )
    consent = page.context.new_page()  # closed with its context
    try:
        url = agent.authorize_urls.get(timeout=60)
        asked = parse_qs(urlsplit(url).query)
        assert asked["resource"] == [f"{live.url}/mcp"] and asked["code_challenge_method"] == [
            "S256"
        ]
        if modern:
            assert asked["client_id"] == [metadata_document.url]
        published = metadata_document.url if modern else ""
        allow_in_the_page(consent, url, published=published)
        opened = agent.opening.result(60)
        assert opened is not None
        assert {"decks_list_decks", "reactor_pages", "reactor_call"} <= set(agent.list_names())
        listed = agent.call("decks_list_decks", {}).result(60)
        assert listed.is_error is False, listed.content
        assert "reactor-in-5-minutes" in [d["id"] for d in listed.structured_content["decks"]]
        # The person sees the agent by the name they allowed, and ends it.
        expect(page.get_by_test_id("agents-last-call")).to_contain_text(f"{AGENT_NAME} asked for")
        revoke_in_the_panel(page)
        # The next call is refused (invalid_token): the client asks the person again...
        again = agent.call("decks_list_decks", {})
        url = agent.authorize_urls.get(timeout=60)
        # ...who denies it this time: the client's error carries the server's sentence.
        allow_in_the_page(consent, url, "Deny", published)
        with pytest.raises(BaseException) as refused:
            again.result(60)  # the call ends ("Connection closed", or cancelled with its session)
        assert not isinstance(refused.value, TimeoutError), "the call ended"
        with pytest.raises(BaseException) as ended:
            agent.served.result(60)
        assert f"access_denied: {DENIED}" in _messages(ended.value)
    finally:
        agent.close()


def _messages(error: BaseException) -> list[str]:
    """The messages of an error and of those it groups or was caused by."""
    found = [str(error)]
    for inner in getattr(error, "exceptions", ()):
        found += _messages(inner)
    if error.__cause__ is not None:
        found += _messages(error.__cause__)
    return found


def browser_script(folder: Path) -> tuple[Path, Path]:
    """A BROWSER for xdg-open (which mcp-remote's `open` runs): it writes each URL it is asked to
    open to a file the test reads, one a line."""
    opened = folder / "opened.txt"
    script = folder / "browser.sh"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{opened}"\n')
    script.chmod(0o755)
    return script, opened


def opened_urls(opened: Path, count: int, seconds: float = 60) -> list[str]:
    """The first `count` URLs the browser was asked to open, waiting for them."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        lines = opened.read_text().splitlines() if opened.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.05)
    raise AssertionError(
        f"mcp-remote opened {opened.read_text() if opened.exists() else 'nothing'}"
    )


def test_mcp_remote_without_a_header_signs_in_in_the_page_and_asks_again_once_revoked(
    reactor_page, tmp_path
):
    page, live = reactor_page.page, reactor_page.server
    assert (NPM_MCP / "node_modules" / ".bin" / "mcp-remote").exists(), (
        "run ./dev test once: it installs mcp-remote"
    )
    connect_page(reactor_page)
    # The line the panel offers Claude Desktop: the address alone, no header.
    entry = json.loads(page.get_by_test_id("agent-connect-desktop-json").inner_text())
    server = entry["mcpServers"]["reactor"]
    assert server == {"command": "npx", "args": ["-y", "mcp-remote", f"{live.url}/mcp"]}
    script, opened = browser_script(tmp_path)
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "MCP_REMOTE_CONFIG_DIR": str(tmp_path / "mcp-remote"),
        "BROWSER": str(script),
    }
    parameters = StdioServerParameters(
        command=server["command"], args=server["args"], env=environment, cwd=NPM_MCP
    )
    log = tmp_path / "mcp-remote.log"
    steps: queue.Queue[Any] = queue.Queue()
    done = threading.Event()

    async def run() -> None:
        with open(log, "w") as errors:
            async with stdio_client(parameters, errlog=errors) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    steps.put(await session.list_tools())
                    steps.put(await session.call_tool("decks_list_decks", {}))
                    await asyncio.to_thread(done.wait, 120)
                    try:
                        steps.put(await session.call_tool("decks_list_decks", {}))
                    except Exception as error:  # noqa: BLE001 - what the client was told
                        steps.put(error)

    runner = threading.Thread(target=lambda: asyncio.run(run()), daemon=True)
    runner.start()
    consent = page.context.new_page()  # closed with its context
    try:
        [url] = opened_urls(opened, 1)
        asked = parse_qs(urlsplit(url).query)
        reactor_page.allow_origin(asked["redirect_uri"][0])
        assert asked["code_challenge_method"] == ["S256"]
        allow_in_the_page(consent, url, name=BRIDGE)
        listed = steps.get(timeout=60)
        assert {"decks_list_decks", "reactor_pages"} <= {t.name for t in listed.tools}
        called = steps.get(timeout=60)
        assert called.is_error is False, called.content
        assert "reactor-in-5-minutes" in [d["id"] for d in called.structured_content["decks"]]
        revoke_in_the_panel(page, BRIDGE)
        done.set()
        # Refused with invalid_token, mcp-remote authorizes again: the browser opens once more.
        second = opened_urls(opened, 2)[1]
        allow_in_the_page(consent, second, "Deny", name=BRIDGE)
        outcome = steps.get(timeout=90)
        said = log.read_text()
        denied = f"The person denied {BRIDGE} the use of their reactor pages."
        assert f"Authorization failed: access_denied - {denied}" in said, said[-3000:]
        # the client that asked (Claude Desktop, here the SDK over stdio) is told the sentence
        assert isinstance(outcome, MCPError), outcome
        assert str(outcome) == f"mcp-remote: Authorization failed: access_denied - {denied}"
    finally:
        done.set()
        runner.join(30)


def test_the_agents_panel_offers_the_address_alone_to_agents_that_sign_in(reactor_page):
    page, live = reactor_page.page, reactor_page.server
    reactor_page.sign_in("ada")
    mcp_url = f"{live.url}/mcp"
    shown = lambda testid: page.get_by_test_id(testid).inner_text()  # noqa: E731
    assert (
        shown("agent-connect-claude-code") == f"claude mcp add --transport http reactor {mcp_url}"
    )
    assert json.loads(shown("agent-connect-cursor-json")) == {
        "mcpServers": {"reactor": {"url": mcp_url}}
    }
    assert json.loads(shown("agent-connect-vscode-json")) == {
        "servers": {"reactor": {"type": "http", "url": mcp_url}}
    }
    assert "Bearer" not in page.get_by_test_id("agent-connect").inner_text()
    # the address comes before any token: the tokens are for agents that cannot sign in
    order = page.evaluate("[...document.querySelectorAll('#agents h3')].map((h) => h.textContent)")
    assert order == [
        "Connect an agent",
        "Agents you allowed",
        "Tokens, for agents that cannot sign in",
    ]


def test_mcp_remote_with_a_revoked_token_in_its_header_says_what_to_do_and_opens_no_browser(
    reactor_server, tmp_path
):
    """Claude Desktop's header line (the panel's, for a token) after the token was revoked:
    mcp-remote tries to sign in, which its header would defeat; it stops with the sentence."""
    live = reactor_server
    session = httpx2.post(
        f"{live.url}/auth/sign-in", json={"username": "ada", "password": "ada-demo"}
    ).json()["token"]
    ada = {"authorization": f"Bearer {session}"}
    made = httpx2.post(f"{live.url}/api/agent-tokens", json={"name": "Desktop"}, headers=ada).json()
    httpx2.delete(f"{live.url}/api/agent-tokens/{made['id']}", headers=ada)
    script, opened = browser_script(tmp_path)
    parameters = StdioServerParameters(
        command="npx",
        args=["-y", "mcp-remote", f"{live.url}/mcp", "--header", "Authorization:${AUTH_HEADER}"],
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "MCP_REMOTE_CONFIG_DIR": str(tmp_path / "mcp-remote"),
            "BROWSER": str(script),
            "AUTH_HEADER": f"Bearer {made['token']}",
        },
        cwd=NPM_MCP,
    )
    log = tmp_path / "mcp-remote.log"

    async def run() -> None:
        with open(log, "w") as errors:
            async with stdio_client(parameters, errlog=errors) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()

    with ThreadPoolExecutor(1) as thread, pytest.raises(BaseException) as ended:
        # a thread of its own: Playwright's sync API may hold this one's event loop
        thread.submit(asyncio.run, run()).result(60)
    assert "Connection closed" in _messages(ended.value), "mcp-remote stopped; nothing hangs"
    said = log.read_text()
    assert (
        "Dynamic Client Registration rejected (HTTP 400): "
        '{"error":"invalid_request","error_description":"This agent sends a reactor token in its '
        "Authorization header, and /mcp refused it (it was revoked, or is unknown). Make a new "
        "token in the page's Agents panel, or remove the header from the agent's configuration "
        'to sign in instead."}'
    ) in said, said[-3000:]
    assert not opened.exists(), "the person was not sent to a consent page in vain"


def test_revoking_an_allowed_agent_in_the_panel_ends_its_stream_and_withdraws_its_question(
    reactor_page,
):
    from test_mcp_limits import Ended, listening
    from test_oauth import Agent as Client
    from test_oauth import allowed

    page, live = reactor_page.page, reactor_page.server
    connect_page(reactor_page)
    headers = open_2025_session(live.url, allowed(live, Client(live.url))["access_token"])
    delete = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "decks_delete_deck", "arguments": {"id": "onboarding"}},
    }
    stream = listening(live.url, headers)
    waiting = Ended(lambda: httpx.post(f"{live.url}/mcp", json=delete, headers=headers, timeout=60))
    question = page.get_by_test_id("approval")
    question.wait_for()
    revoke_in_the_panel(page, "Test Agent")
    revoked = time.monotonic()
    assert stream.done.wait(5) and waiting.done.wait(5)
    assert max(stream.at, waiting.at) - revoked < 2, "ended at once, not at the agent's next call"
    assert waiting.answer is not None and waiting.answer.status_code in (401, 404)
    said = waiting.answer.json()["error"]["message"]  # JSON-RPC's error, as MCP's clients read it
    assert "unknown to reactor or was revoked" in said or "session ended" in said
    expect(question.get_by_test_id("approval-choice")).to_have_text(
        "No longer asked; it did not run."
    )
    assert httpx.get(f"{live.url}/api/decks/onboarding").status_code == 200
    assert httpx.post(f"{live.url}/mcp", json=delete, headers=headers).status_code == 401
