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
    serve.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                       help="let pages of this origin embed reactor from this server, e.g. http://127.0.0.1:5500 "
                            "(repeat for more; also $REACTOR_ALLOW_ORIGINS, comma-separated)")
    tools = commands.add_parser("tools", help="print the enabled plugins' tools in a provider's format")
    tools.add_argument("--format", required=True, choices=sorted(FORMATS), help="the wire format to print")
    tools.add_argument("--plugin", action="append", default=[], metavar="NAME",
                       help="only this plugin's tools (repeat for more; default: every plugin)")
    args = parser.parse_args(argv)
    if args.command == "tools":
        return print_tools(args.format, args.plugin)
    origins = [*args.allow_origin, *os.environ.get("REACTOR_ALLOW_ORIGINS", "").replace(",", " ").split()]
    try:
        from .server.cors import check_origins

        allowed = check_origins(origins)
    except ValueError as error:
        parser.error(str(error))
    return serve_forever(args.host, args.port, args.data, seed=not args.no_seed, allow_origins=allowed)


FORMATS = {"openai": "openai_chat_tools", "responses": "responses_tools", "anthropic": "anthropic_tools",
           "mcp": "mcp_list_tools"}


def print_tools(format: str, plugins: list[str]) -> int:
    """The same tools a page host offers, rendered once for one provider, as JSON on stdout."""
    import json

    from . import host
    from .platform import PluginPlatform
    from .plugins import Reactor
    from .server.app import default_plugins

    bundles = PluginPlatform(default_plugins()).collect_agent_tools()
    known = sorted({bundle["plugin"] for bundle in bundles})
    unknown = [name for name in plugins if name not in known]
    if unknown:
        print(f"reactor tools: no plugin {unknown[0]!r} provides tools; plugins: {', '.join(known)}.", file=sys.stderr)
        return 2
    spec = host.AgentSpec("cli", plugins=tuple(plugins or known))
    rendered = getattr(host, FORMATS[format])(host.Toolbox(Reactor(), spec, bundles=bundles).tools())
    print(json.dumps(rendered, indent=2, ensure_ascii=False))
    return 0


def serve_forever(host: str, port: int, data: Path, *, seed: bool, allow_origins: tuple[str, ...] = ()) -> int:
    import uvicorn

    from .server.app import create_app

    app = create_app(data, seed_demo=seed, allow_origins=allow_origins)
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
        if allow_origins:
            print(f"pages of {', '.join(allow_origins)} may embed it", flush=True)

    server.startup = startup  # type: ignore[method-assign]
    server.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
