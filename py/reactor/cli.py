"""The `reactor` command: `reactor serve` runs the Python tier with the page."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="reactor", description="Serve reactor: the page, its runtime and plugins.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="start the server with the page and the SQLite data")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port; 0 picks a free one (default 8000)")
    serve.add_argument("--data", type=Path, default=Path(os.environ.get("REACTOR_DATA", ".data")),
                       help="folder of the SQLite file (default .data, or $REACTOR_DATA)")
    serve.add_argument("--no-seed", action="store_true", help="do not add the demo decks to an empty database")
    args = parser.parse_args(argv)
    return serve_forever(args.host, args.port, args.data, seed=not args.no_seed)


def serve_forever(host: str, port: int, data: Path, *, seed: bool) -> int:
    import uvicorn

    from .server.app import create_app

    app = create_app(data, seed_demo=seed)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    server = uvicorn.Server(config)

    # Print the address actually bound, so `--port 0` is usable.
    original_startup = server.startup

    async def startup(sockets=None):  # type: ignore[no-untyped-def]
        await original_startup(sockets)
        for listener in server.servers:
            for sock in listener.sockets:
                address = sock.getsockname()
                print(f"reactor is serving http://{address[0]}:{address[1]}/ (data in {data.resolve()})", flush=True)

    server.startup = startup  # type: ignore[method-assign]
    server.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
