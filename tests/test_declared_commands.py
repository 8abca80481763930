"""A plugin's commands are declared once, in its AgentTools bundle: `register_bundle` registers
each from the bundle, with the handler the plugin gives, and refuses a handler missing or extra
by name, as pluggy checks hook implementations when a plugin is registered."""

import json

import pytest

from reactor import (
    CommandOptions,
    DeclarationError,
    InvalidArgumentsError,
    PluginLoadError,
    Reactor,
    agent_tool_bundles,
    define_agent_tools,
    define_plugin,
)
from reactor.facade import PageTools, commands_json
from reactor.host import EVERY_PLUGIN, AgentSpec, Toolbox

TEXT = {
    "type": "object",
    "properties": {"text": {"type": "string", "minLength": 1}},
    "required": ["text"],
}
NOTES = define_agent_tools(
    id="notes",
    name="Notes",
    plugin="notes",
    commands=[
        {
            "name": "notes_add",
            "command": "notes.add",
            "label": "Notes: Add",
            "description": "Add a note.",
            "parameters": TEXT,
        },
        {
            "name": "notes_count",
            "command": "notes.count",
            "description": "Count the notes.",
            "sideEffect": "read",
        },
    ],
    other_commands=[
        {"command": "notes.clear", "label": "Notes: Clear all", "description": "Forget every note."}
    ],
)


def notes_plugin(handlers=None, bundle=NOTES):
    notes = []
    handlers = handlers or {
        "notes.add": lambda args: notes.append(args["text"]) or len(notes),
        "notes.count": lambda args: len(notes),
        "notes.clear": lambda args: notes.clear(),
    }
    return define_plugin(
        name="notes", register=lambda context: context.register_bundle(bundle, handlers)
    )


def loaded(plugin):
    reactor = Reactor()
    report = reactor.load_plugins([plugin])
    return reactor, report


def test_each_command_is_registered_with_its_bundle_s_label_description_and_schema():
    reactor, report = loaded(notes_plugin())
    assert report.loaded == ["notes"]
    added = reactor.commands.get_command("notes.add")
    assert (added.options.label, added.options.description, added.options.parameters) == (
        "Notes: Add",
        "Add a note.",
        TEXT,
    )
    assert added.plugin == "notes"
    assert reactor.commands.execute("notes.add", {"text": "milk"}).result() == 1
    with pytest.raises(InvalidArgumentsError, match="'text' is a required property"):
        reactor.commands.execute("notes.add", {}).result()


def test_a_command_declared_without_parameters_takes_no_arguments_for_a_person_or_a_model():
    reactor, _ = loaded(notes_plugin())
    with pytest.raises(InvalidArgumentsError, match="Additional properties are not allowed"):
        reactor.commands.execute("notes.count", {"all": True}).result()
    refused = json.loads(PageTools(reactor).call_json("notes_count", '{"all": true}', None))
    assert refused["error"]["code"] == "invalid_arguments"
    tool = Toolbox(reactor, AgentSpec("t", plugins=(EVERY_PLUGIN,))).tool("notes_count")
    assert tool.parameters == {"type": "object", "properties": {}, "additionalProperties": False}, (
        "the model sees that"
    )


def test_a_command_without_a_tool_is_registered_and_listed_but_offered_to_no_model():
    reactor, _ = loaded(notes_plugin())
    listed = {c["id"]: c for c in json.loads(commands_json(reactor))}
    assert listed["notes.clear"]["label"] == "Notes: Clear all"
    assert reactor.commands.execute("notes.clear").result() is None
    toolbox = Toolbox(reactor, AgentSpec("t", plugins=(EVERY_PLUGIN,)))
    assert [t.name for t in toolbox.tools()] == ["notes_add", "notes_count"]
    assert [t["name"] for b in agent_tool_bundles(reactor) for t in b["commands"]] == [
        "notes_add",
        "notes_count",
    ]


def test_a_bundle_of_commands_that_are_no_tool_offers_no_bundle_to_the_models():
    only_commands = define_agent_tools(
        id="panel",
        name="Panel",
        plugin="panel",
        commands=[],
        other_commands=[{"command": "panel.open"}],
    )
    reactor, report = loaded(
        define_plugin(
            name="panel",
            register=lambda context: context.register_bundle(
                only_commands, {"panel.open": lambda a: 1}
            ),
        )
    )
    assert report.loaded == ["panel"] and reactor.commands.has_command("panel.open")
    assert agent_tool_bundles(reactor) == []


def test_a_declared_command_without_a_handler_is_refused_by_name_and_nothing_is_registered():
    reactor, report = loaded(notes_plugin({"notes.add": lambda args: 1}))
    refusal = report.failed["notes"]
    assert isinstance(refusal, PluginLoadError) and isinstance(refusal.cause, DeclarationError)
    assert str(refusal.cause) == (
        "AgentTools bundle 'notes' declares the command 'notes.count', but no handler was "
        "given for it (nor for 'notes.clear')."
    )
    assert reactor.commands.list_commands() == [] and agent_tool_bundles(reactor) == []


def test_a_handler_for_a_command_the_bundle_does_not_declare_is_refused_by_name():
    handlers = {
        "notes.add": print,
        "notes.count": print,
        "notes.clear": print,
        "notes.cleer": print,
    }
    reactor, report = loaded(notes_plugin(handlers))
    assert str(report.failed["notes"].cause) == (
        "AgentTools bundle 'notes' declares no command 'notes.cleer', yet a handler was given "
        "for it. Did you mean 'notes.clear'? Declare it in the bundle, or drop the handler."
    )
    assert reactor.commands.list_commands() == [] and agent_tool_bundles(reactor) == []


def test_a_handler_may_say_when_it_runs_but_not_what_the_bundle_declares():
    gated = CommandOptions(
        lambda args: 0, is_enabled=lambda args: False, disabled_reason="the notes are locked."
    )
    reactor, report = loaded(
        notes_plugin({"notes.add": print, "notes.count": gated, "notes.clear": print})
    )
    assert not reactor.commands.is_enabled("notes.count")
    assert reactor.commands.get_command("notes.count").options.description == "Count the notes."
    worded = CommandOptions(print, label="Count")
    _, refused = loaded(
        notes_plugin({"notes.add": print, "notes.count": worded, "notes.clear": print})
    )
    assert "declares the label of 'notes.count'; its handler may not say it again." in str(
        refused.failed["notes"]
    )


def test_unloading_the_plugin_takes_its_commands_and_its_tools():
    reactor, _ = loaded(notes_plugin())
    reactor.unload_plugin("notes")
    assert reactor.commands.list_commands() == [] and agent_tool_bundles(reactor) == []


@pytest.mark.parametrize(
    ("other_commands", "said"),
    [
        ([{"command": "notes.add"}], "otherCommands[0].command 'notes.add' is declared twice"),
        ([{"command": " "}], "otherCommands[0].command must be a command id, not ' '"),
        ([7], "otherCommands[0] must be an object, not int"),
        (
            [{"command": "notes.x", "name": "notes_x"}],
            "otherCommands[0].name is not a field of a command without a tool",
        ),
        (
            [{"command": "notes.x", "label": ""}],
            "otherCommands[0].label of command 'notes.x' must be the words",
        ),
        (
            [{"command": "notes.x", "parameters": {"type": "array"}}],
            "otherCommands[0].parameters of command 'notes.x'",
        ),
    ],
)
def test_a_command_without_a_tool_is_checked_as_a_tool_is(other_commands, said):
    with pytest.raises(DeclarationError, match=said.replace("[", r"\[").replace("]", r"\]")):
        define_agent_tools(
            id="notes",
            name="Notes",
            plugin="notes",
            commands=[{"name": "notes_add", "command": "notes.add", "description": "Add a note."}],
            other_commands=other_commands,
        )
