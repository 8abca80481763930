"""Serve the embedding example: a to-do page on its own origin that embeds reactor from a reactor
server.

    .venv/bin/reactor serve --port 8001 --data .data-embed --allow-origin http://127.0.0.1:5500
    .venv/bin/python examples/embed/serve.py --port 5500 --reactor http://127.0.0.1:8001

Only the standard library: the page is static but for the reactor server's address, written
into index.html where it says __REACTOR__.
"""

from __future__ import annotations

import argparse
import functools
import http.server
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent


class ExampleHandler(http.server.SimpleHTTPRequestHandler):
    """Static files of this folder; index.html with the reactor server's address filled in."""

    def __init__(self, *args, reactor: str, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self.reactor = reactor
        super().__init__(*args, directory=str(HERE), **kwargs)

    def do_GET(self) -> None:
        if self.path.split("?")[0] not in ("/", "/index.html"):
            return super().do_GET()
        body = (
            (HERE / "index.html")
            .read_text(encoding="utf-8")
            .replace("__REACTOR__", self.reactor)
            .encode()
        )
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # type: ignore[no-untyped-def]
        pass  # quiet: the browser's console is the place to look


def make_server(
    port: int, reactor: str, host: str = "127.0.0.1"
) -> http.server.ThreadingHTTPServer:
    """The example's server, not yet serving; `server_address` holds the port when `port` is 0."""
    handler = functools.partial(ExampleHandler, reactor=reactor.rstrip("/"))
    return http.server.ThreadingHTTPServer((host, port), handler)


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Serve the reactor embedding example (a to-do page)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5500, help="0 picks a free one (default 5500)")
    parser.add_argument(
        "--reactor", default="http://127.0.0.1:8001", help="the reactor server's address"
    )
    args = parser.parse_args()
    server = make_server(args.port, args.reactor, args.host)
    host, port = server.server_address[:2]
    print(
        f"the to-do page is at http://{host}:{port}/ (reactor from {args.reactor}; start it with "
        f"`.venv/bin/reactor serve --port {urlsplit(args.reactor).port} --data .data-embed "
        f"--allow-origin http://{host}:{port}`)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
