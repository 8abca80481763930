import gc

import pytest

from reactor import (
    ContributionPoint,
    PluginDependencyError,
    PluginError,
    PluginLoadError,
    PluginNotFoundError,
    Reactor,
    contribution,
    define_plugin,
)

Panels = ContributionPoint("test.panels")


def commands_plugin(name, *ids, requires=()):
    def register(context):
        for id in ids:
            context.register_command(id, lambda args, id=id: id)

    return define_plugin(
        name=name,
        register=register,
        requires=requires,
        contributes=[contribution(Panels, name, id=name)],
    )


def test_plugins_load_in_dependency_order_whatever_order_they_are_given():
    order = []

    def tracking(name, requires=()):
        return define_plugin(
            name=name, requires=requires, register=lambda c: order.append(c.plugin)
        )

    reactor = Reactor()
    report = reactor.load_plugins([tracking("c", ["b"]), tracking("b", ["a"]), tracking("a")])
    assert order == ["a", "b", "c"] == report.loaded
    assert report.failed == {}


def test_a_plugin_whose_register_raises_is_rolled_back_and_the_others_keep_working():
    def broken(context):
        context.register_command("bad.one", lambda a: 1)
        context.contribute(Panels, "half", id="bad-panel")
        raise RuntimeError("the store could not open")

    reactor = Reactor()
    failures = []
    reactor.plugin_failed.connect(failures.append)
    report = reactor.load_plugins(
        [
            commands_plugin("good", "good.one"),
            define_plugin(name="bad", register=broken),
        ]
    )
    assert report.loaded == ["good"]
    assert isinstance(report.failed["bad"], PluginLoadError)
    assert "the store could not open" in str(report.failed["bad"])
    assert failures == [report.failed["bad"]]
    assert not reactor.commands.has_command("bad.one")
    assert reactor.contributions.values(Panels) == ["good"]
    assert reactor.commands.execute("good.one").result() == "good.one"
    assert reactor.plugins == ["good"]


def test_a_plugin_registering_a_taken_command_id_fails_alone():
    reactor = Reactor()
    report = reactor.load_plugins(
        [commands_plugin("one", "x.a"), commands_plugin("two", "x.b", "x.a")]
    )
    assert report.loaded == ["one"]
    assert "already registered by plugin 'one'" in str(report.failed["two"])
    assert not reactor.commands.has_command("x.b")


def test_a_missing_dependency_stops_only_the_plugin_that_needs_it():
    reactor = Reactor()
    report = reactor.load_plugins(
        [commands_plugin("a", "a.x", requires=["nowhere"]), commands_plugin("b", "b.x")]
    )
    assert report.loaded == ["b"]
    assert isinstance(report.failed["a"], PluginDependencyError)
    assert "'nowhere' (not loaded)" in str(report.failed["a"])


def test_dependents_of_a_failed_plugin_are_not_loaded():
    reactor = Reactor()
    broken = define_plugin(name="base", register=lambda c: 1 / 0)
    report = reactor.load_plugins([commands_plugin("child", "c.x", requires=["base"]), broken])
    assert report.loaded == []
    assert "'base' (failed)" in str(report.failed["child"])


def test_a_dependency_cycle_is_reported_not_looped():
    reactor = Reactor()
    report = reactor.load_plugins(
        [commands_plugin("a", requires=["b"]), commands_plugin("b", requires=["a"])]
    )
    assert report.loaded == []
    assert "cycle: a -> b -> a" in str(report.failed["a"])


def test_unloading_takes_the_plugin_commands_and_contributions_and_its_dependents():
    reactor = Reactor()
    reactor.load_plugins(
        [commands_plugin("base", "base.x"), commands_plugin("child", "child.x", requires=["base"])]
    )
    assert reactor.unload_plugin("base") == ["child", "base"]
    assert reactor.commands.list_commands() == []
    assert reactor.contributions.values(Panels) == []
    assert reactor.plugins == []


def test_a_plugin_can_be_loaded_again_after_unloading():
    reactor = Reactor()
    plugin = commands_plugin("p", "p.x")
    reactor.load_plugin(plugin)
    with pytest.raises(PluginError, match="already loaded"):
        reactor.load_plugin(plugin)
    reactor.unload_plugin("p")
    reactor.load_plugin(plugin)
    assert reactor.commands.has_command("p.x")


def test_unloading_an_unknown_plugin_names_what_is_loaded():
    reactor = Reactor()
    reactor.load_plugin(commands_plugin("p"))
    with pytest.raises(PluginNotFoundError, match="No plugin 'q' is loaded. Loaded: p."):
        reactor.unload_plugin("q")


def test_on_dispose_runs_when_the_plugin_unloads():
    closed = []
    reactor = Reactor()
    reactor.load_plugin(
        define_plugin(name="p", register=lambda c: c.on_dispose(lambda: closed.append(1)))
    )
    reactor.unload_plugin("p")
    assert closed == [1]


@pytest.mark.parametrize(
    "bad", [dict(name=""), dict(name="p", contributes=["x"]), dict(name="p", register=3)]
)
def test_bad_plugin_declarations_are_refused(bad):
    with pytest.raises(PluginError):
        define_plugin(**bad)


def test_activate_runs_once_after_loading_and_a_failing_one_is_unloaded():
    import asyncio

    started = []

    async def fetch_first(context):
        started.append(context.plugin)

    async def broken(context):
        raise ConnectionError("the server is down")

    reactor = Reactor()
    reactor.load_plugins(
        [
            define_plugin(name="ok", activate=fetch_first),
            define_plugin(
                name="bad",
                activate=broken,
                register=lambda c: c.register_command("bad.x", lambda a: 1),
            ),
        ]
    )
    failed = asyncio.run(reactor.activate_plugins())
    asyncio.run(reactor.activate_plugins())
    assert started == ["ok"]
    assert "'bad' failed to start and was unloaded: the server is down" in str(failed["bad"])
    assert reactor.plugins == ["ok"] and not reactor.commands.has_command("bad.x")


def test_what_register_returns_reaches_activate_and_other_code_as_the_plugins_exports():
    import asyncio

    class Store:
        items: list[str] = []

        async def load(self):
            self.items = ["first"]

    async def activate(context):
        await context.exports.load()

    reactor = Reactor()
    reactor.load_plugins(
        [define_plugin(name="store", register=lambda context: Store(), activate=activate)]
    )
    asyncio.run(reactor.activate_plugins())
    assert reactor.exports("store").items == ["first"]
    with pytest.raises(PluginNotFoundError, match="No plugin 'gone' is loaded. Loaded: store."):
        reactor.exports("gone")


def test_clearing_a_disposable_set_undoes_what_it_holds_and_keeps_it_usable():
    from reactor import Disposable, DisposableSet

    undone = []
    held = DisposableSet()
    held.add(Disposable(lambda: undone.append(1)))
    held.clear()
    later = held.add(Disposable(lambda: undone.append(2)))
    assert undone == [1] and not held.is_disposed and not later.is_disposed
    held.dispose()
    assert undone == [1, 2]


def test_a_bulk_load_leaves_the_callers_garbage_collector_as_it_found_it():
    def register(context):
        raise RuntimeError("boom")

    assert gc.isenabled()
    report = Reactor().load_plugins([define_plugin(name="a", register=register)])
    assert "a" in report.failed and gc.isenabled(), "on again even when a plugin fails"
    gc.disable()
    try:
        Reactor().load_plugins([define_plugin(name="b", register=lambda c: None)])
        assert not gc.isenabled(), "a caller that had it off keeps it off"
    finally:
        gc.enable()
