"""The bench's servers: the product app untouched, wrapped with the bench's own pages.

- `product`: `create_app` with the installed plugins, exactly what `reactor serve` runs, plus
  /bench/bare.html, worker.html, snapshot.html, pyscript.html and host.html (the demo page's
  markup with snapshot.html's worker), the baselines, on the same self-hosted files.
- `lab`: the same app with the bench page plugins (`reactor_bench`): the probe (a no-op tool,
  measurements) and N synthetic plugins. The product ships only `reactor` and
  `reactor_plugins` into the page, so /app/boot.json is wrapped to add the bench's own Python
  bundle to the page's `python.bundles`; /bench/lab.html imports @lumino/commands from
  bench/vendor/.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from reactor.errors import ApiError
from reactor.plugin_spec import PluginSpec, discover_plugins
from reactor.server.api import error_answer
from reactor.server.app import create_app, runtime_manifest
from reactor.server.loopback import LoopbackServer
from reactor.server.runtime.assets import (
    ENCODINGS,
    IMMUTABLE,
    REVALIDATE,
    SourceArchive,
    accepted_codings,
    compressed_twins,
    serve_file,
)
from reactor.server.runtime.files import VENDOR
from reactor.server.runtime.snapshot import memory_of, pyodide_base

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
# The PyScript baseline page (pages/pyscript.html) loads none of PyScript's optional plugins.
PYSCRIPT_PLUGINS_OFF = [
    "!codemirror",
    "!py-editor",
    "!py-game",
    "!py-terminal",
    "!deprecations-manager",
    "!donkey",
]
PAGES = BENCH / "pages"
LUMINO = BENCH / "vendor" / "node_modules"


def bench_app(data: Path, *, lab: bool = False, synthetic: int = 0) -> Starlette:
    """The product app under `/`, with the bench pages (and, for `lab`, the bench plugins: the
    probe, `reactor_bench:PROBE_PLUGIN`, and synthetic plugins of 10 tools,
    `reactor_bench:SYNTH_NNNN`)."""
    plugins = discover_plugins()
    if lab:
        plugins += [
            PluginSpec(name="bench", page="reactor_bench:PROBE_PLUGIN"),
            *(
                PluginSpec(name=f"synth_{i:04d}", page=f"reactor_bench:SYNTH_{i:04d}")
                for i in range(synthetic)
            ),
        ]
    product = create_app(data, plugins=plugins, seed_demo=True)
    runtime = runtime_manifest()
    # the very memory the product page restores, as the one image stock Pyodide reads
    stamp, snapshot = runtime.stamp, product.state.snapshot
    memory = _memory_image(runtime.made / "snapshot" / Path(snapshot).name) if snapshot else {}
    memory_url = f"/bench/memory/{Path(snapshot).name}"
    archive = SourceArchive({"reactor_bench": BENCH / "reactor_bench"}, set())

    async def page(request: Request) -> Response:
        name = request.path_params["name"]
        path = PAGES / f"{name}.html"
        if name == "host" and not lab:
            text = host_page()
        # launch: bench/unattached.py
        elif not path.is_file() or ((name == "lab") != lab and name != "launch"):
            return JSONResponse({"error": f"No bench page {name!r} on this server."}, 404)
        else:
            text = path.read_text()
        text = text.replace("{{stamp}}", stamp).replace("{{memory}}", memory_url)
        text = text.replace("{{pyscript_plugins}}", json.dumps({"plugins": PYSCRIPT_PLUGINS_OFF}))
        text = text.replace("{{pyscript_plugins_list}}", json.dumps(PYSCRIPT_PLUGINS_OFF))
        return HTMLResponse(text, headers={"cache-control": REVALIDATE})

    async def script(request: Request) -> Response:
        return serve_file(request, PAGES, request.path_params["name"] + ".js", cache=REVALIDATE)

    async def lumino(request: Request) -> Response:
        return serve_file(request, LUMINO, request.path_params["path"], cache=REVALIDATE)

    async def bench_archive(request: Request) -> Response:
        return archive.response(request)

    async def boot_with_bench(request: Request) -> Response:
        # The product's own answer, plus the bench package installed into site-packages.
        config = json.loads((await _product_boot(product)(request)).body)
        config["python"]["bundles"].append(archive.url)
        return JSONResponse(config, headers={"cache-control": "no-store"})

    async def memory_image(request: Request) -> Response:
        accepted = accepted_codings(request.headers.get("accept-encoding", ""))
        coding = next((c for _, c in ENCODINGS if c in accepted), "identity")
        headers = {"cache-control": IMMUTABLE, "vary": "Accept-Encoding"}
        if coding != "identity":
            headers["content-encoding"] = coding
        return Response(memory[coding], media_type="application/octet-stream", headers=headers)

    routes: list[BaseRoute] = [
        Route(memory_url, memory_image),
        Route("/bench/{name}.html", page),
        Route("/bench/{name}.js", script),
        Route("/bench/vendor/{path:path}", lumino),
    ]
    if lab:
        archive.url = f"/bench/python-{archive.digest}.bundle"
        routes += [Route(archive.url, bench_archive), Route("/app/boot.json", boot_with_bench)]

    async def refused(request: Request, error: Exception) -> Response:
        return error_answer(error)  # serve_file's 404

    return Starlette(
        routes=[*routes, Mount("/", app=product)], exception_handlers={ApiError: refused}
    )


@functools.lru_cache(maxsize=1)
def _memory_image(snapshot: Path) -> dict[str, bytes]:
    """The memory the product's snapshot file holds, whole, by content coding (compressed as the
    server compresses the file)."""
    memory = memory_of(snapshot.read_bytes(), pyodide_base(VENDOR / "pyodide"))
    twins = compressed_twins(memory)
    return {"identity": memory, **{coding: twins[suffix] for suffix, coding in ENCODINGS}}


def host_page() -> str:
    """Baseline (e): the demo page's own markup and styles (index.html) without reactor's scripts,
    and the bare worker of snapshot.html restoring the same snapshot: what the host page and
    Pyodide cost the main thread before reactor adds anything. Its placeholders are filled in as
    every bench page's are."""
    worker = (PAGES / "snapshot.html").read_text()
    worker = worker[
        worker.index('<script type="module">') : worker.index("</script>") + len("</script>")
    ]
    lines = (ROOT / "index.html").read_text().splitlines()
    kept = [line for line in lines if "<script" not in line and "reactor:early-boot" not in line]
    return "\n".join(kept).replace("</head>", f"{worker}\n</head>")


def _product_boot(product: Starlette) -> Any:
    return next(r.endpoint for r in product.routes if getattr(r, "path", "") == "/app/boot.json")


class WireCounter:
    """ASGI wrapper that counts what the server sends per request (status, headers and body bytes):
    the pages' own requests and their workers' alike, which CDP's page session does not see."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.sent: list[dict[str, Any]] = []
        self.encodings: str | None = (
            None  # when set, the Accept-Encoding every request is answered as
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.encodings is not None:
            headers = [(k, v) for k, v in scope["headers"] if k != b"accept-encoding"]
            scope = {**scope, "headers": [*headers, (b"accept-encoding", self.encodings.encode())]}
        entry = {"path": scope["path"], "status": 0, "bytes": 0}
        self.sent.append(entry)

        async def counted(message: Any) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
                entry["bytes"] += 17 + sum(
                    len(k) + len(v) + 4 for k, v in message.get("headers", [])
                )
            elif message["type"] == "http.response.body":
                entry["bytes"] += len(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, counted)

    def take(self) -> list[dict[str, Any]]:
        """What was sent since the last take."""
        sent, self.sent = self.sent, []
        return sent


class WithMarks:
    """ASGI wrapper that writes `script` at the top of the <head> of a page asked for with
    `bench-marks` in its query, and lets it run under the page's Content Security Policy by its
    hash: what Playwright's init script does, for a browser no debugger is attached to
    (bench/unattached.py). Every other request passes untouched."""

    def __init__(self, app: Any, script: str, query: str) -> None:
        self.app, self.script, self.query = app, script.encode(), query
        digest = base64.b64encode(hashlib.sha256(self.script).digest()).decode()
        self.source = f"'sha256-{digest}'".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.query not in scope.get("query_string", b"").decode(
            "latin-1"
        ):
            await self.app(scope, receive, send)
            return
        scope = {
            **scope,
            "headers": [(k, v) for k, v in scope["headers"] if k != b"accept-encoding"],
        }
        start: dict[str, Any] = {}
        body: list[bytes] = []

        async def marked(message: Any) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            page = b"".join(body)
            if start["status"] == 200 and page.lstrip().lower().startswith(b"<!doctype html"):
                page = page.replace(b"<head>", b"<head><script>" + self.script + b"</script>", 1)
            headers = [
                (k, self._allow(k, v)) for k, v in start["headers"] if k != b"content-length"
            ]
            await send(
                {**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]}
            )
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, marked)

    def _allow(self, name: bytes, value: bytes) -> bytes:
        return (
            value.replace(b"script-src ", b"script-src " + self.source + b" ", 1)
            if name == b"content-security-policy"
            else value
        )


def serving(app: Any) -> LoopbackServer:
    """Run `app` in a thread on a free loopback port; `with serving(app) as url:`."""
    return LoopbackServer(app)
