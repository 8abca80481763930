"""The agent's path: tools indexed by name and kept current by the bundles' changes, synchronous
commands answered at once, and a burst of plugin loads told to the page once."""

from __future__ import annotations

import asyncio
import inspect
import json

from reactor import Reactor, define_agent_tools, define_plugin
from reactor.cancellation import CancelToken
from reactor.facade import PageTools, define_plugin_json, warm_call_path, watch_changes
from reactor.host import EVERY_PLUGIN, AgentSpec, Toolbox


def plugin(name: str, tools: int = 2, handler=None):
    bundle = define_agent_tools(
        id=name,
        name=name,
        plugin=name,
        commands=[
            {
                "name": f"{name}_{i}",
                "command": f"{name}.c{i}",
                "description": f"Tool {i} of {name}.",
                "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
            }
            for i in range(tools)
        ],
    )

    def register(context):
        context.register_bundle(
            bundle,
            {
                f"{name}.c{i}": handler or (lambda args, i=i: {"tool": i, **args})
                for i in range(tools)
            },
        )

    return define_plugin(name=name, register=register)


def call(toolbox, name, args):
    answer = toolbox.call(name, json.dumps(args), signal=CancelToken())
    return asyncio.run(_await(answer)) if inspect.isawaitable(answer) else answer


async def _await(answer):
    return await answer


def test_a_plugin_loaded_or_unloaded_mid_conversation_is_seen_by_the_very_next_call():
    reactor = Reactor()
    reactor.load_plugins([plugin("a")])
    toolbox = Toolbox(reactor, AgentSpec("t", plugins=("a", "b")))
    assert call(toolbox, "a_0", {"n": 1}) == {"ok": True, "result": {"tool": 0, "n": 1}}
    assert call(toolbox, "b_1", {})["error"]["code"] == "unknown_tool"
    reactor.load_plugin(plugin("b"))
    assert call(toolbox, "b_1", {}) == {"ok": True, "result": {"tool": 1}}
    reactor.unload_plugin("a")
    assert call(toolbox, "a_0", {})["error"]["code"] == "unknown_tool"


def test_an_unchanged_bundle_keeps_its_tools_when_another_plugin_loads():
    reactor = Reactor()
    reactor.load_plugins([plugin("a")])
    toolbox = Toolbox(reactor, AgentSpec("t", plugins=(EVERY_PLUGIN,)))
    before = toolbox.tool("a_0")
    reactor.load_plugin(plugin("b"))
    assert toolbox.tool("a_0") is before and toolbox.tool("b_0") is not None
    assert [t.name for t in toolbox.tools()] == ["a_0", "a_1", "b_0", "b_1"]


def test_a_tool_and_its_command_share_one_schema_and_one_compiled_validator():
    reactor = Reactor()
    reactor.load_plugins([plugin("a")])
    toolbox = Toolbox(reactor, AgentSpec("t", plugins=("a",)))
    command = reactor.commands.get_command("a.c0")
    assert toolbox.tool("a_0").parameters == command.options.parameters
    assert toolbox.tool("a_0").validator is command.validator
    for answer in (
        call(toolbox, "a_0", {"n": "one"}),
        json.loads(PageTools(reactor).call_json("a_0", '{"n": "one"}', None)),
    ):
        assert (
            answer["error"]["code"] == "invalid_arguments"
            and answer["error"]["problems"][0]["path"] == "$.n"
        )
        assert answer["error"]["message"].startswith(
            "The arguments for a_0 were refused and it did not run: $.n:"
        )


def test_a_synchronous_command_is_answered_at_once_and_an_async_one_as_an_awaitable():
    async def slow(args):
        await asyncio.sleep(0)
        return "later"

    reactor = Reactor()
    reactor.load_plugins([plugin("a"), plugin("s", tools=1, handler=slow)])
    tools = PageTools(reactor)
    assert json.loads(tools.call_json("a_0", "{}", None)) == {"ok": True, "result": {"tool": 0}}
    pending = tools.call_json("s_0", "", None)
    assert inspect.isawaitable(pending)
    assert json.loads(asyncio.run(_await(pending))) == {"ok": True, "result": "later"}


def test_a_burst_of_loads_and_unloads_is_one_notification_each_with_what_changed():
    async def scenario():
        reactor = Reactor()
        reactor.load_plugins([plugin("base")])
        told: list[dict] = []
        commands: list[int] = []
        notices = watch_changes(
            reactor,
            bundles=lambda text, number: told.append(json.loads(text)),
            commands=lambda number: commands.append(number),
        )
        for index in range(100):
            reactor.load_plugin(plugin(f"p{index}"))
        assert notices.covering() == 1  # the notice still to come
        await asyncio.sleep(0)  # one turn of the loop: the notice is sent on the next
        assert len(told) == 1 and commands == [1] and notices.covering() == 1
        assert [b["id"] for b in told[0]["added"]] == [f"p{i}" for i in range(100)] and told[0][
            "removed"
        ] == []
        for index in range(50):
            reactor.unload_plugin(f"p{index}")
        await asyncio.sleep(0)  # one turn of the loop: the notice is sent on the next
        assert len(told) == 2 and told[1] == {"added": [], "removed": [f"p{i}" for i in range(50)]}
        assert commands == [1, 2]
        await asyncio.sleep(0)  # one turn of the loop: the notice is sent on the next
        assert len(told) == 2  # nothing changed: nothing told

    asyncio.run(scenario())


def test_a_delta_says_a_bundle_replaced_in_a_burst_and_nothing_of_one_that_came_and_went():
    async def scenario():
        reactor = Reactor()
        reactor.load_plugins([plugin("a"), plugin("b")])
        told: list[dict] = []
        tell = lambda text, number: told.append(json.loads(text))  # noqa: E731
        notices = watch_changes(reactor, bundles=tell, commands=lambda number: None)
        reactor.unload_plugin("a")
        reactor.load_plugin(plugin("a", tools=3))  # the same bundle id, new tools
        reactor.load_plugin(plugin("brief"))
        reactor.unload_plugin("brief")
        await asyncio.sleep(0)  # one turn of the loop: the notice is sent on the next
        assert [t["removed"] for t in told] == [["a"]]
        assert [[(b["id"], len(b["commands"])) for b in t["added"]] for t in told] == [[("a", 3)]]
        notices.dispose()
        reactor.load_plugin(plugin("late"))
        await asyncio.sleep(0)
        assert len(told) == 1, "a disposed watch tells nothing more"

    asyncio.run(scenario())


def test_defining_a_page_plugin_answers_from_its_own_declaration():
    reactor = Reactor()
    declaration = {
        "name": "todo",
        "commands": [{"id": "todo.list", "execute": "function"}],
        "agentTools": {
            "id": "todo",
            "name": "To-do",
            "commands": [
                {"name": "todo_list", "command": "todo.list", "description": "List the to-dos."}
            ],
        },
    }

    async def run(command_id, args):
        return []

    answer = json.loads(
        define_plugin_json(reactor, json.dumps(declaration), run, lambda command_id: True)
    )
    assert answer == {
        "ok": True,
        "value": {"name": "todo", "commands": ["todo.list"], "tools": ["todo_list"]},
    }


def test_the_warm_up_before_ready_runs_a_call_and_leaves_the_pages_reactor_as_it_was():
    reactor = Reactor()
    reactor.load_plugins([plugin("notes")])
    heard = []
    watch_changes(reactor, bundles=lambda delta, n: heard.append(n), commands=heard.append)
    page_tools = PageTools(reactor)
    before = ([c.id for c in reactor.commands.list_commands()], page_tools.bundles_json())
    assert json.loads(warm_call_path(page_tools)) == {
        "ok": True,
        "result": {"id": "warm", "slide": 1},
    }
    assert ([c.id for c in reactor.commands.list_commands()], page_tools.bundles_json()) == before
    assert heard == [] and reactor.plugins == ["notes"], "the page heard of nothing"
    assert json.loads(page_tools.call_json("notes_1", '{"n": 2}', None)) == {
        "ok": True,
        "result": {"tool": 1, "n": 2},
    }
