"""`reactor new plugin NAME`: an installable plugin package whose tests pass as generated.

What it writes, in `NAME/`: `pyproject.toml` (the `reactor.plugins` entry point), the package
with `spec.py` (the declaration), `agent-tools.json` (one read tool, one write tool), the page
half (`__init__.py`), with `--server` a server half (`server.py`: a table and two routes, the
page half then keeping its items there), tests written with reactor.testing, and a README.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .errors import ReactorError

NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


class ScaffoldError(ReactorError, ValueError):
    """The name or the folder cannot take a new plugin; the message says which and why."""


def new_plugin(name: str, where: Path, *, server: bool = False) -> list[Path]:
    """Write the plugin `name` into `where/name`; the files written."""
    if not NAME.fullmatch(name) or len(name) > 40:
        raise ScaffoldError(
            f"{name[:60]!r} cannot name a plugin: use lowercase letters, digits and single "
            "hyphens, "
            "starting with a letter (for example notes or team-notes), at most 40 characters."
        )
    root = where / name
    if root.exists():
        raise ScaffoldError(
            f"{root} already exists; choose another name or folder (nothing was written)."
        )
    package = "reactor_" + name.replace("-", "_")
    tool = name.replace("-", "_")
    title = name.replace("-", " ").capitalize()
    files = {
        "pyproject.toml": _pyproject(name, package),
        "README.md": _readme(name, package, tool, server),
        f"{package}/__init__.py": _page_half(name, package, tool, title, server),
        f"{package}/spec.py": _spec(name, package, title, server),
        f"{package}/agent-tools.json": json.dumps(_bundle(name, tool, title), indent=2) + "\n",
        f"tests/test_{tool}.py": _tests(name, tool, title),
    }
    if server:
        files[f"{package}/server.py"] = _server(name, package, tool)
    written = []
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def _bundle(name: str, tool: str, title: str) -> dict[str, object]:
    return {
        "id": name,
        "name": title,
        "description": f"The {title.lower()} items of this page.",
        "plugin": name,
        "commands": [
            {
                "name": f"{tool}_list_items",
                "command": f"{name}.listItems",
                "label": f"{title}: List Items",
                "description": "List the items, oldest first. Use it to answer what the items are.",
                "sideEffect": "read",
                "summary": "{result.count} on the list.",
            },
            {
                "name": f"{tool}_add_item",
                "command": f"{name}.addItem",
                "label": f"{title}: Add Item",
                "description": "Add one item with the given text. Use it only when the person "
                "asks to add something.",
                "sideEffect": "write",
                "summary": "Added ‘{args.text}’.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "text": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 200,
                            "description": "What the item says.",
                        }
                    },
                    "required": ["text"],
                    "additionalProperties": False,
                },
            },
        ],
    }


def _pyproject(name: str, package: str) -> str:
    return f'''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "reactor-{name}"
version = "0.1.0"
description = "The {name} plugin for reactor."
requires-python = ">=3.11"
dependencies = ["reactor"]

[project.optional-dependencies]
test = ["reactor[testing]"]

# `reactor serve` finds the plugin here (reactor.plugin_spec.discover_plugins).
[project.entry-points."reactor.plugins"]
{name} = "{package}.spec:PLUGIN"

[tool.setuptools]
packages = ["{package}"]

[tool.setuptools.package-data]
"{package}" = ["*.json"]

[tool.ruff]
line-length = 100
'''


def _spec(name: str, package: str, title: str, server: bool) -> str:
    if not server:
        return f'''"""The {name} plugin, declared: what the page loads, the agent's tools."""

from pathlib import Path

from reactor.plugin_spec import PluginSpec

PLUGIN = PluginSpec(
    name="{name}",
    description="{title} items an agent can list and add to.",
    page="{package}:PLUGIN",
    folder=Path(__file__).parent,
    agent_tools="agent-tools.json",
)
'''
    return f'''\
"""The {name} plugin, declared: what the page loads, what the server runs, the agent's tools."""

from pathlib import Path
from typing import Any

from reactor.plugin_spec import PluginSpec


def _server() -> Any:  # imported only on the server, when an app is made
    from .server import ItemsServer

    return ItemsServer()


PLUGIN = PluginSpec(
    name="{name}",
    description="{title} items an agent can list and add to.",
    page="{package}:PLUGIN",
    server=_server,
    folder=Path(__file__).parent,
    page_services={{"{name}_api": "/api/{name}/items"}},
    agent_tools="agent-tools.json",
)
'''


def _page_half(name: str, package: str, tool: str, title: str, server: bool) -> str:
    if server:
        store = f'''class Items:
    """The items, kept on the server (server.py) and read through the page's fetch."""

    def __init__(self, page: Any, url: str) -> None:
        self.page, self.url = page, url

    async def list(self) -> list[str]:
        return list(await self.page.fetch_json("GET", self.url))

    async def add(self, text: str) -> list[str]:
        return list(await self.page.fetch_json("POST", self.url, {{"text": text}}))


def _register(context: PluginContext) -> None:
    services = context.reactor.services
    items = Items(services["page"], services["{name}_api"])

    async def list_items(args: dict[str, Any]) -> dict[str, Any]:
        found = await items.list()
        return {{"count": len(found), "items": found}}

    async def add_item(args: dict[str, Any]) -> dict[str, Any]:
        found = await items.add(args["text"])
        return {{"count": len(found), "items": found}}
'''
    else:
        store = """def _register(context: PluginContext) -> None:
    # This page's items, gone when it closes (`reactor new plugin --server` keeps them).
    items: list[str] = []

    def list_items(args: dict[str, Any]) -> dict[str, Any]:
        return {"count": len(items), "items": list(items)}

    def add_item(args: dict[str, Any]) -> dict[str, Any]:
        items.append(args["text"])
        return {"count": len(items), "items": list(items)}
"""
    return f'''\
"""The {name} plugin for the page: agent-tools.json declares its commands (and the tools
that call them); here is their code.

This code runs in the page (Pyodide, in a Web Worker) and on CPython alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reactor import PluginContext, define_plugin, load_agent_tools

TOOLS = load_agent_tools(Path(__file__).with_name("agent-tools.json"))


{store}
    # A handler for each command agent-tools.json declares, by command id: no more, no fewer.
    context.register_bundle(TOOLS, {{"{name}.listItems": list_items, "{name}.addItem": add_item}})


# Its description is the one in spec.py: a plugin is described once.
PLUGIN = define_plugin(name="{name}", register=_register)
'''


def _server(name: str, package: str, tool: str) -> str:
    table = f"{tool}_items"
    return f'''"""The {name} plugin's server half: its table, and GET/POST /api/{name}/items."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reactor.server.api import Call, Reply, declare, routes_of
from reactor.server.auth.sessions import Auth, signed_in
from reactor.server.database import Database
from reactor.server.plugins.context import ServerContext
from starlette.routing import Route

STEPS = ["CREATE TABLE IF NOT EXISTS {table} (id INTEGER PRIMARY KEY, text TEXT NOT NULL)"]
ITEMS = {{"type": "array", "items": {{"type": "string"}}}}
ITEM = {{
    "type": "object",
    "required": ["text"],
    "properties": {{
        "text": {{
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "x-refusal": "Send the item's text as text, 1 to 200 characters.",
        }}
    }},
    "additionalProperties": False,
}}


class ItemsServer:
    def setup(self, context: ServerContext, *, seed: bool) -> None:
        context.database.migrate("{name}", STEPS)

    def routes(self, context: ServerContext) -> list[Route]:
        services = ItemsServices(context.database, context.auth)
        return routes_of(list_items, add_item, services=services)


@dataclass(frozen=True)
class ItemsServices:
    """What the routes work with, one set per app: each handler takes it from the call."""

    database: Database
    auth: Auth


def _services(call: Call) -> ItemsServices:
    services: ItemsServices = call.services
    return services


def _items(database: Database) -> list[str]:
    with database.transaction() as db:
        rows = db.execute("SELECT text FROM {table} ORDER BY id")
        return [row["text"] for row in rows]


# Each route is declared once, at import, its method and path included: the declaration checks
# every request (a 422 names the field) and is the route's entry in /openapi.json.
@declare("GET", "/api/{name}/items", "The items, oldest first", replies={{200: Reply(ITEMS)}})
async def list_items(call: Call) -> Any:
    return _items(_services(call).database)


@declare(
    "POST",
    "/api/{name}/items",
    "Add an item (signed-in users)",
    body=ITEM,
    replies={{200: Reply(ITEMS)}},
    refusals={{401: "Nobody is signed in."}},
    # the app's signed-in user (its services' `auth`), a 401 before the body is read
    who=signed_in("Sign in to add items."),
)
async def add_item(call: Call) -> Any:
    database = _services(call).database
    with database.transaction() as db:
        db.execute("INSERT INTO {table} (text) VALUES (?)", (call.body["text"],))
    return _items(database)
'''


def _tests(name: str, tool: str, title: str) -> str:
    return f'''"""The {name} plugin in a real browser, with reactor.testing's fixtures.

Run them with `pytest` after `pip install -e .[test]`; add `--headed` to watch,
`--video on` to keep a video of each test.
"""


def test_the_page_offers_both_tools(reactor_page):
    reactor_page.wait_for_tool("{tool}_list_items")
    assert {{"{tool}_list_items", "{tool}_add_item"}} <= set(reactor_page.tools())


def test_an_added_item_is_listed(reactor_server, reactor_page):
    reactor_page.sign_in(reactor_server.user("ada"))
    added = reactor_page.call_tool("{tool}_add_item", {{"text": "Buy milk"}})
    assert added["ok"], added
    listed = reactor_page.call_tool("{tool}_list_items", {{}})
    assert "Buy milk" in listed["result"]["items"]


def test_an_item_without_text_is_refused_with_the_reason(reactor_page):
    refused = reactor_page.call_tool("{tool}_add_item", {{}})
    assert refused["error"]["code"] == "invalid_arguments"
    assert refused["error"]["problems"][0]["path"] == "$"


def test_the_chat_lists_the_items(reactor_server, reactor_page):
    reactor_page.open(agent_plugins=["{name}"])  # the chat's agent may call this plugin's tools
    reactor_page.sign_in(reactor_server.user("bob"))
    reactor_page.call_tool("{tool}_add_item", {{"text": "Buy milk"}})
    said = reactor_page.chat(["list items"])  # the scripted model, as a person types it
    assert "on the list." in said[0].cards[0]  # what the person saw on the tool's card


def test_the_demo(reactor_server, reactor_demo):
    page = reactor_demo.reactor.open(agent_plugins=["{name}"]).sign_in(reactor_server.user("eve"))
    reactor_demo.chapter("{title}")
    with reactor_demo.step("An agent adds an item"):
        page.call_tool("{tool}_add_item", {{"text": "Buy milk"}})
    with reactor_demo.step("The chat lists the items"):
        page.chat(["list items"])
'''


def _readme(name: str, package: str, tool: str, server: bool) -> str:
    return f"""# reactor-{name}

A reactor plugin: `{tool}_list_items` (read) and `{tool}_add_item` (write, so the chat asks the
person first) for the agent, the same two as commands in the palette.

```sh
pip install -e .[test]        # beside reactor; `reactor serve` then serves this plugin too
pytest                        # its tests, in a real browser (reactor.testing)
reactor serve                 # open http://127.0.0.1:8000/ and try the palette or the chat
```

- `{package}/agent-tools.json`: the tools (names, descriptions, JSON Schemas, side effects).
- `{package}/__init__.py`: the page half, the commands' code{
        " (it keeps the items on the server)" if server else " (the items live in the page)"
    }.
- `{
        package
    }/spec.py`: the declaration `reactor serve` finds through the entry point in pyproject.toml.{
        chr(10)
        + f"- `{package}/server.py`: the server half, a table and `GET`/`POST /api/{name}/items`."
        if server
        else ""
    }
- `tests/`: tests with reactor.testing's `reactor_server` and `reactor_page` fixtures.
"""
