"""PluginSpec: one plugin, declared once, checked when it is made.

A plugin has up to two halves. The page half is a `define_plugin(...)` the page's Python imports
(`page`, as "module:ATTRIBUTE", since the worker imports it by name); the server half is an object
with `setup(context, *, seed)` and `routes(context)` (`ServerHalf`), made anew for each app by the
`server` factory. Beside them: the page files the server hands out (`assets`, in `folder`), the
page services the page half reads (`page_services`, e.g. where its API is), and the AgentTools
bundle file the Python tier serves (`agent_tools`, in `folder`).

Installed plugins are found through the `reactor.plugins` entry-point group (`discover_plugins`),
as pluggy loads setuptools entry points; the CLI or a test may pass others to `create_app`.
The core never imports a plugin by name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .agent_tools import load_agent_tools
from .errors import DeclarationError, refusal

ENTRY_POINT_GROUP = "reactor.plugins"
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
PAGE_REFERENCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
# A path on the plugin's own server, with its query: what `preload` lists.
PRELOAD_PATH = re.compile(r"/(?!/)[A-Za-z0-9._~!$&'()*+,;=:@%/?-]{0,199}")


@runtime_checkable
class ServerHalf(Protocol):
    """What a plugin's server half does: tables and seed data at start, then its routes.

    It may also have `agent_tools(context, user)`: the AgentTools bundles it offers that user
    (None when nobody is signed in), made for each request, beside the spec's fixed bundle.
    """

    def setup(self, context: Any, *, seed: bool) -> None:
        """Create (migrate) its tables; with `seed`, fill them with the demo's data."""

    def routes(self, context: Any) -> list[Any]:
        """Its Starlette routes; they answer 404 while the plugin is disabled."""


class PluginSpec:
    """The declaration of one plugin; DeclarationError (with the field) when a part is wrong."""

    __slots__ = (
        "name",
        "description",
        "requires",
        "page",
        "server",
        "folder",
        "assets",
        "page_services",
        "agent_tools",
        "bundles",
        "preload",
    )

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        requires: Iterable[str] = (),
        page: str | None = None,
        server: Callable[[], ServerHalf] | None = None,
        folder: str | Path | None = None,
        assets: Iterable[str] = (),
        page_services: Mapping[str, str] | None = None,
        agent_tools: str | None = None,
        preload: Iterable[str] = (),
    ) -> None:
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise _refuse(
                str(name),
                "name",
                name,
                "must be 1 to 64 letters, digits, '_' or '-', starting with a letter.",
            )
        self.name = name
        if not isinstance(description, str):
            raise _refuse(name, "description", description, "must be text.")
        self.description = description
        self.requires = tuple(requires)
        if not all(isinstance(r, str) and NAME.fullmatch(r) for r in self.requires):
            raise _refuse(name, "requires", self.requires, "must list plugin names.")
        if page is not None and (not isinstance(page, str) or not PAGE_REFERENCE.fullmatch(page)):
            raise _refuse(
                name,
                "page",
                page,
                'must name the page half as "module:ATTRIBUTE", e.g. "my_plugin:PLUGIN".',
            )
        self.page = page
        if server is not None and not callable(server):
            raise _refuse(
                name, "server", server, "must be a function (or class) that makes the server half."
            )
        self.server = server
        self.folder = None if folder is None else Path(folder)
        self.assets = tuple(assets)
        for asset in self.assets:
            if not isinstance(asset, str) or asset.startswith("/") or ".." in Path(asset).parts:
                raise _refuse(
                    name, "assets", asset, "must be file names inside the plugin's folder."
                )
            if self.folder is None or not (self.folder / asset).is_file():
                raise _refuse(
                    name, "assets", asset, f"is not a file in the plugin's folder ({self.folder})."
                )
        services = dict(page_services or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in services.items()):
            raise _refuse(
                name,
                "page_services",
                services,
                "must map service names to text (e.g. an API's path).",
            )
        self.page_services = services
        self.agent_tools = agent_tools
        self.bundles: list[dict[str, Any]] = []
        if agent_tools is not None:
            if (
                self.folder is None
                or not isinstance(agent_tools, str)
                or not (self.folder / agent_tools).is_file()
            ):
                raise _refuse(
                    name,
                    "agent_tools",
                    agent_tools,
                    f"is not a file in the plugin's folder ({self.folder}).",
                )
            try:
                self.bundles = [load_agent_tools(self.folder / agent_tools)]
            except DeclarationError as error:
                raise _refuse(name, "agent_tools", agent_tools, f"is refused: {error}") from error

        self.preload = tuple(preload) if not isinstance(preload, str) else (preload,)
        for path in self.preload:
            if not isinstance(path, str) or not PRELOAD_PATH.fullmatch(path):
                raise _refuse(
                    name,
                    "preload",
                    path,
                    "must list paths on this server that the page half GETs as it starts, e.g. "
                    '"/plugins" (1 to 200 characters, no scheme, host or spaces).',
                )

    def make_server(self) -> ServerHalf | None:
        """A new server half (one per app), checked against ServerHalf."""
        if self.server is None:
            return None
        half = self.server()
        if not isinstance(half, ServerHalf):
            raise _refuse(
                self.name,
                "server",
                half,
                "made an object without setup(context, *, seed) and routes(context).",
            )
        return half

    def __repr__(self) -> str:
        return f"PluginSpec(name={self.name!r})"


def discover_plugins(group: str = ENTRY_POINT_GROUP) -> list[PluginSpec]:
    """The PluginSpecs installed packages declare in the entry-point `group`, in declared order.
    An entry may name a PluginSpec or a function returning one."""
    from importlib.metadata import entry_points

    specs = []
    for entry in entry_points(group=group):
        loaded = entry.load()
        spec = loaded() if callable(loaded) else loaded  # a PluginSpec, or a function making one
        if not isinstance(spec, PluginSpec):
            raise _refuse(
                entry.name,
                "entry point",
                entry.value,
                f"names {type(spec).__name__}, not a PluginSpec (group {group!r}).",
            )
        specs.append(spec)
    return specs


def _refuse(owner: str, field: str, value: Any, rule: str) -> DeclarationError:
    return refusal("Plugin", owner, field, value, rule)
