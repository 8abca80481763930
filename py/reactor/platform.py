"""The Python tier's view of plugins: which are enabled, and the AgentTools they provide.

A server-side plugin is any object with a `name` and, optionally, `provide_agent_tools()`
returning bundles in the same shape the page contributes, and `description`.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

from .agent_tools import check_agent_tools
from .errors import DeclarationError, PluginError, PluginNotFoundError

log = logging.getLogger("reactor")


class PluginPlatform:
    """Holds server plugins by name, each enabled or not; lists what enabled plugins provide."""

    def __init__(self, plugins: Iterable[Any] = (), *, disabled: Iterable[str] = ()) -> None:
        self._plugins: dict[str, Any] = {}
        self._enabled: dict[str, bool] = {}
        for plugin in plugins:
            self.add_plugin(plugin)
        for name in disabled:
            if name in self._plugins:
                self._enabled[name] = False

    def add_plugin(self, plugin: Any, *, enabled: bool = True) -> None:
        name = getattr(plugin, "name", None)
        if not isinstance(name, str) or not name.strip():
            raise PluginError(f"A server plugin needs a non-empty `name`; {plugin!r} has {name!r}.", plugin=str(name))
        if name in self._plugins:
            raise PluginError(f"A plugin named {name!r} is already on the platform.", plugin=name)
        self._plugins[name] = plugin
        self._enabled[name] = enabled

    def get_plugin(self, name: str) -> Any:
        if name not in self._plugins:
            raise PluginNotFoundError(
                f"There is no plugin {name!r}. Plugins: {', '.join(self._plugins) or 'none'}.", plugin=name
            )
        return self._plugins[name]

    def set_enabled(self, name: str, enabled: bool) -> None:
        self.get_plugin(name)
        self._enabled[name] = bool(enabled)

    def enable(self, name: str) -> None:
        self.set_enabled(name, True)

    def disable(self, name: str) -> None:
        self.set_enabled(name, False)

    def is_enabled(self, name: str) -> bool:
        self.get_plugin(name)
        return self._enabled[name]

    def enabled_plugins(self) -> list[Any]:
        return [p for n, p in self._plugins.items() if self._enabled[n]]

    def list_plugins(self) -> list[dict[str, Any]]:
        """Every plugin as plain data: name, description, enabled."""
        return [
            {"name": n, "description": getattr(p, "description", ""), "enabled": self._enabled[n]}
            for n, p in self._plugins.items()
        ]

    def collect_agent_tools(self) -> list[dict[str, Any]]:
        """Every enabled plugin's bundles, checked; a plugin's broken bundle is logged and left out."""
        bundles: list[dict[str, Any]] = []
        for plugin in self.enabled_plugins():
            provide = getattr(plugin, "provide_agent_tools", None)
            if provide is None:
                continue
            for bundle in provide() or []:
                try:
                    bundles.append(check_agent_tools(bundle))
                except DeclarationError as error:
                    log.error("Plugin %r provides a refused AgentTools bundle: %s", plugin.name, error)
        return bundles
