"""Serve the PyScript example: a page whose PyScript Python defines a reactor plugin.

    .venv/bin/python examples/pyscript/serve.py [--port 8002 | --port 0] [--data .data-pyscript]

The page is served by a reactor server of its own (create_app, with one more route), so PyScript,
Pyodide and reactor all come from the page's own origin: it loads nothing from any other.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def make_app(data: Path) -> Any:
    """The reactor app, plus the example page at /pyscript/ (the runtime's version stamp filled
    in)."""
    from starlette.requests import Request
    from starlette.responses import HTMLResponse

    from reactor.server.app import create_app, runtime_manifest

    app = create_app(data)
    page = (
        (HERE / "index.html")
        .read_text(encoding="utf-8")
        .replace("__STAMP__", runtime_manifest().stamp)
    )

    async def pyscript_page(request: Request) -> HTMLResponse:
        return HTMLResponse(page, headers={"cache-control": "no-cache"})

    app.add_route("/pyscript/", pyscript_page, methods=["GET"])
    return app


def main() -> None:
    import socket

    import uvicorn

    parser = argparse.ArgumentParser(description="Serve the PyScript example page with reactor.")
    parser.add_argument("--port", type=int, default=8002, help="0 picks a free one (default 8002)")
    parser.add_argument("--data", type=Path, default=Path(".data-pyscript"))
    args = parser.parse_args()
    # whose X-Forwarded-* count is reactor's to say (--trust-proxy), not uvicorn's
    config = uvicorn.Config(make_app(args.data), log_level="warning", proxy_headers=False)
    # Bound here and handed to uvicorn, so the address printed is the one bound (`--port 0`).
    listener = socket.create_server(("127.0.0.1", args.port))
    port = listener.getsockname()[1]
    print(f"the PyScript example is at http://127.0.0.1:{port}/pyscript/", flush=True)
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
