"""docs/DEPLOY.md as written: Debian's nginx terminating TLS for `reactor.test` (a self-signed
certificate) in front of two `reactor serve` processes on one PostgreSQL, round-robin with no
affinity, started with the page's own lines (ports, certificate paths and the data folders
replaced). Through it, a real Chromium loads the page, signs in, writes, streams the chat's answer
from the site's model and links the page for agents; the MCP SDK's client calls the page's tools
in both protocol eras."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import re
import shlex
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import expect

from reactor.server.loopback import free_port
from reactor.testing import ReactorPage
from reactor.testing.standins import StandIn, text

pytestmark = pytest.mark.browser
DEPLOY = Path(__file__).resolve().parent.parent / "docs" / "DEPLOY.md"
NAME = "reactor.test"
PASSWORD = "a-real-password-9"
MODEL_KEY = "sk-site-model-key"


def blocks(language: str) -> list[str]:
    """The fenced code blocks of docs/DEPLOY.md in `language`."""
    found = re.findall(rf"```{language}\n(.*?)```", DEPLOY.read_text(), re.S)
    assert found, f"docs/DEPLOY.md has a {language} block"
    return found


def certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for reactor.test, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAME)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(NAME)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    crt, pem = folder / "reactor.test.crt", folder / "reactor.test.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return crt, pem


def wait_for_port(port: int, process: subprocess.Popen[Any]) -> None:
    for _ in range(200):
        assert process.poll() is None, "it started"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            threading.Event().wait(0.05)
    raise AssertionError(f"nothing listens on {port}")


@dataclass
class Site:
    url: str  # https://reactor.test:<port>, as people reach it
    port: int
    cert: Path
    model: StandIn
    processes: list[subprocess.Popen[str]]
    folder: Path

    def logs(self) -> list[str]:
        """The processes' log lines so far (--log-format json)."""
        return [
            line
            for number in range(len(self.processes))
            for line in (self.folder / f"reactor-{number}.log").read_text().splitlines()
        ]

    def client(self, **options: Any) -> httpx.Client:
        """An HTTP client that reaches reactor.test at the proxy (no DNS for it here)."""
        return httpx.Client(base_url=self.url, transport=ToProxy(self.port, self.cert), **options)


class ToProxy(httpx.HTTPTransport):
    """Requests for reactor.test go to the proxy on loopback, its certificate checked."""

    def __init__(self, port: int, cert: Path) -> None:
        super().__init__(verify=ssl.create_default_context(cafile=cert))
        self.port = port

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.extensions = {**request.extensions, "sni_hostname": NAME}
        request.url = request.url.copy_with(host="127.0.0.1")
        return super().handle_request(request)


class ToProxyAsync(httpx2.AsyncHTTPTransport):
    """The same, for the MCP SDK's client."""

    def __init__(self, cert: Path) -> None:
        super().__init__(verify=ssl.create_default_context(cafile=cert))

    async def handle_async_request(self, request: Any) -> Any:
        request.extensions = {**request.extensions, "sni_hostname": NAME}
        request.url = request.url.copy_with(host="127.0.0.1")
        return await super().handle_async_request(request)


def serve_lines(port_of: dict[str, int], data: Path, database: str, public: str) -> list[list[str]]:
    """The page's `reactor serve` lines, each as the arguments of one process."""
    lines = [
        shlex.split(line, comments=True)
        for block in blocks("sh")
        for line in block.splitlines()
        if line.startswith("reactor serve")
    ]
    assert len(lines) == 2, "two processes"
    made = []
    for number, words in enumerate(lines):
        words = [w.replace("https://reactor.test:8443", public) for w in words]
        port = words[words.index("--port") + 1]
        words[words.index("--port") + 1] = str(port_of[port])
        made.append(
            [sys.executable, "-m", "reactor", *words[1:], "--data", str(data / f"p{number}")]
        )
        assert "--database" not in words, "the database comes from REACTOR_DATABASE_URL"
    return made


@pytest.fixture(scope="module")
def site(tmp_path_factory, postgres_cluster) -> Iterator[Site]:
    nginx = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None
    )
    if nginx is None:
        pytest.skip("nginx is not installed (Debian's `nginx`, which ./dev installs as root)")
    folder = tmp_path_factory.mktemp("site")
    crt, pem = certificate(folder)
    database = postgres_cluster.database()
    model = StandIn("openai", MODEL_KEY)
    port = free_port()
    public = f"https://{NAME}:{port}"
    env = {
        **os.environ,
        "REACTOR_DATABASE_URL": database,
        "REACTOR_MODEL_API_KEY": MODEL_KEY,
    }
    # the page's `reactor passwd` line, its password from a pipe
    passwd = next(
        shlex.split(line, comments=True)
        for line in blocks("sh")[0].splitlines()
        if line.startswith("reactor passwd")
    )
    subprocess.run(
        [sys.executable, "-m", "reactor", *passwd[1:], "--data", str(folder / "admin")],
        input=PASSWORD + "\n",
        text=True,
        env=env,
        check=True,
        capture_output=True,
    )
    ports = {"8001": free_port(), "8002": free_port()}
    model_flags = ["--model-provider", "openai", "--model", "stand-in"]
    model_flags += ["--model-base-url", model.url]
    processes = []
    for command in serve_lines(ports, folder, database, public):
        with (folder / f"reactor-{len(processes)}.log").open("w") as log:
            process = subprocess.Popen(
                [*command, *model_flags], stdout=subprocess.PIPE, stderr=log, text=True, env=env
            )
        line = process.stdout.readline()
        assert line.startswith("reactor is serving"), line
        processes.append(process)
    config = blocks("nginx")[0]
    config = config.replace("listen 8443", f"listen 127.0.0.1:{port}")
    for given, chosen in ports.items():
        config = config.replace(f"127.0.0.1:{given}", f"127.0.0.1:{chosen}")
    config = config.replace("/etc/ssl/reactor.test.crt", str(crt))
    config = config.replace("/etc/ssl/reactor.test.key", str(pem))
    temp = " ".join(
        f"{kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi")
    )
    temp += f" uwsgi_temp_path {folder / 'uwsgi'}; scgi_temp_path {folder / 'scgi'};"
    (folder / "nginx.conf").write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"pid {folder / 'nginx.pid'};\nerror_log {folder / 'error.log'};\n"
        + f"events {{}}\nhttp {{\n  access_log {folder / 'access.log'};\n  {temp}\n"
        + config
        + "\n}\n"
    )
    proxy = subprocess.Popen(
        [nginx, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-g", "daemon off;"]
    )
    wait_for_port(port, proxy)
    yield Site(public, port, crt, model, processes, folder)
    proxy.terminate()
    proxy.wait(10)
    for process in processes:
        process.terminate()
        process.wait(10)
        process.stdout.close()
    model.stop()


@pytest.fixture
def browser_page(browser_type, browser_type_launch_args, site) -> Iterator[Any]:
    """A Chromium that resolves reactor.test to the proxy and takes its self-signed certificate."""
    args = [
        *browser_type_launch_args.get("args", []),
        f"--host-resolver-rules=MAP {NAME} 127.0.0.1",
    ]
    browser = browser_type.launch(**{**browser_type_launch_args, "args": args})
    context = browser.new_context(ignore_https_errors=True)
    yield context.new_page()
    browser.close()


def test_the_page_sign_in_a_write_the_chat_and_the_agents_link_work_through_the_proxy(
    site, browser_page
):
    reactor = ReactorPage(browser_page, site).open()
    assert not reactor.ready["failures"]
    page = reactor.sign_in("ada", PASSWORD).page
    (cookie,) = [c for c in page.context.cookies() if c["domain"] == NAME]
    assert cookie["secure"] and cookie["httpOnly"] and cookie["sameSite"] == "Lax"

    made = reactor.execute("decks.createDeck", {"title": "Through the proxy"})
    with site.client() as http:  # the next requests, to either process: the write is there
        listed = [http.get("/api/decks").json() for _ in range(2)]
    assert all(made["id"] in {d["id"] for d in decks} for decks in listed)

    # The answer streams through the proxy: its first words are on screen while the model holds
    # the rest back.
    site.model.answers.append(text("Streamed through nginx, word by word."))
    site.model.hold.clear()
    chat = page.locator("reactor-chat")
    chat.locator("textarea").fill("hello")
    chat.get_by_role("button", name="Send").click()
    streaming = chat.locator("[data-streaming=true]")
    expect(streaming).to_contain_text("Streamed")
    assert "word by word" not in streaming.inner_text()
    site.model.hold.set()
    expect(chat.locator(".chat-assistant").last).to_have_text(
        "Streamed through nginx, word by word."
    )

    page.get_by_test_id("agents-switch").check()
    page.get_by_test_id("agents-status").get_by_text("Your agents can use").wait_for()
    linked = page.get_by_test_id("agents-status").get_attribute("data-page")
    token = reactor.page.evaluate(
        """async () => (await (await fetch("/api/agent-tokens", {method: "POST",
             headers: {"content-type": "application/json"},
             body: JSON.stringify({name: "through the proxy"})})).json()).token"""
    )
    with site.client() as http:
        assert http.get("/readyz").json()["status"] == "ready"
        metrics = http.get("/metrics", headers={"authorization": f"Bearer {token}"})
        assert metrics.status_code == 401, "/metrics is not for the public behind the proxy"
    for modern in (False, True):  # 2025-11-25, then 2026-07-28; round-robin, no affinity
        with ThreadPoolExecutor(1) as aside:  # Playwright's loop holds this thread
            pages, decks = aside.submit(asyncio.run, agent_calls(site, token, modern)).result(60)
        assert [p["page"] for p in pages["pages"]] == [linked]
        assert "Through the proxy" in [d["title"] for d in decks["decks"]]


async def agent_calls(site: Site, token: str, modern: bool) -> tuple[Any, Any]:
    headers = {"authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(
        headers=headers, transport=ToProxyAsync(site.cert), timeout=30
    ) as http:
        async with streamable_http_client(f"{site.url}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await (session.discover() if modern else session.initialize())
                names = [t.name for t in (await session.list_tools()).tools]
                assert "decks_list_decks" in names
                pages = await session.call_tool("reactor_pages", {})
                decks = await session.call_tool("decks_list_decks", {})
                await session.call_tool("decks_list_decks", {})  # a fourth request, either process
    return pages.structured_content, decks.structured_content


def test_the_processes_log_json_lines_with_request_ids_and_no_secret(site, browser_page):
    reactor = ReactorPage(browser_page, site).open()
    reactor.sign_in("ada", PASSWORD)
    with site.client() as http:
        answered = http.get("/api/decks", headers={"x-request-id": "from-nginx-0123456789"})
    lines = [json.loads(line) for line in site.logs()]  # every line is one JSON object
    assert any(line.get("request_id") == answered.headers["x-request-id"] for line in lines)
    cookie = next(c["value"] for c in browser_page.context.cookies() if c["domain"] == NAME)
    assert not any(PASSWORD in line or cookie in line or MODEL_KEY in line for line in site.logs())
