"""Plugins written in the page (JavaScript declarations and inline Python), on CPython: the same
rules and refusals as any plugin, one registry, and nothing half-registered."""

import asyncio
import json

import pytest

from reactor import DeclarationError, PluginError, Reactor, agent_tool_bundles
from reactor.errors import PageScriptError, ProtocolError
from reactor.facade import (
    PageTools,
    define_plugin_json,
    find_commands_json,
    unload_plugin_json,
)
from reactor.page_plugins import define_script_plugin, python_page_plugin

TODO = {
    "name": "todo",
    "commands": [
        {"id": "todo.add", "label": "Add a to-do", "execute": "function"},
        {"id": "todo.list", "execute": "function", "isEnabled": "function"},
    ],
    "agentTools": {
        "id": "todo",
        "name": "To-do list",
        "commands": [
            {
                "name": "todo_add",
                "command": "todo.add",
                "description": "Add a to-do.",
                "sideEffect": "write",
                "parameters": {
                    "type": "object",
                    "properties": {"title": {"type": "string"}},
                    "required": ["title"],
                },
            },
            {
                "name": "todo_list",
                "command": "todo.list",
                "description": "List the to-dos.",
                "sideEffect": "read",
            },
        ],
    },
}


class FakeScript:
    """The page's JavaScript, as Python sees it through the bridge: handlers by command id."""

    def __init__(self):
        self.items = []
        self.enabled = True
        self.calls = []

    async def run(self, command_id, args):
        self.calls.append((command_id, args))
        if command_id == "todo.add":
            if args["title"] == "boom":
                raise PageScriptError("TypeError", "title.trim is not a function")
            self.items.append(args["title"])
            return len(self.items)
        return list(self.items)

    def is_enabled(self, command_id):
        return self.enabled


def declare(reactor, declaration, script=None):
    script = script or FakeScript()
    return json.loads(
        define_plugin_json(reactor, json.dumps(declaration), script.run, script.is_enabled)
    )


def with_tools(tools):
    return {**TODO, "agentTools": {**TODO["agentTools"], "commands": tools}}


def test_a_javascript_plugin_lands_in_the_one_registry_with_its_bundle():
    reactor = Reactor()
    answer = declare(reactor, TODO)
    assert answer == {
        "ok": True,
        "value": {
            "name": "todo",
            "commands": ["todo.add", "todo.list"],
            "tools": ["todo_add", "todo_list"],
        },
    }
    assert reactor.plugins == ["todo"]
    [bundle] = agent_tool_bundles(reactor)
    assert bundle["plugin"] == "todo" and bundle["toolset"] == ["todo_add", "todo_list"]
    command = reactor.commands.get_command("todo.add")
    assert command.options.label == "Add a to-do" and command.plugin == "todo"
    assert command.options.parameters == TODO["agentTools"]["commands"][0]["parameters"], (
        "its tool's schema"
    )


def test_the_listed_bundles_follow_every_load_and_unload_and_match_the_bundles():
    reactor = Reactor()
    bundles_json = PageTools(reactor).bundles_json
    assert json.loads(bundles_json()) == []
    declare(reactor, TODO)
    first = bundles_json()
    assert json.loads(first) == agent_tool_bundles(reactor) and bundles_json() is first, (
        "kept until a change"
    )
    declare(
        reactor,
        {
            **TODO,
            "name": "notes",
            "agentTools": {
                **TODO["agentTools"],
                "id": "notes",
                "commands": [
                    {
                        "name": "notes_list",
                        "command": "notes.list",
                        "description": "List the notes.",
                    }
                ],
            },
            "commands": [{"id": "notes.list", "execute": "function"}],
        },
    )
    assert (
        json.loads(bundles_json()) == agent_tool_bundles(reactor)
        and len(agent_tool_bundles(reactor)) == 2
    )
    unload_plugin_json(reactor, "todo")
    assert [b["id"] for b in json.loads(bundles_json())] == ["notes"]
    unload_plugin_json(reactor, "notes")
    assert json.loads(bundles_json()) == []


def test_a_javascript_handler_is_awaited_and_reads_the_page_at_call_time():
    reactor, script = Reactor(), FakeScript()
    declare(reactor, TODO, script)

    async def calls():
        assert await reactor.commands.execute("todo.add", {"title": "Milk"}) == 1
        script.items.append("Bread")  # the page changed after registration
        listed = json.loads(await PageTools(reactor).call_json("todo_list", "", None))
        failed = json.loads(
            await PageTools(reactor).call_json("todo_add", '{"title": "boom"}', None)
        )
        return listed, failed

    listed, failed = asyncio.run(calls())
    assert listed == {"ok": True, "result": ["Milk", "Bread"]}
    assert failed["error"] == {"code": "failed", "message": "title.trim is not a function"}


def test_a_command_without_a_tool_is_declared_by_itself_and_offered_to_no_model():
    reactor = Reactor()
    schema = {
        "type": "object",
        "properties": {"pin": {"type": "string"}},
        "additionalProperties": False,
    }
    commands = [
        *TODO["commands"],
        {"id": "todo.unlock", "label": "Unlock", "parameters": schema, "execute": "function"},
    ]
    assert declare(reactor, {**TODO, "commands": commands})["ok"]
    unlock = reactor.commands.get_command("todo.unlock").options
    assert (unlock.label, unlock.parameters) == ("Unlock", schema)
    [bundle] = agent_tool_bundles(reactor)
    assert [t["command"] for t in bundle["commands"]] == ["todo.add", "todo.list"]
    assert bundle["otherCommands"] == [
        {"command": "todo.unlock", "label": "Unlock", "description": "", "parameters": schema}
    ]


def test_is_enabled_asks_the_page_each_time():
    reactor, script = Reactor(), FakeScript()
    declare(reactor, TODO, script)
    script.enabled = False
    assert not reactor.commands.is_enabled("todo.list")
    assert reactor.commands.is_enabled("todo.add"), "only commands that declare isEnabled ask"


@pytest.mark.parametrize(
    "declaration, error_type, sentence",
    [
        (
            with_tools([{"name": "todo.add", "command": "todo.add", "description": "Add."}]),
            "DeclarationError",
            "'todo.add' is not a name a model can call",
        ),
        (
            with_tools([{"name": "todo_add", "command": "todo.add", "description": ""}]),
            "DeclarationError",
            "of tool 'todo_add' must say, in a sentence, what the tool does",
        ),
        (
            with_tools(
                [
                    {
                        "name": "todo_add",
                        "command": "todo.add",
                        "description": "Add.",
                        "sideEffect": "maybe",
                    }
                ]
            ),
            "DeclarationError",
            "must be one of none, read, write, destructive, not 'maybe'",
        ),
        (
            {**TODO, "commands": [{"id": "todo.add"}]},
            "DeclarationError",
            "Plugin 'todo': commands[0].execute of command 'todo.add' must be a function, "
            "not missing.",
        ),
        (
            {**TODO, "commands": [{"id": "todo.add", "execute": "string"}]},
            "DeclarationError",
            "must be a function, not string.",
        ),
        (
            {**TODO, "commands": [{"id": "todo.add", "execute": "function", "run": "function"}]},
            "DeclarationError",
            "commands[0].run is not a command field",
        ),
        (
            {**TODO, "commands": [{"id": "", "execute": "function"}]},
            "DeclarationError",
            "commands[0].id must be a non-empty",
        ),
        (
            {
                **TODO,
                "commands": [
                    {"id": "a", "execute": "function"},
                    {"id": "a", "execute": "function"},
                ],
            },
            "DeclarationError",
            "'a' is declared twice",
        ),
        (
            {
                **TODO,
                "commands": [{"id": "a", "execute": "function", "parameters": {"type": "objet"}}],
            },
            "DeclarationError",
            "commands[0].parameters of command 'a' are refused",
        ),
        (
            {**TODO, "commands": {"id": "a"}},
            "DeclarationError",
            "commands must be an array of commands, not an object.",
        ),
        (
            {**TODO, "commands": TODO["commands"][:1]},
            "DeclarationError",
            "Plugin 'todo': agentTools.commands[1].command calls the command 'todo.list', "
            "which the plugin's commands do not define; define it there.",
        ),
        (
            {
                **TODO,
                "commands": [
                    {**TODO["commands"][0], "parameters": {"type": "object"}},
                    TODO["commands"][1],
                ],
            },
            "DeclarationError",
            "Plugin 'todo': commands[0].parameters of command 'todo.add' is its tool's "
            "'todo_add': declare it once, in agentTools.",
        ),
        (
            {**TODO, "commands": [{**TODO["commands"][0], "label": "  "}, TODO["commands"][1]]},
            "DeclarationError",
            "commands[0].label of command 'todo.add' must be the words a palette shows for it.",
        ),
        ({**TODO, "tools": []}, "DeclarationError", "tools is not a plugin field"),
        ({**TODO, "name": ""}, "PluginError", "A plugin needs a non-empty name, not ''."),
        (
            {**TODO, "requires": "decks"},
            "DeclarationError",
            "requires must be an array of plugin names.",
        ),
        (
            {**TODO, "requires": ["decks"]},
            "PluginDependencyError",
            "Plugin 'todo' needs 'decks' loaded first.",
        ),
    ],
)
def test_a_misdeclared_javascript_plugin_is_refused_with_a_sentence_and_nothing_registered(
    declaration, error_type, sentence
):
    reactor = Reactor()
    answer = declare(reactor, declaration)
    assert answer["ok"] is False and answer["error"]["type"] == error_type
    assert sentence in answer["error"]["message"]
    assert (
        reactor.plugins == []
        and reactor.commands.list_commands() == []
        and agent_tool_bundles(reactor) == []
    )


def test_a_taken_command_id_rolls_the_whole_plugin_back():
    reactor = Reactor()
    declare(reactor, TODO)
    answer = declare(
        reactor,
        {
            "name": "copy",
            "commands": [
                {"id": "mine", "execute": "function"},
                {"id": "todo.add", "execute": "function"},
            ],
        },
    )
    assert answer["error"]["type"] == "PluginLoadError"
    assert "'todo.add' is already registered by plugin 'todo'" in answer["error"]["message"]
    assert not reactor.commands.has_command("mine") and reactor.plugins == ["todo"]


def test_unloading_takes_commands_and_bundle_and_names_who_went():
    reactor = Reactor()
    declare(reactor, TODO)
    declare(
        reactor,
        {
            "name": "todo-extra",
            "requires": ["todo"],
            "commands": [{"id": "x", "execute": "function"}],
        },
    )
    seen = []
    reactor.contributions.changed.connect(lambda point: seen.append(point.id))
    assert json.loads(unload_plugin_json(reactor, "todo")) == {
        "ok": True,
        "value": ["todo-extra", "todo"],
    }
    assert reactor.commands.list_commands() == [] and agent_tool_bundles(reactor) == []
    assert seen == ["reactor.agentTools"]
    missing = json.loads(unload_plugin_json(reactor, "todo"))
    assert missing["error"] == {
        "type": "PluginNotFoundError",
        "message": "No plugin 'todo' is loaded. Loaded: none.",
    }


def test_the_declaration_itself_must_be_an_object():
    with pytest.raises(DeclarationError, match="A plugin must be an object, not an array."):
        define_script_plugin([], FakeScript().run, FakeScript().is_enabled)


STATS = """
    from reactor import define_agent_tools, define_plugin

    TOOLS = define_agent_tools(id="stats", name="Stats", plugin="stats", commands=[
        {"name": "stats_count", "command": "stats.count", "description": "Count the to-dos."}])

    def register(context):
        async def count(args):
            return len(await context.reactor.commands.execute("todo.list"))
        context.register_bundle(TOOLS, {"stats.count": count})

    PLUGIN = define_plugin(name="stats", register=register)
"""


def test_an_inline_python_plugin_is_indented_code_defining_plugin_and_calls_javascript_commands():
    reactor, script = Reactor(), FakeScript()
    report = reactor.load_plugins([python_page_plugin(STATS, "#stats")])
    declare(reactor, TODO, script)
    script.items += ["a", "b"]
    assert report.loaded == ["stats"]
    assert json.loads(asyncio.run(PageTools(reactor).call_json("stats_count", "{}", None))) == {
        "ok": True,
        "result": 2,
    }


@pytest.mark.parametrize(
    "code, sentence",
    [
        (
            "x = 1",
            "The page's Python plugin #p must define PLUGIN = define_plugin(...), not nothing.",
        ),
        ("PLUGIN = 3", "must define PLUGIN = define_plugin(...), not int."),
        ("PLUGIN = (", "The page's Python plugin #p failed to run: SyntaxError"),
        (
            "from reactor import define_agent_tools\ndefine_agent_tools(id='t', name='T', "
            "plugin='p', commands=["
            "{'name': 'a.b', 'command': 'c', 'description': 'd'}])",
            "failed to run: DeclarationError: AgentTools bundle 't': commands[0].name 'a.b' "
            "is not a name a model can call",
        ),
    ],
)
def test_a_broken_inline_python_plugin_is_refused_with_a_sentence(code, sentence):
    with pytest.raises(PluginError) as refused:
        python_page_plugin(code, "#p")
    assert sentence in str(refused.value) and refused.value.plugin == "#p"


def test_a_palette_finds_the_commands_it_draws_and_how_many_match():
    reactor = Reactor()
    for index in range(30):
        command = {"id": f"p{index}.go", "label": f"Go {index}", "execute": "function"}
        declare(reactor, {"name": f"p{index}", "commands": [command]})

    def find(words, limit, include=()):
        found = json.loads(find_commands_json(reactor, words, limit, list(include)))
        return [c["id"] for c in found["commands"]], found["matching"]

    assert find("", 3) == (["p0.go", "p1.go", "p2.go"], 30)
    assert find("GO 2", 2) == (["p2.go", "p20.go"], 11)  # by id or label, any case
    included = ["p25.go", "p25.go", "p3.go", "nope"]  # once each, if it exists and matches
    assert find("go 2", 2, included) == (["p2.go", "p20.go", "p25.go"], 11)
    assert find("p7.", 5) == (["p7.go"], 1)
    assert find("nothing", 5) == ([], 0)
    described = json.loads(find_commands_json(reactor, "p1.go", 1))["commands"][0]
    assert described == json.loads(find_commands_json(reactor, "", 30))["commands"][1]
    assert described["label"] == "Go 1" and described["available"] is True
    for words, limit, include, sentence in [
        (None, 5, [], "The words to find must be text, not null."),
        ("", -1, [], "The limit must be a whole number of commands, not -1."),
        ("", "5", [], "The limit must be a whole number of commands, not '5'."),
        ("", 5, "p1.go", "The commands to include must be a list of command ids, not a string."),
    ]:
        with pytest.raises(ProtocolError, match=sentence):
            find_commands_json(reactor, words, limit, include)
