"""The `reactor` command: `reactor serve` runs the Python tier with the page."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return run(parser, args)


def build_parser() -> argparse.ArgumentParser:
    """`reactor`'s commands and their options (the docs' command lines are checked against it)."""
    parser = argparse.ArgumentParser(
        prog="reactor", description="Serve reactor: the page, its runtime and plugins."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="start the server with the page and the SQLite data")
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    serve.add_argument(
        "--port", type=int, default=8000, help="port; 0 picks a free one (default 8000)"
    )
    _storage_arguments(serve)
    serve.add_argument(
        "--no-seed", action="store_true", help="do not add the demo data to an empty database"
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages of this origin embed reactor from this server, e.g. http://127.0.0.1:5500 "
        "(repeat for more; also $REACTOR_ALLOW_ORIGINS, comma-separated)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name the server answers to besides loopback and --host, e.g. "
        "reactor.example.org (repeat for more; also $REACTOR_ALLOW_HOSTS)",
    )
    serve.add_argument(
        "--trust-proxy",
        action="extend",
        nargs="+",
        default=[],
        metavar="ADDR",
        help="the proxies (IP addresses or networks, e.g. 127.0.0.1 10.0.0.0/8) whose "
        "X-Forwarded-For and X-Forwarded-Proto count; default none (also $REACTOR_TRUST_PROXIES)",
    )
    serve.add_argument(
        "--public-url",
        default=os.environ.get("REACTOR_PUBLIC_URL", ""),
        metavar="URL",
        help="the address people see when a proxy is in front, e.g. https://reactor.example.org "
        "(also $REACTOR_PUBLIC_URL)",
    )
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=os.environ.get("REACTOR_LOG_FORMAT", "text"),
        help="log lines as text (default) or one JSON object each, with the request's id "
        "(also $REACTOR_LOG_FORMAT)",
    )
    serve.add_argument(
        "--threads-keep-days",
        type=_days,
        default=os.environ.get("REACTOR_THREADS_KEEP_DAYS") or None,
        metavar="N",
        help="delete the chat conversations nobody added to for N days (default: keep them; "
        "also $REACTOR_THREADS_KEEP_DAYS)",
    )
    _assistant_arguments(serve)
    serve.add_argument(
        "--metrics-token",
        type=_metrics_token,
        default=os.environ.get("REACTOR_METRICS_TOKEN", ""),
        metavar="TOKEN",
        help="the bearer token that lets Prometheus read /metrics from elsewhere than this "
        "machine (prefer $REACTOR_METRICS_TOKEN: a command line is visible to everyone on it)",
    )
    password = commands.add_parser(
        "passwd", help="set a user's password (creating the user if needed)"
    )
    password.add_argument("username")
    _storage_arguments(password)
    password.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="GROUP",
        help="for a new user: a group to put them in (operators, staff...; repeat for more)",
    )
    tools = commands.add_parser(
        "tools", help="print the enabled plugins' tools in a provider's format"
    )
    tools.add_argument(
        "--format", required=True, choices=sorted(FORMATS), help="the wire format to print"
    )
    tools.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="NAME",
        help="only this plugin's tools (repeat for more; default: every plugin)",
    )
    new = commands.add_parser("new", help="start something new from a scaffold")
    scaffolds = new.add_subparsers(dest="scaffold", required=True)
    plugin = scaffolds.add_parser("plugin", help="an installable plugin package, with tests")
    plugin.add_argument(
        "name", help="the plugin's name: lowercase letters, digits and hyphens (e.g. team-notes)"
    )
    plugin.add_argument(
        "--server", action="store_true", help="with a server half (a table and an API)"
    )
    plugin.add_argument(
        "--dir", type=Path, default=Path("."), help="the folder to create it in (default: here)"
    )
    return parser


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "new":
        return new_plugin(args.name, args.dir, server=args.server)
    if args.command == "tools":
        return print_tools(args.format, args.plugin)
    if args.command == "passwd":
        return set_password(args.data, args.username, args.group, args.database)
    origins = [
        *args.allow_origin,
        *os.environ.get("REACTOR_ALLOW_ORIGINS", "").replace(",", " ").split(),
    ]
    hosts = [*args.allow_host, *os.environ.get("REACTOR_ALLOW_HOSTS", "").replace(",", " ").split()]
    proxies = [
        *args.trust_proxy,
        *os.environ.get("REACTOR_TRUST_PROXIES", "").replace(",", " ").split(),
    ]
    if args.database and not args.database.startswith(("postgresql://", "postgres://")):
        parser.error(
            f"--database takes a postgresql:// URL, not {args.database[:40]!r}; the SQLite "
            "file is --data."
        )
    if args.log_format not in ("text", "json"):
        parser.error(
            f"--log-format (or $REACTOR_LOG_FORMAT) is text or json, not {args.log_format[:20]!r}."
        )
    assistant, problem = assistant_config(args)
    if problem:
        print(f"reactor serve: {problem}", file=sys.stderr)
        return 2
    try:
        from .server.auth.cors import check_origins
        from .server.auth.protection import LOOPBACK_HOSTS, check_hosts
        from .server.proxies import check_proxies, check_public_url

        allowed = check_origins(origins)
        served = check_hosts(
            [*LOOPBACK_HOSTS, *([] if _is_wildcard(args.host) else [args.host]), *hosts]
        )
        trusted = tuple(
            str(n.network_address if n.num_addresses == 1 else n) for n in check_proxies(proxies)
        )
        public = check_public_url(args.public_url) if args.public_url else ""
    except ValueError as error:
        parser.error(str(error))
    return serve_forever(
        args.host,
        args.port,
        args.data,
        seed=not args.no_seed,
        allow_origins=allowed,
        allow_hosts=served,
        database=args.database,
        assistant=assistant,
        browser_keys=args.model_browser_keys,
        trust_proxies=trusted,
        public_url=public,
        log_format=args.log_format,
        metrics_token=args.metrics_token,
        keep_days=args.threads_keep_days,
    )


def _metrics_token(value: str) -> str:
    from .server.metrics import token_problem

    problem = token_problem(value)
    if problem:  # an ArgumentTypeError: argparse then shows the sentence, never the value
        raise argparse.ArgumentTypeError(problem)
    return value


def _days(text: str) -> float:
    """--threads-keep-days: a number of days above 0."""
    try:
        days = float(text)
    except ValueError:
        days = 0.0
    if not 0 < days < 100_000:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of days: give how many days an untouched conversation is "
            "kept, such as 30."
        )
    return days


def _storage_arguments(command: argparse.ArgumentParser) -> None:
    """Where the data is: the SQLite folder, or a PostgreSQL database that replaces it."""
    command.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("REACTOR_DATA", ".data")),
        help="folder of the SQLite file (default .data, or $REACTOR_DATA)",
    )
    command.add_argument(
        "--database",
        default=os.environ.get("REACTOR_DATABASE_URL", ""),
        metavar="URL",
        help="a postgresql://user:password@host/name database instead of the SQLite file, "
        "for several server processes (also $REACTOR_DATABASE_URL)",
    )


def _assistant_arguments(serve: argparse.ArgumentParser) -> None:
    """The site's model (reactor/server/gateway/); its key only from the environment."""
    env = os.environ.get
    group = serve.add_argument_group(
        "the site's model",
        "the page's chat reaches it through this server; the key comes from $REACTOR_MODEL_API_KEY "
        "(or $OPENAI_API_KEY / $ANTHROPIC_API_KEY), never from the command line",
    )
    group.add_argument(
        "--model-provider",
        default=env("REACTOR_MODEL_PROVIDER", ""),
        metavar="openai|anthropic",
        help="the provider's wire format (also $REACTOR_MODEL_PROVIDER)",
    )
    group.add_argument(
        "--model",
        default=env("REACTOR_MODEL", ""),
        metavar="NAME",
        help="the model (also $REACTOR_MODEL)",
    )
    group.add_argument(
        "--model-base-url",
        default=env("REACTOR_MODEL_BASE_URL", ""),
        metavar="URL",
        help="an OpenAI-compatible server of your own, e.g. http://127.0.0.1:11434/v1 for Ollama "
        "(also $REACTOR_MODEL_BASE_URL)",
    )
    group.add_argument(
        "--model-anonymous", action="store_true", help="let signed-out pages use it too"
    )
    group.add_argument(
        "--model-limit-rpm",
        type=int,
        default=20,
        metavar="N",
        help="requests per minute per user (20)",
    )
    group.add_argument(
        "--model-limit-tokens",
        type=int,
        default=200_000,
        metavar="N",
        help="tokens per user per UTC day, as the provider reports them (200000)",
    )
    group.add_argument(
        "--model-max-tokens",
        type=int,
        default=4096,
        metavar="N",
        help="the cap on max_tokens (4096)",
    )
    group.add_argument(
        "--model-browser-keys",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="let a person type a provider's key into the chat's settings (default: only when no "
        "site model is configured)",
    )


def assistant_config(args: argparse.Namespace) -> tuple[Any, str]:
    """The site's model from the options and the environment, and "" — or None and what to set."""
    if not args.model_provider and not args.model:
        return None, ""
    from .errors import DeclarationError
    from .server.gateway.config import KEY_VARIABLES, AssistantConfig, check_reachable

    key = os.environ.get("REACTOR_MODEL_API_KEY") or os.environ.get(
        KEY_VARIABLES.get(args.model_provider, ""), ""
    )
    try:
        config = AssistantConfig(
            provider=args.model_provider,
            model=args.model,
            api_key=key,
            base_url=args.model_base_url,
            anonymous=args.model_anonymous,
            limit_rpm=args.model_limit_rpm,
            limit_tokens=args.model_limit_tokens,
            max_tokens=args.model_max_tokens,
        )
    except DeclarationError as error:
        return None, str(error)
    return config, check_reachable(config)


FORMATS = {
    "openai": "openai_chat_tools",
    "responses": "responses_tools",
    "anthropic": "anthropic_tools",
    "mcp": "mcp_list_tools",
}


def print_tools(format: str, plugins: list[str]) -> int:
    """The same tools a page host offers, rendered once for one provider, as JSON on stdout."""
    import json

    from . import host
    from .plugin_spec import discover_plugins
    from .plugins import Reactor

    bundles = [bundle for spec in discover_plugins() for bundle in spec.bundles]
    known = sorted({bundle["plugin"] for bundle in bundles})
    unknown = [name for name in plugins if name not in known]
    if unknown:
        print(
            f"reactor tools: no plugin {unknown[0]!r} provides tools; plugins: {', '.join(known)}.",
            file=sys.stderr,
        )
        return 2
    spec = host.AgentSpec("cli", plugins=tuple(plugins or known))
    rendered = getattr(host, FORMATS[format])(
        host.Toolbox(Reactor(), spec, bundles=bundles).tools()
    )
    print(json.dumps(rendered, indent=2, ensure_ascii=False))
    return 0


def new_plugin(name: str, where: Path, *, server: bool) -> int:
    """`reactor new plugin NAME`: the scaffold (reactor/scaffold.py), and what to do next."""
    from .scaffold import ScaffoldError
    from .scaffold import new_plugin as write

    try:
        files = write(name, where, server=server)
    except (ScaffoldError, OSError) as error:
        print(f"reactor new plugin: {error}", file=sys.stderr)
        return 2
    root = where / name
    for path in files:
        print(f"  {path.relative_to(where)}")
    print(f"Next: pip install -e '{root}[test]', then `pytest {root}` and `reactor serve`.")
    return 0


def set_password(data: Path, username: str, groups: list[str], database: str = "") -> int:
    """Read a new password (twice at a terminal, once from a pipe) and store it."""
    import getpass

    from .server.auth.sessions import Auth
    from .server.database import Database

    if sys.stdin.isatty():
        password = getpass.getpass(f"New password for {username}: ")
        if getpass.getpass("Again: ") != password:
            print("reactor passwd: the two passwords differ; nothing changed.", file=sys.stderr)
            return 1
    else:
        password = sys.stdin.readline().rstrip("\n")
    if len(password) < 8:
        print(
            "reactor passwd: a password needs at least 8 characters; nothing changed.",
            file=sys.stderr,
        )
        return 1
    auth = Auth(Database(database or data / "reactor.sqlite3"), seed=False)
    try:
        auth.set_password(username, password)
        print(f"reactor passwd: {username}'s password is set; their sessions have ended.")
    except LookupError:  # NotFoundError: no such user
        auth.create_user(username, password, groups)
        print(
            f"reactor passwd: created {username}" + (f" in {', '.join(groups)}." if groups else ".")
        )
    return 0


def _is_wildcard(host: str) -> bool:
    return host in ("", "0.0.0.0", "::", "[::]")


def _is_loopback(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def serve_forever(host: str, port: int, data: Path, **options: Any) -> int:
    """Serve until stopped (`options` as `_serve` takes them); Ctrl-C, while starting or serving,
    ends with one line, not a traceback (uvicorn shuts down, then re-raises the signal it caught
    as KeyboardInterrupt)."""
    try:
        return _serve(host, port, data, **options)
    except KeyboardInterrupt:
        if options.get("log_format") == "json":  # the log's lines are JSON, this one too
            import logging

            logging.getLogger("reactor").warning("reactor stopped.")
        else:
            print("reactor stopped.", file=sys.stderr)
        return 130


def _serve(
    host: str,
    port: int,
    data: Path,
    *,
    seed: bool,
    allow_origins: tuple[str, ...] = (),
    allow_hosts: tuple[str, ...] = (),
    database: str = "",
    assistant: Any = None,
    browser_keys: bool | None = None,
    trust_proxies: tuple[str, ...] = (),
    public_url: str = "",
    log_format: str = "text",
    metrics_token: str = "",
    keep_days: float | None = None,
) -> int:

    from .errors import DatabaseError
    from .plugin_spec import discover_plugins
    from .server.app import create_app
    from .server.logs import configure_logging
    from .server.serving import graceful
    from .server.threads.store import ThreadLimits

    log_options = configure_logging(log_format)

    # The composition root: the installed plugins (the reactor.plugins entry points) go in here.
    try:
        app = create_app(
            data,
            plugins=discover_plugins(),
            seed_demo=seed,
            allow_origins=allow_origins,
            allow_hosts=allow_hosts,
            database=database,
            assistant=assistant,
            browser_keys=browser_keys,
            trust_proxies=trust_proxies,
            public_url=public_url,
            metrics_token=metrics_token,
            threads=ThreadLimits(keep_days=keep_days),
        )
    except DatabaseError as error:
        print(f"reactor serve: {error}", file=sys.stderr)
        return 2
    if not _is_loopback(host):
        left = app.state.context.auth.demo_passwords_left()
        if left:
            print(
                f"reactor serve: refusing to listen on {host}: the accounts {', '.join(left)} "
                "still have the demo passwords the README publishes. Set new ones with "
                "`reactor passwd NAME` (same --data), or serve on 127.0.0.1.",
                file=sys.stderr,
            )
            return 2
    # The socket is bound here and handed to uvicorn, so the address printed is the one bound
    # (`--port 0` picks a free port) and a taken port is one clear sentence.
    try:
        listener = socket.create_server(
            (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET
        )
    except OSError as error:
        print(
            f"reactor serve: cannot listen on {host}:{port}: "
            f"{os.strerror(error.errno) if error.errno else error}.",
            file=sys.stderr,
        )
        return 2
    address = listener.getsockname()
    where = f"[{address[0]}]" if ":" in address[0] else address[0]
    stored = app.state.context.database.backend.shown if database else data.resolve()
    print(f"reactor is serving http://{where}:{address[1]}/ (data in {stored})", flush=True)
    if allow_origins:
        print(f"pages of {', '.join(allow_origins)} may embed it", flush=True)
    if assistant is not None:
        print(
            f"the page's chat uses {assistant.model} at {assistant.url} through this server",
            flush=True,
        )
    if public_url:
        print(f"people reach it at {public_url}/", flush=True)
    if trust_proxies:
        print(f"X-Forwarded-For and -Proto count from {', '.join(trust_proxies)}", flush=True)
    if keep_days is not None:
        print(f"chat conversations untouched for {keep_days:g} days are deleted", flush=True)
    # Pages connected for their agents hold an event stream open (server/agents/mcp.py). Whose
    # forwarded headers count is the app's to say (server/proxies.py), not uvicorn's.
    graceful(app, log_level="warning", **log_options).run(sockets=[listener])
    return 0


if __name__ == "__main__":
    sys.exit(main())
