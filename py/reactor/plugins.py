"""Plugins and the Reactor that loads them: in dependency order, isolated, undone on unload."""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from .agent_tools import AgentTools, check_agent_tools, declared_commands
from .commands import CommandOptions, CommandRegistry, Handler
from .contributions import Contribution, ContributionPoint, ContributionRegistry
from .disposable import Disposable, DisposableSet
from .errors import PluginDependencyError, PluginError, PluginLoadError, PluginNotFoundError
from .events import Emitter


class Plugin:
    """What a plugin is: a name, what it contributes, what it registers, what it needs first."""

    __slots__ = ("name", "register", "contributes", "requires", "description", "activate")

    def __init__(
        self,
        name: str,
        register: Callable[[PluginContext], object] | None = None,
        contributes: tuple[Contribution[Any], ...] = (),
        requires: tuple[str, ...] = (),
        description: str = "",
        activate: Callable[[PluginContext], Awaitable[object]] | None = None,
    ) -> None:
        self.name, self.register, self.contributes, self.requires = (
            name,
            register,
            contributes,
            requires,
        )
        self.description, self.activate = description, activate

    def __repr__(self) -> str:
        return f"Plugin({self.name!r})"


def define_plugin(
    *,
    name: str,
    register: Callable[[PluginContext], object] | None = None,
    contributes: Sequence[Contribution[Any]] = (),
    requires: Sequence[str] = (),
    description: str = "",
    activate: Callable[[PluginContext], Awaitable[object]] | None = None,
) -> Plugin:
    """Declare a plugin; nothing runs until a Reactor loads it.

    `register` runs at load and must not wait; `activate`, if given, is the plugin's async
    start-up work (a first fetch), run by `Reactor.activate_plugins` once everything is loaded.
    What `register` returns is the plugin's exports (its live objects, as a VS Code
    extension's `activate` returns its API): `activate` reads them as `context.exports`, and
    other code as `Reactor.exports(name)`.
    """
    if not isinstance(name, str) or not name.strip():
        raise PluginError(f"A plugin needs a non-empty name, not {name!r}.", plugin=str(name))
    for item in contributes:
        if not isinstance(item, Contribution):
            raise PluginError(
                f"Plugin {name!r} contributes {item!r}; use contribution(Point, value, id=...).",
                plugin=name,
            )
    for field, value in (("register", register), ("activate", activate)):
        if value is not None and not callable(value):
            raise PluginError(f"The {field} of plugin {name!r} must be callable.", plugin=name)
    return Plugin(name, register, tuple(contributes), tuple(requires), description, activate)


class PluginContext:
    """Handed to `register`, then to `activate`: every registration made through it is undone
    with the plugin. `exports` is what `register` returned."""

    __slots__ = ("reactor", "plugin", "disposables", "exports")

    def __init__(self, reactor: Reactor, plugin: str) -> None:
        self.reactor, self.plugin, self.disposables = reactor, plugin, DisposableSet()
        self.exports: Any = None

    def register_bundle(
        self, bundle: dict[str, Any], handlers: Mapping[str, Handler | CommandOptions]
    ) -> Disposable:
        """Register every command `bundle` (an AgentTools bundle) declares, with its words and
        schema, running the handler `handlers` gives for it by command id; and offer its tools.
        A declared command without a handler, or a handler for no declared command, is refused
        by name, and nothing is registered. The Disposable undoes all of it."""
        checked = check_agent_tools(bundle)
        declared = declared_commands(checked, handlers)
        registered = DisposableSet()
        try:
            if checked["commands"]:  # a bundle of commands that are no tool offers nothing
                contributions = self.reactor.contributions
                registered.add(
                    contributions.contribute(
                        AgentTools, checked, id=checked["id"], plugin=self.plugin
                    )
                )
            for id, options in declared:
                registered.add(
                    self.reactor.commands.register_command(id, options, plugin=self.plugin)
                )
        except Exception:
            registered.dispose()
            raise
        return self.disposables.add(registered)

    def register_command(self, id: str, options: CommandOptions | Handler) -> Disposable:
        """Register one command by itself (one a plugin makes up as it runs)."""
        return self.disposables.add(
            self.reactor.commands.register_command(id, options, plugin=self.plugin)
        )

    def contribute(
        self, point: ContributionPoint[Any], value: Any, *, id: str, order: int = 0
    ) -> Disposable:
        return self.disposables.add(
            self.reactor.contributions.contribute(
                point, value, id=id, order=order, plugin=self.plugin
            )
        )

    def on_dispose(self, undo: Callable[[], object]) -> Disposable:
        """Run `undo` when the plugin unloads (close a store, drop a subscription)."""
        return self.disposables.add(Disposable(undo))


class LoadReport:
    """What `load_plugins` did: who loaded, and why each of the others did not."""

    __slots__ = ("loaded", "failed")

    def __init__(self, loaded: list[str], failed: dict[str, PluginError]) -> None:
        self.loaded, self.failed = loaded, failed


class Reactor:
    """One page's runtime: its commands, contribution points and loaded plugins."""

    def __init__(self, *, services: dict[str, Any] | None = None) -> None:
        self.commands = CommandRegistry()
        self.contributions = ContributionRegistry()
        self.services: dict[str, Any] = dict(services or {})
        self.plugin_failed: Emitter[PluginError] = Emitter()
        self._loaded: dict[str, tuple[Plugin, PluginContext]] = {}
        self._activated: set[str] = set()

    @property
    def plugins(self) -> list[str]:
        """Names of the loaded plugins, in load order."""
        return list(self._loaded)

    def exports(self, name: str) -> Any:
        """What the loaded plugin `name`'s `register` returned (None when it returned nothing)."""
        if name not in self._loaded:
            loaded = ", ".join(self._loaded) or "none"
            raise PluginNotFoundError(
                f"No plugin {name!r} is loaded. Loaded: {loaded}.", plugin=name
            )
        return self._loaded[name][1].exports

    def load_plugins(self, plugins: Iterable[Plugin]) -> LoadReport:
        """Load each plugin after those it requires; a failure stops only it and its dependents."""
        # A load only adds objects, yet the cyclic GC kept walking the ever larger heap: loading
        # 1,000 plugins cost 1.3x more per plugin than 100 (bench/RESULTS.md). Paused meanwhile.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._load_in_order(plugins)
        finally:
            if collecting:
                gc.enable()

    def _load_in_order(self, plugins: Iterable[Plugin]) -> LoadReport:
        pending = {p.name: p for p in plugins}
        loaded: list[str] = []
        failed: dict[str, PluginError] = {}
        for plugin in _dependency_order(pending, failed):
            missing = [r for r in plugin.requires if r not in self._loaded]
            try:
                if missing:
                    why = ", ".join(
                        f"{r!r} ({'failed' if r in failed else 'not loaded'})" for r in missing
                    )
                    raise PluginDependencyError(
                        f"Plugin {plugin.name!r} needs {why}; load those first.", plugin=plugin.name
                    )
                self.load_plugin(plugin)
                loaded.append(plugin.name)
            except PluginError as error:
                failed[plugin.name] = error
        for refusal in failed.values():
            self.plugin_failed.emit(refusal)
        return LoadReport(loaded, failed)

    def load_plugin(self, plugin: Plugin) -> None:
        """Load one plugin; if its register raises, everything it registered is rolled back."""
        if plugin.name in self._loaded:
            raise PluginError(
                f"Plugin {plugin.name!r} is already loaded; unload it first.", plugin=plugin.name
            )
        missing = [r for r in plugin.requires if r not in self._loaded]
        if missing:
            raise PluginDependencyError(
                f"Plugin {plugin.name!r} needs {', '.join(map(repr, missing))} loaded first.",
                plugin=plugin.name,
            )
        context = PluginContext(self, plugin.name)
        try:
            for item in plugin.contributes:
                context.contribute(item.point, item.value, id=item.id, order=item.order)
            if plugin.register is not None:
                context.exports = plugin.register(context)
        except Exception as error:
            context.disposables.dispose()
            raise PluginLoadError(
                f"Plugin {plugin.name!r} failed to load and was rolled back: {error}",
                plugin=plugin.name,
                cause=error,
            ) from error
        self._loaded[plugin.name] = (plugin, context)

    async def activate_plugins(self) -> dict[str, PluginError]:
        """Run `activate` of each loaded plugin not yet activated; one that fails is unloaded."""
        failed: dict[str, PluginError] = {}
        for name, (plugin, context) in list(self._loaded.items()):
            if plugin.activate is None or name in self._activated or name not in self._loaded:
                continue
            self._activated.add(name)
            try:
                await plugin.activate(context)
            except Exception as error:
                failed[name] = PluginLoadError(
                    f"Plugin {name!r} failed to start and was unloaded: {error}",
                    plugin=name,
                    cause=error,
                )
                self.unload_plugin(name)
        for refusal in failed.values():
            self.plugin_failed.emit(refusal)
        return failed

    def unload_plugin(self, name: str) -> list[str]:
        """Unload a plugin and, first, every loaded plugin that requires it; return who went."""
        if name not in self._loaded:
            raise PluginNotFoundError(
                f"No plugin {name!r} is loaded. Loaded: {', '.join(self._loaded) or 'none'}.",
                plugin=name,
            )
        gone: list[str] = []
        for dependent in [n for n, (p, _) in self._loaded.items() if name in p.requires]:
            if dependent in self._loaded:
                gone += self.unload_plugin(dependent)
        _, context = self._loaded.pop(name)
        self._activated.discard(name)
        context.disposables.dispose()
        return gone + [name]


def _dependency_order(pending: dict[str, Plugin], failed: dict[str, PluginError]) -> list[Plugin]:
    """Topological order of `pending`; plugins in a cycle are put in `failed` instead."""
    order: list[Plugin] = []
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == "done" or name not in pending:
            return
        if state.get(name) == "visiting":
            cycle = trail[trail.index(name) :] + [name]
            for member in cycle[:-1]:
                failed[member] = PluginDependencyError(
                    f"Plugins require each other in a cycle: {' -> '.join(cycle)}.", plugin=member
                )
            return
        state[name] = "visiting"
        for required in pending[name].requires:
            visit(required, trail + [name])
        state[name] = "done"
        if name not in failed:
            order.append(pending[name])

    for name in pending:
        visit(name, [])
    return order
