"""The Python tier's view of plugins: which are enabled, their server halves, and the AgentTools
they provide. Each plugin is a PluginSpec (reactor.plugin_spec); its server half is made once
per platform, so two apps never share one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import PluginError, PluginNotFoundError


class PluginPlatform:
    """Holds PluginSpecs by name, each enabled or not; lists what enabled plugins provide."""

    def __init__(self, plugins: Iterable[Any] = (), *, disabled: Iterable[str] = ()) -> None:
        self._plugins: dict[str, Any] = {}
        self._servers: dict[str, Any] = {}
        self._enabled: dict[str, bool] = {}
        for plugin in plugins:
            self.add_plugin(plugin)
        for spec in self._plugins.values():
            missing = [name for name in spec.requires if name not in self._plugins]
            if missing:
                raise PluginError(
                    f"Plugin {spec.name!r} requires {missing[0]!r}, which is not on the platform.",
                    plugin=spec.name,
                )
        for name in disabled:
            if name in self._plugins:
                self._enabled[name] = False

    def add_plugin(self, plugin: Any, *, enabled: bool = True) -> None:
        """Add a PluginSpec and make its server half."""
        from .plugin_spec import PluginSpec  # here: the page imports this module, never this method

        if not isinstance(plugin, PluginSpec):
            raise PluginError(
                "A server plugin is declared with reactor.PluginSpec(...), not "
                f"{type(plugin).__name__} ({plugin!r}).",
                plugin=str(getattr(plugin, "name", "?")),
            )
        if plugin.name in self._plugins:
            raise PluginError(
                f"A plugin named {plugin.name!r} is already on the platform.", plugin=plugin.name
            )
        self._servers[plugin.name] = plugin.make_server()
        self._plugins[plugin.name] = plugin
        self._enabled[plugin.name] = enabled

    def get_plugin(self, name: str) -> Any:
        """The PluginSpec named `name`."""
        if name not in self._plugins:
            raise PluginNotFoundError(
                f"There is no plugin {name!r}. Plugins: {', '.join(self._plugins) or 'none'}.",
                plugin=name,
            )
        return self._plugins[name]

    def server_half(self, name: str) -> Any:
        """The server half this platform made for plugin `name` (None when it has none)."""
        self.get_plugin(name)
        return self._servers[name]

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

    def all_plugins(self) -> list[Any]:
        """Every PluginSpec, enabled or not, in the order added."""
        return list(self._plugins.values())

    def enabled_plugins(self) -> list[Any]:
        return [p for n, p in self._plugins.items() if self._enabled[n]]

    def list_plugins(self) -> list[dict[str, Any]]:
        """Every plugin as plain data: name, description, enabled."""
        return [
            {"name": n, "description": p.description, "enabled": self._enabled[n]}
            for n, p in self._plugins.items()
        ]

    def collect_agent_tools(self) -> list[dict[str, Any]]:
        """Every enabled plugin's bundles (checked when its spec was made)."""
        return [bundle for plugin in self.enabled_plugins() for bundle in plugin.bundles]

    def user_agent_tools(self, context: Any, user: Any) -> list[dict[str, Any]]:
        """The bundles the enabled plugins' server halves make for `user` (ServerHalf)."""
        bundles: list[dict[str, Any]] = []
        for plugin in self.enabled_plugins():
            made = getattr(self._servers[plugin.name], "agent_tools", None)
            if made is not None:
                bundles += made(context, user)
        return bundles
