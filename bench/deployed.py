"""docs/DEPLOY.md's site, built as the page says: Debian's nginx terminating TLS for
`reactor.test` (a self-signed certificate) in front of two `reactor serve` processes on one
PostgreSQL, round-robin with no affinity, started with the page's own lines (its ports,
certificate paths and data folders replaced). tests/test_deploy.py drives it with Chromium and
the MCP SDK's client; bench/proxy.py loads it. Both build it here, so they build the same site.

    with deployed(folder, "postgresql://…", password="…") as site:
        with site.client() as http:
            http.get("/readyz")
"""

from __future__ import annotations

import datetime
import os
import re
import shlex
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from reactor.server.loopback import free_port

DEPLOY = Path(__file__).resolve().parent.parent / "docs" / "DEPLOY.md"
NAME = "reactor.test"
NO_NGINX = "nginx is not installed (Debian's `nginx`, which ./dev installs as root)"


class NotDeployable(Exception):
    """What this machine lacks to build the site (nginx), as a sentence."""


def blocks(language: str) -> list[str]:
    """The fenced code blocks of docs/DEPLOY.md in `language`."""
    found = re.findall(rf"```{language}\n(.*?)```", DEPLOY.read_text(), re.S)
    if not found:
        raise ValueError(f"docs/DEPLOY.md has no {language} block")
    return found


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None
    )


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


def wait_for_port(port: int, process: subprocess.Popen[Any], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"{process.args!r:.80} ended ({process.returncode}) before it listened"
            )
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            threading.Event().wait(0.05)
    raise RuntimeError(f"nothing listens on {port} after {seconds:g} s")


@dataclass
class Site:
    url: str  # https://reactor.test:<port>, as people reach it
    port: int
    cert: Path
    processes: list[subprocess.Popen[str]]
    folder: Path
    proxy: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def logs(self) -> list[str]:
        """The processes' complete log lines so far (--log-format json)."""
        texts = [(self.folder / f"reactor-{n}.log").read_text() for n in range(len(self.processes))]
        return [line for text in texts for line in text[: text.rfind("\n") + 1].splitlines()]

    def client(self, **options: Any) -> httpx.Client:
        """An HTTP client that reaches reactor.test at the proxy (no DNS for it here)."""
        return httpx.Client(base_url=self.url, transport=ToProxy(self.port, self.cert), **options)

    def tls(self) -> ssl.SSLContext:
        """A TLS context that trusts the site's certificate (for clients of other libraries)."""
        return ssl.create_default_context(cafile=self.cert)


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


def serve_lines(
    port_of: Mapping[str, int], data: Path, public: str, python: Sequence[str] = ()
) -> list[list[str]]:
    """The page's `reactor serve` lines, each as the arguments of one process (`python`: the
    command that stands for `reactor`, by default `sys.executable -m reactor`)."""
    lines = [
        shlex.split(line, comments=True)
        for block in blocks("sh")
        for line in block.splitlines()
        if line.startswith("reactor serve")
    ]
    if len(lines) != 2:
        raise ValueError(f"docs/DEPLOY.md starts {len(lines)} processes, not two")
    made = []
    for number, words in enumerate(lines):
        if "--database" in words:
            raise ValueError("docs/DEPLOY.md names the database outside REACTOR_DATABASE_URL")
        words = [w.replace("https://reactor.test:8443", public) for w in words]
        port = words[words.index("--port") + 1]
        words[words.index("--port") + 1] = str(port_of[port])
        command = list(python) or [sys.executable, "-m", "reactor"]
        made.append([*command, *words[1:], "--data", str(data / f"p{number}")])
    return made


def nginx_config(port: int, ports: Mapping[str, int], folder: Path, crt: Path, pem: Path) -> str:
    """The page's nginx block in a whole configuration of its own (files under `folder`)."""
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
    return (
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"pid {folder / 'nginx.pid'};\nerror_log {folder / 'error.log'};\n"
        + f"events {{}}\nhttp {{\n  access_log {folder / 'access.log'};\n  {temp}\n"
        + config
        + "\n}\n"
    )


@contextmanager
def deployed(
    folder: Path,
    database: str,
    *,
    password: str,
    flags: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    python: Sequence[str] = (),
) -> Iterator[Site]:
    """The site over `database` (a `postgresql://` URL), its files in `folder`: the page's
    `reactor passwd` line run with `password`, its two `reactor serve` lines (with `flags`
    added, in `env` added to this one's), nginx with its configuration. Stopped on leaving.
    NotDeployable when nginx is not installed."""
    nginx = nginx_binary()
    if nginx is None:
        raise NotDeployable(NO_NGINX)
    crt, pem = certificate(folder)
    port = free_port()
    public = f"https://{NAME}:{port}"
    environment = {**os.environ, **(env or {}), "REACTOR_DATABASE_URL": database}
    # the page's `reactor passwd` line, its password from a pipe
    passwd = next(
        shlex.split(line, comments=True)
        for line in blocks("sh")[0].splitlines()
        if line.startswith("reactor passwd")
    )
    subprocess.run(
        [*(list(python) or [sys.executable, "-m", "reactor"]), *passwd[1:]]
        + ["--data", str(folder / "admin")],
        input=password + "\n",
        text=True,
        env=environment,
        check=True,
        capture_output=True,
    )
    ports = {"8001": free_port(), "8002": free_port()}
    with ExitStack() as stack:
        processes: list[subprocess.Popen[str]] = []
        for command in serve_lines(ports, folder, public, python):
            with (folder / f"reactor-{len(processes)}.log").open("w") as log:
                process = subprocess.Popen(
                    [*command, *flags],
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                    env=environment,
                )
            stack.callback(_stop, process)
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line.startswith("reactor is serving"):
                raise RuntimeError(f"reactor serve did not start: {line!r}; see {log.name}")
            processes.append(process)
        (folder / "nginx.conf").write_text(nginx_config(port, ports, folder, crt, pem))
        proxy = subprocess.Popen(
            [nginx, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-g", "daemon off;"]
        )
        stack.callback(_stop, proxy)
        wait_for_port(port, proxy)
        yield Site(public, port, crt, processes, folder, proxy)


def _stop(process: subprocess.Popen[Any]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    if process.stdout:
        process.stdout.close()
