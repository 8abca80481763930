import asyncio

import pytest

from reactor import (
    CommandFailedError,
    CommandNotFoundError,
    CommandOptions,
    CommandRegistry,
    CommandUnavailableError,
    DeclarationError,
    DuplicateCommandError,
    InvalidArgumentsError,
)


@pytest.fixture
def registry():
    return CommandRegistry()


def run(awaitable):
    async def answer():
        return await awaitable

    return asyncio.run(answer())


def test_execute_returns_exactly_what_a_sync_handler_returned(registry):
    answer = {"decks": [1, 2]}
    registry.register_command("x.list", lambda args: answer)
    assert run(registry.execute("x.list")) is answer


def test_execute_awaits_an_async_handler_and_passes_the_arguments(registry):
    async def echo(args):
        await asyncio.sleep(0)
        return args["text"] * 2

    registry.register_command("x.echo", echo)
    assert run(registry.execute("x.echo", {"text": "ab"})) == "abab"


def test_a_handler_that_returns_nothing_answers_none(registry):
    registry.register_command("x.noop", lambda args: None)
    assert run(registry.execute("x.noop", {})) is None


def test_a_duplicate_id_is_refused_and_the_first_handler_stays(registry):
    registry.register_command("x.a", lambda args: "first", plugin="one")
    with pytest.raises(DuplicateCommandError, match="'x.a' is already registered by plugin 'one'"):
        registry.register_command("x.a", lambda args: "second")
    assert run(registry.execute("x.a")) == "first"


def test_disposing_removes_exactly_that_registration_and_is_idempotent(registry):
    first = registry.register_command("x.a", lambda args: 1)
    first.dispose()
    second = registry.register_command("x.a", lambda args: 2)
    first.dispose()
    assert first.is_disposed and not second.is_disposed
    assert run(registry.execute("x.a")) == 2


def test_an_unknown_id_is_rejected_naming_the_id_and_what_exists(registry):
    registry.register_command("x.a", lambda args: 1)
    with pytest.raises(
        CommandNotFoundError,
        match=r"There is no command 'x\.b'\. Did you mean 'x\.a'\? Registered commands: x\.a",
    ) as info:
        run(registry.execute("x.b"))
    assert info.value.command_id == "x.b"


def test_an_unavailable_command_is_listed_but_refused(registry):
    ran = []
    options = CommandOptions(
        ran.append, is_enabled=lambda args: False, disabled_reason="open a deck first."
    )
    registry.register_command("x.next", options)
    assert [c.id for c in registry.list_commands()] == ["x.next"]
    assert registry.list_commands()[0].describe()["available"] is False
    with pytest.raises(CommandUnavailableError, match="unavailable right now: open a deck first."):
        run(registry.execute("x.next"))
    assert ran == []


def test_a_handler_exception_surfaces_with_its_own_sentence_and_cause(registry):
    def fail(args):
        raise ValueError("The deck has slides 1 to 5; there is no slide 7.")

    registry.register_command("x.go", fail)
    with pytest.raises(
        CommandFailedError, match="^The deck has slides 1 to 5; there is no slide 7.$"
    ) as info:
        run(registry.execute("x.go"))
    assert isinstance(info.value.cause, ValueError)


def test_an_async_handler_exception_is_wrapped_the_same_way(registry):
    async def fail(args):
        raise LookupError("no such thing")

    registry.register_command("x.go", fail)
    with pytest.raises(CommandFailedError, match="no such thing"):
        run(registry.execute("x.go"))


def test_a_key_error_reads_as_a_sentence_not_a_bare_key(registry):
    registry.register_command("x.go", lambda args: args["id"])
    with pytest.raises(CommandFailedError, match="failed: there is no 'id'"):
        run(registry.execute("x.go"))


def test_arguments_are_validated_against_the_declared_schema_with_paths(registry):
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "slide": {"type": "integer", "minimum": 1}},
        "required": ["id"],
        "additionalProperties": False,
    }
    registry.register_command("x.open", CommandOptions(lambda args: args, parameters=schema))
    with pytest.raises(InvalidArgumentsError) as info:
        run(registry.execute("x.open", {"slide": 0, "made_up": True}))
    paths = [p["path"] for p in info.value.problems]
    assert paths == ["$", "$", "$.slide"]
    assert "'id' is a required property" in str(info.value)
    assert "made_up" in str(info.value)
    assert run(registry.execute("x.open", {"id": "a", "slide": 2})) == {"id": "a", "slide": 2}


@pytest.mark.parametrize("hostile", ["{}", ["id"], 7, "x" * 10_000])
def test_arguments_that_are_not_an_object_are_refused(registry, hostile):
    registry.register_command("x.a", lambda args: 1)
    with pytest.raises(InvalidArgumentsError, match="must be an object"):
        run(registry.execute("x.a", hostile))


def test_a_command_with_a_broken_schema_is_refused_at_registration(registry):
    with pytest.raises(DeclarationError, match='top-level "type" must be "object"') as refused:
        registry.register_command("x.a", CommandOptions(lambda a: 1, parameters={"type": "string"}))
    assert refused.value.field == "parameters" and not registry.has_command("x.a")


@pytest.mark.parametrize(
    ("id", "execute", "field"),
    [
        ("", lambda a: 1, "id"),
        ("  ", lambda a: 1, "id"),
        (None, lambda a: 1, "id"),
        ("x.a", "not a function", "execute"),
    ],
)
def test_an_empty_id_or_a_handler_that_is_no_function_is_a_declaration_error(
    registry, id, execute, field
):
    with pytest.raises(DeclarationError) as refused:
        registry.register_command(id, execute, plugin="notes")
    assert refused.value.field == field and refused.value.owner == "notes"
    assert registry.list_commands() == []


def test_subscribers_are_told_when_commands_come_and_go(registry):
    seen = []
    registry.changed.connect(lambda change: seen.append((change.kind, change.command_id)))
    registration = registry.register_command("x.a", lambda a: 1)
    registration.dispose()
    registration.dispose()
    assert seen == [("added", "x.a"), ("removed", "x.a")]


def test_a_sync_handler_s_answer_is_read_at_once_without_an_event_loop(registry):
    registry.register_command("x.a", lambda a: a.get("n", 0) + 1)
    assert registry.execute("x.a", {"n": 41}).result() == 42
    missing = registry.execute("x.b")  # a failure waits for its reader too: execute never raises
    with pytest.raises(CommandNotFoundError, match="There is no command 'x.b'"):
        missing.result()


def test_is_enabled_asks_the_command_with_the_arguments_of_the_call(registry):
    asked = []

    def only_small(args):
        asked.append(args)
        return args.get("n", 0) < 10

    registry.register_command(
        "x.a",
        CommandOptions(lambda a: a["n"], is_enabled=only_small, disabled_reason="n is too big."),
    )
    registry.register_command("x.free", lambda a: 1)
    assert (
        registry.is_enabled("x.a", {"n": 3}) is True
        and registry.is_enabled("x.a", {"n": 30}) is False
    )
    assert registry.is_enabled("x.free") is True and registry.is_enabled("x.none") is False
    assert run(registry.execute("x.a", {"n": 3})) == 3
    with pytest.raises(CommandUnavailableError, match="unavailable right now: n is too big."):
        run(registry.execute("x.a", {"n": 30}))
    assert asked == [{"n": 3}, {"n": 30}, {"n": 3}, {"n": 30}]


def test_the_executed_signal_tells_each_run_with_its_answer_or_its_error(registry):
    async def later(args):
        return args["n"] * 2

    def broken(args):
        raise ValueError("The deck has no slide 7.")

    registry.register_command("x.sync", lambda a: a["n"] + 1)
    registry.register_command("x.async", later)
    registry.register_command("x.broken", broken)
    registry.register_command("x.closed", CommandOptions(lambda a: 1, is_enabled=lambda a: False))
    told = []
    listening = registry.executed.connect(
        lambda ran: told.append((ran.command_id, ran.args, ran.result, ran.error))
    )
    assert registry.execute("x.sync", {"n": 1}).result() == 2
    assert run(registry.execute("x.async", {"n": 4})) == 8
    with pytest.raises(CommandFailedError):
        run(registry.execute("x.broken"))
    with pytest.raises(CommandUnavailableError):
        # refused before its handler ran: nothing ran, nothing told
        run(registry.execute("x.closed"))
    assert told[:2] == [("x.sync", {"n": 1}, 2, None), ("x.async", {"n": 4}, 8, None)]
    assert (
        told[2][0] == "x.broken"
        and str(told[2][3]) == "The deck has no slide 7."
        and len(told) == 3
    )
    listening.dispose()
    registry.execute("x.sync", {"n": 1})
    assert len(told) == 3


def test_a_listener_that_raises_does_not_stop_registration(registry, caplog):
    registry.changed.connect(lambda change: 1 / 0)
    seen = []
    registry.changed.connect(seen.append)
    registry.register_command("x.a", lambda a: 1)
    assert len(seen) == 1 and registry.has_command("x.a")
    assert "listener failed" in caplog.text


def test_a_huge_argument_is_not_echoed_back_whole(registry):
    schema = {"type": "object", "properties": {"body": {"type": "string", "maxLength": 10}}}
    registry.register_command("x.a", CommandOptions(lambda args: 1, parameters=schema))
    with pytest.raises(InvalidArgumentsError) as info:
        run(registry.execute("x.a", {"body": "y" * 20_000}))
    assert len(str(info.value)) < 400
    assert info.value.problems[0]["message"].endswith("is too long")


def test_an_unknown_command_suggests_the_closest_ones():
    registry = CommandRegistry()
    for id in ("decks.goToSlide", "decks.nextSlide", "decks.open", "cms.publishSitePage"):
        registry.register_command(id, lambda args: None)
    with pytest.raises(
        CommandNotFoundError,
        match=r"There is no command 'decks\.goTo'\. Did you mean 'decks\.goToSlide'\?",
    ):
        registry.get_command("decks.goTo")
    with pytest.raises(CommandNotFoundError, match=r"Did you mean 'decks\.nextSlide'\?"):
        registry.get_command("decks.nextslide")
    with pytest.raises(CommandNotFoundError) as far:
        registry.get_command("zzz")
    assert "Did you mean" not in str(far.value)
