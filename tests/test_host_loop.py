"""The chat loop against a real Reactor: admission, approval, stop, steps, arguments, the scripted
model."""

import asyncio
import json

import pytest
from conftest import DECK_ID, DECK_OPEN, decks_bundle

from reactor import (
    AbortedError,
    AgentTools,
    CancelToken,
    CommandOptions,
    DeclarationError,
    Reactor,
    ReactorError,
    define_agent_tools,
    define_plugin,
)
from reactor.host import (
    AgentSpec,
    ChatLoop,
    HostError,
    ModelTurn,
    ProviderError,
    ScriptedModel,
    Toolbox,
    ToolCall,
    ToolError,
)

DECKS = [
    {"id": "quarterly-review", "title": "Quarterly review", "slides": 6},
    {"id": "team-offsite", "title": "Team offsite", "slides": 3},
]
TOOLSET = [
    "decks_list_decks",
    "decks_open",
    "decks_next_slide",
    "decks_present",
    "decks_delete",
    "decks_wait",
    "decks_fail",
    "decks_refuse",
    "decks_disabled",
    "decks_missing",
]
DECKS_BUNDLE = decks_bundle(*TOOLSET, "decks_hidden", toolset=TOOLSET)
CMS_BUNDLE = define_agent_tools(
    id="cms",
    name="CMS",
    plugin="cms",
    commands=[
        {"name": "cms_list_pages", "command": "cms.listPages", "description": "List the pages."},
        {
            "name": "cms_publish_site_page",
            "command": "cms.publish",
            "description": "Publish a page.",
            "parameters": {
                "type": "object",
                "properties": {"page_id": {"type": "string"}},
                "required": ["page_id"],
            },
        },
    ],
)
LEVELS = {
    "decks_list_decks": "read",
    "decks_open": "none",
    "decks_next_slide": "none",
    "decks_present": "none",
    "decks_wait": "none",
    "decks_fail": "none",
    "decks_refuse": "none",
    "decks_disabled": "none",
    "decks_missing": "none",
    "decks_delete": "destructive",
    "cms_list_pages": "read",
}


class Page:
    """The page state the deck commands change, so a test can see each call's effect."""

    def __init__(self):
        self.open = None
        self.slide = 0
        self.presenting = False
        self.deleted = []
        self.published = []
        self.release = None  # an asyncio.Event decks.wait waits for
        self.waiting = None  # an asyncio.Event decks.wait sets as it starts waiting
        self.cancelled = False


def reactor_with(page, *, cms=True):
    def decks(context):
        def open_deck(args):
            if args["id"] not in {d["id"] for d in DECKS}:
                raise ValueError(
                    f"There is no deck {args['id']!r}; ids come from decks_list_decks."
                )
            page.open, page.slide = args["id"], args.get("slide", 1)
            return {"open": page.open, "slide": page.slide}

        def next_slide(args):
            if page.open is None:
                raise ValueError("No deck is open; open one with decks_open.")
            page.slide += 1
            return {"slide": page.slide}

        async def wait(args):
            if page.waiting is not None:
                page.waiting.set()
            try:
                await page.release.wait()
            except asyncio.CancelledError:
                page.cancelled = True
                raise
            return "projector ready"

        def refuse(args):
            raise ToolError("unavailable", "The projector is off.", retry=False)

        # Registered one by one beside the bundle, not with it, so one of its tools can lack its
        # command (decks_missing): what a host meets when a command is gone.
        context.contribute(AgentTools, DECKS_BUNDLE, id="decks")
        context.register_command("decks.listDecks", lambda args: DECKS)
        context.register_command("decks.hidden", lambda args: DECKS)
        context.register_command("decks.open", open_deck)
        context.register_command("decks.nextSlide", next_slide)
        context.register_command("decks.present", lambda args: setattr(page, "presenting", True))
        context.register_command("decks.delete", lambda args: page.deleted.append(args["id"]))
        context.register_command("decks.wait", wait)
        context.register_command("decks.fail", lambda args: {}["nope"])
        context.register_command("decks.refuse", refuse)
        never = CommandOptions(
            lambda args: 1, is_enabled=lambda args: False, disabled_reason="no deck is open."
        )
        context.register_command("decks.disabled", never)

    def cms_register(context):
        pages = [{"id": "p-7", "title": "Pricing", "status": "draft"}]
        handlers = {
            "cms.listPages": lambda args: pages,
            "cms.publish": lambda args: page.published.append(args["page_id"]),
        }
        context.register_bundle(CMS_BUNDLE, handlers)

    reactor = Reactor()
    reactor.load_plugin(define_plugin(name="decks", register=decks))
    if cms:
        reactor.load_plugin(define_plugin(name="cms", register=cms_register))
    return reactor


class Script:
    """A Model answering with prepared turns (or coroutines making them); it records each
    request."""

    label = "test script"

    def __init__(self, *turns):
        self.turns = list(turns)
        self.requests = []

    async def complete(self, request, signal):
        self.requests.append(request)
        if not self.turns:
            return ModelTurn("All done.")
        turn = self.turns.pop(0)
        return await turn(request, signal) if callable(turn) else turn


def calls(*specs):
    return ModelTurn(
        "",
        tuple(ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(specs)),
        "tool_use",
    )


def chat(model, page=None, *, plugins=("decks",), handlers=None, events=None, **options):
    page = page or Page()
    toolbox = Toolbox(
        reactor_with(page),
        AgentSpec("presenter", "Help with decks.", tuple(plugins)),
        handlers=handlers,
        side_effects=LEVELS,
    )
    return ChatLoop(
        model, toolbox, on_event=events.append if events is not None else None, **options
    )


def results(loop):
    return [m["result"] for m in loop.history if m["role"] == "tool"]


def codes(loop):
    return [r["error"]["code"] if not r["ok"] else "ok" for r in results(loop)]


# Admission


def test_only_the_toolset_of_the_specs_plugins_is_offered_to_the_model():
    model = Script()
    asyncio.run(chat(model).send("hello"))
    offered = [tool.name for tool in model.requests[0].tools]
    assert "decks_open" in offered and "decks_hidden" not in offered
    assert not any(name.startswith("cms_") for name in offered)
    assert model.requests[0].system == "Help with decks."


def test_a_loop_of_no_steps_is_refused_as_a_settings_error():
    with pytest.raises(HostError, match="max_steps must be at least 1, not 0") as refused:
        chat(Script(), max_steps=0)
    assert isinstance(refused.value, ValueError) and isinstance(refused.value, ReactorError)


def test_a_tool_outside_the_admitted_set_cannot_be_called_even_when_the_model_names_it():
    page = Page()
    loop = chat(
        Script(
            calls(
                ("cms_publish_site_page", {"page_id": "p-7"}),
                ("decks_hidden", {}),
                ("made_up_tool", {}),
            )
        ),
        page,
    )
    asyncio.run(loop.send("publish it"))
    assert codes(loop) == ["not_admitted", "not_admitted", "unknown_tool"]
    assert page.published == []
    assert "decks_open" in results(loop)[0]["error"]["message"]  # it says what can be called


def test_an_agent_spec_names_plugins_and_refuses_tools():
    assert AgentSpec.from_dict({"name": "a", "plugins": ["decks"]}) == AgentSpec(
        "a", "", ("decks",)
    )
    with pytest.raises(DeclarationError, match="a spec names plugins"):
        AgentSpec.from_dict({"name": "a", "plugins": ["decks"], "tools": ["decks_open"]})


def test_a_host_handler_replaces_the_command_but_keeps_the_bundles_name_and_description():
    page, seen = Page(), []

    async def richer_open(args, signal):
        seen.append((args, signal.aborted))
        return {"opened": args["id"], "by": "host"}

    loop = chat(
        Script(calls(("decks_open", {"id": "team-offsite"}))),
        page,
        handlers={"decks_open": richer_open},
    )
    asyncio.run(loop.send("open it"))
    assert results(loop) == [{"ok": True, "result": {"opened": "team-offsite", "by": "host"}}]
    assert seen == [({"id": "team-offsite"}, False)] and page.open is None
    tool = next(t for t in loop.toolbox.tools() if t.name == "decks_open")
    assert (tool.description, tool.parameters) == ("Open a deck at a slide.", DECK_OPEN)


def test_a_command_result_and_a_command_returning_nothing_are_answered():
    page = Page()
    loop = chat(
        Script(
            calls(
                ("decks_list_decks", ""),
                ("decks_open", '{"id": "quarterly-review"}'),
                ("decks_present", None),
            )
        ),
        page,
    )
    outcome = asyncio.run(loop.send("go"))
    assert results(loop) == [
        {"ok": True, "result": DECKS},
        {"ok": True, "result": {"open": "quarterly-review", "slide": 1}},
        {"ok": True, "result": None, "note": "The command ran; it returns no value."},
    ]
    assert page.presenting and outcome.status == "done" and outcome.text == "All done."


def test_failures_of_commands_become_envelopes_with_their_code():
    loop = chat(
        Script(
            calls(
                ("decks_fail", {}),
                ("decks_refuse", {}),
                ("decks_disabled", {}),
                ("decks_missing", {}),
                ("decks_open", {"id": "nowhere"}),
            )
        )
    )
    asyncio.run(loop.send("try everything"))
    assert codes(loop) == ["failed", "unavailable", "unavailable", "unavailable", "failed"]
    refused, disabled, missing, nowhere = results(loop)[1:]
    assert refused["error"] == {
        "code": "unavailable",
        "message": "The projector is off.",
        "retry": False,
    }
    assert "no deck is open" in disabled["error"]["message"]
    assert "'decks.notRegistered' is not registered" in missing["error"]["message"]
    assert (
        nowhere["error"]["message"] == "There is no deck 'nowhere'; ids come from decks_list_decks."
    )


# Several calls, steps


def test_calls_of_one_turn_run_in_order_each_seeing_the_state_the_previous_left():
    events = []
    loop = chat(
        Script(
            calls(
                ("decks_open", {"id": "quarterly-review", "slide": 2}),
                ("decks_next_slide", {}),
                ("decks_next_slide", {}),
            )
        ),
        events=events,
    )
    asyncio.run(loop.send("two slides on"))
    assert [r["result"] for r in results(loop)] == [
        {"open": "quarterly-review", "slide": 2},
        {"slide": 3},
        {"slide": 4},
    ]
    assert [e.type for e in events] == ["message"] + [
        "tool_call.started",
        "tool_call.finished",
    ] * 3 + ["message"]
    assert [m["role"] for m in loop.history] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "tool",
        "assistant",
    ]


def test_the_model_sees_the_results_of_its_calls_in_the_next_step():
    model = Script(calls(("decks_list_decks", {})))
    asyncio.run(chat(model).send("list"))
    second = model.requests[1].messages
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "name": "decks_list_decks",
        "result": {"ok": True, "result": DECKS},
    }


def test_the_step_cap_stops_a_model_that_keeps_calling_and_answers_the_last_calls_unrun():
    page, events = Page(), []
    page.open = "quarterly-review"
    forever = [calls(("decks_next_slide", {})) for _ in range(10)]
    loop = chat(Script(*forever), page, max_steps=3, events=events)
    outcome = asyncio.run(loop.send("keep going"))
    assert (outcome.status, outcome.steps) == ("step_limit", 3)
    assert page.slide == 2  # two steps ran their call; the third was answered, not run
    assert codes(loop) == ["ok", "ok", "aborted"]
    assert "step limit of 3" in results(loop)[-1]["error"]["message"]
    assert events[-1].type == "stopped" and events[-1].data["step_limit"] is True


# Arguments


@pytest.mark.parametrize(
    "tool, raw, expected",
    [
        ("decks_present", "", "ok"),  # "" for a tool with no parameters
        ("decks_present", None, "ok"),  # null
        ("decks_present", "  ", "ok"),
        ("decks_open", '{"id": "team-offsite"}', "ok"),  # a JSON string
        # a JSON string of a JSON string
        ("decks_open", json.dumps('{"id": "team-offsite"}'), "ok"),
        ("decks_open", {"id": "team-offsite", "slide": 2}, "ok"),
        ("decks_open", '{"id": "team-offsite"', "not valid JSON"),  # cut short
        ("decks_open", "{id: team-offsite}", "not valid JSON"),
        ("decks_open", {"id": "team-offsite", "colour": "red"}, "'colour' was unexpected"),
        (
            "decks_open",
            {"id": "team-offsite", "slide": "4"},
            "$.slide: '4' is not of type 'integer'",
        ),
        ("decks_open", {"slide": 0}, "'id' is a required property"),
        ("decks_open", "", "'id' is a required property"),
        ("decks_open", ["team-offsite"], "expected a JSON object, got an array"),
        ("decks_open", "42", "expected a JSON object, got a number"),
    ],
)
def test_model_written_arguments_are_parsed_and_checked_before_the_command_runs(
    tool, raw, expected
):
    page = Page()
    loop = chat(Script(calls((tool, raw))), page)
    asyncio.run(loop.send("do it"))
    [result] = results(loop)
    if expected == "ok":
        assert result["ok"] is True
    else:
        assert result["error"]["code"] == "invalid_arguments"
        assert expected in result["error"]["message"]
        assert result["error"]["problems"] and all(
            {"path", "message"} <= set(p) for p in result["error"]["problems"]
        )
        assert "call it again" in result["error"]["message"]
        assert page.open is None


def test_calls_cut_off_by_the_token_limit_do_not_run():
    page = Page()
    cut = ModelTurn(
        "", (ToolCall("c", "decks_open", {"id": "team-offsite"}),), "max_tokens", "max_tokens"
    )
    loop = chat(Script(cut), page)
    asyncio.run(loop.send("open"))
    assert codes(loop) == ["invalid_arguments"] and page.open is None


# Approval


def approver(*answers):
    asked = []

    async def approve(request):
        asked.append(request)
        return answers[len(asked) - 1]

    approve.asked = asked
    return approve


def test_a_destructive_call_runs_once_approved_within_the_same_turn():
    page, events = Page(), []
    model = Script(calls(("decks_delete", {"id": "team-offsite"})))
    approve = approver("allow")
    asyncio.run(chat(model, page, approve=approve, events=events).send("delete it"))
    assert page.deleted == ["team-offsite"] and len(model.requests) == 2
    [request] = approve.asked
    assert (request.tool, request.arguments, request.side_effect) == (
        "decks_delete",
        {"id": "team-offsite"},
        "destructive",
    )
    assert "tool_call.approved" in [e.type for e in events]


def test_a_denied_call_does_not_run_and_the_model_is_told_so():
    page, events = Page(), []
    loop = chat(
        Script(calls(("decks_delete", {"id": "team-offsite"}))),
        page,
        approve=approver("deny"),
        events=events,
    )
    asyncio.run(loop.send("delete it"))
    assert page.deleted == [] and codes(loop) == ["denied"]
    assert "declined" in results(loop)[0]["error"]["message"]
    assert "tool_call.denied" in [e.type for e in events]


def test_always_allows_the_tool_for_the_rest_of_the_session_without_asking_again():
    page = Page()
    approve = approver("always")
    loop = chat(
        Script(
            calls(("decks_delete", {"id": "a"})),
            ModelTurn("ok"),
            calls(("decks_delete", {"id": "b"})),
        ),
        page,
        approve=approve,
    )
    asyncio.run(loop.send("delete a"))
    asyncio.run(loop.send("delete b"))
    assert page.deleted == ["a", "b"] and len(approve.asked) == 1


def test_without_anyone_to_ask_a_writing_tool_is_denied_and_reading_tools_still_run():
    page = Page()
    loop = chat(Script(calls(("decks_delete", {"id": "a"}), ("decks_list_decks", {}))), page)
    asyncio.run(loop.send("go"))
    assert codes(loop) == ["denied", "ok"] and page.deleted == []
    assert "could not ask" in results(loop)[0]["error"]["message"]


def test_an_answer_that_is_not_a_clear_yes_is_a_no():
    page = Page()
    loop = chat(Script(calls(("decks_delete", {"id": "a"}))), page, approve=approver("yes please"))
    asyncio.run(loop.send("go"))
    assert codes(loop) == ["denied"] and page.deleted == []


def test_an_approver_that_fails_denies_the_call_instead_of_running_it():
    async def broken(request):
        raise RuntimeError("the widget is gone")

    page = Page()
    loop = chat(Script(calls(("decks_delete", {"id": "a"}))), page, approve=broken)
    asyncio.run(loop.send("go"))
    assert codes(loop) == ["denied"] and page.deleted == []


def test_stop_while_the_person_is_asked_answers_the_call_as_aborted():
    async def scenario():
        asked = asyncio.Event()

        async def never_answers(request):
            asked.set()
            await asyncio.sleep(30)

        page = Page()
        loop = chat(Script(calls(("decks_delete", {"id": "a"}))), page, approve=never_answers)
        running = asyncio.ensure_future(loop.send("delete it"))
        await asked.wait()
        loop.stop()
        return loop, page, await running

    loop, page, outcome = asyncio.run(scenario())
    assert outcome.status == "stopped" and codes(loop) == ["aborted"] and page.deleted == []


def worded(**confirmations):
    """A reactor whose decks.delete (destructive) asks with `confirmations[id]`, by deck id."""

    bundle = define_agent_tools(
        id="decks",
        name="Decks",
        plugin="decks",
        commands=[
            {
                "name": "decks_delete",
                "command": "decks.delete",
                "label": "Delete Deck",
                "description": "Delete a deck.",
                "parameters": DECK_ID,
            }
        ],
    )

    def register(context):
        def question(args):
            return confirmations[args["id"]](args)

        delete = CommandOptions(lambda args: None, confirmation=question)
        context.register_bundle(bundle, {"decks.delete": delete})

    reactor = Reactor()
    reactor.load_plugin(define_plugin(name="decks", register=register))
    return Toolbox(reactor, AgentSpec("presenter", plugins=("decks",)), side_effects=LEVELS)


def test_a_commands_question_may_be_awaited_and_one_that_fails_asks_in_plain_words():
    async def titled(args):
        await asyncio.sleep(0)  # as a store that loads the deck's title first
        return "Delete the deck ‘Team offsite’?"

    async def broken(args):
        await asyncio.sleep(0)
        raise ConnectionError("the decks server cannot be reached")

    def sync_broken(args):
        raise KeyError("title")

    toolbox = worded(b=titled, c=broken, d=sync_broken, e=lambda args: "Delete ‘E’?")
    approve = approver("deny", "deny", "deny", "deny")
    deleting = [("decks_delete", {"id": i}) for i in "bcde"]
    loop = ChatLoop(Script(calls(*deleting)), toolbox, approve=approve)
    asyncio.run(loop.send("delete them"))
    assert [request.question for request in approve.asked] == [
        "Delete the deck ‘Team offsite’?",
        "Allow Delete Deck (id: c)?",
        "Allow Delete Deck (id: d)?",
        "Delete ‘E’?",
    ]
    assert codes(loop) == ["denied"] * 4


def test_stop_while_a_question_is_worded_answers_the_call_as_aborted_without_asking():
    async def scenario():
        wording, events = asyncio.Event(), []

        async def slow(args):
            wording.set()
            await asyncio.sleep(30)
            return "Delete?"

        approve = approver("allow")
        loop = ChatLoop(
            Script(calls(("decks_delete", {"id": "a"}))),
            worded(a=slow),
            approve=approve,
            on_event=events.append,
        )
        running = asyncio.ensure_future(loop.send("delete it"))
        await wording.wait()
        loop.stop()
        return loop, approve, events, await running

    loop, approve, events, outcome = asyncio.run(scenario())
    assert outcome.status == "stopped" and codes(loop) == ["aborted"]
    assert approve.asked == [] and "approval" not in [e.type for e in events]


# Stop


def test_stop_during_the_model_request_ends_the_turn_and_drops_its_answer():
    events = []
    started = asyncio.Event

    async def scenario():
        entered, answered = started(), started()

        async def slow(request, signal):
            entered.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                await asyncio.sleep(0)  # a model that answers anyway, after the stop
                answered.set()
                return calls(("decks_delete", {"id": "a"}))

        page = Page()
        loop = chat(Script(slow), page, events=events, approve=approver("allow"))
        running = asyncio.ensure_future(loop.send("hello"))
        await entered.wait()
        loop.stop("The person pressed stop.")
        outcome = await running
        await answered.wait()
        return loop, outcome, page

    loop, outcome, page = asyncio.run(scenario())
    assert outcome.status == "stopped"
    assert loop.history == [{"role": "user", "content": "hello"}] and page.deleted == []
    assert (
        events[-1].type == "stopped" and events[-1].data["reason"] == "You stopped the assistant."
    )
    assert not loop.running


def test_stop_during_a_tool_cancels_it_and_answers_the_remaining_calls_as_aborted():
    page = Page()

    async def scenario():
        page.release, page.waiting = asyncio.Event(), asyncio.Event()
        loop = chat(Script(calls(("decks_wait", {}), ("decks_present", {}))), page)
        running = asyncio.ensure_future(loop.send("wait then present"))
        await page.waiting.wait()
        loop.stop()
        return loop, await running

    loop, outcome = asyncio.run(scenario())
    assert outcome.status == "stopped" and page.cancelled and not page.presenting
    assert codes(loop) == ["aborted", "aborted"]
    # every call answered
    assert [m["role"] for m in loop.history] == ["user", "assistant", "tool", "tool"]


def test_a_tool_result_that_arrives_after_stop_is_dropped():
    running_now, returned = asyncio.Event(), asyncio.Event()

    async def stubborn(args, signal):
        # Ignores the cancellation and answers anyway, late.
        running_now.set()
        for _ in range(100):
            try:
                await asyncio.sleep(0.005)
            except asyncio.CancelledError:
                continue
        returned.set()
        return "late value"

    def stops_the_chat_then_answers(args, signal):
        loop.stop("stopped mid-call")
        return "also late"

    async def scenario():
        running = asyncio.ensure_future(loop.send("go"))
        await running_now.wait()
        loop.stop()
        outcome = await running
        await returned.wait()  # the stubborn handler has answered, late
        return outcome

    loop = chat(Script(calls(("decks_wait", {}))), handlers={"decks_wait": stubborn})
    assert asyncio.run(scenario()).status == "stopped"
    assert codes(loop) == ["aborted"] and "late value" not in json.dumps(loop.history)

    loop = chat(
        Script(calls(("decks_wait", {}))), handlers={"decks_wait": stops_the_chat_then_answers}
    )
    assert asyncio.run(loop.send("go")).status == "stopped"
    assert codes(loop) == ["aborted"] and "also late" not in json.dumps(loop.history)


def test_the_stop_reaches_a_host_handler_through_its_signal():
    heard, listening_now = [], asyncio.Event()

    async def listening(args, signal):
        signal.add_listener(heard.append)
        listening_now.set()
        await signal.wait()
        return "never used"

    async def scenario():
        running = asyncio.ensure_future(loop.send("go"))
        await listening_now.wait()
        loop.stop("enough")
        return await running

    loop = chat(Script(calls(("decks_wait", {}))), handlers={"decks_wait": listening})
    assert asyncio.run(scenario()).status == "stopped"
    assert heard == ["enough"]


def test_a_tool_that_takes_too_long_answers_timeout():
    page = Page()

    async def scenario():
        page.release = asyncio.Event()
        loop = chat(Script(calls(("decks_wait", {}))), page, tool_timeout=0.05)
        return loop, await loop.send("wait")

    loop, outcome = asyncio.run(scenario())
    assert outcome.status == "done" and codes(loop) == ["timeout"] and page.cancelled


def test_a_second_message_while_answering_is_refused_and_a_new_one_works_after_stop():
    async def scenario():
        asked = asyncio.Event()

        async def slow(request, signal):
            asked.set()
            await asyncio.sleep(30)

        loop = chat(Script(slow, ModelTurn("Back again.")))
        running = asyncio.ensure_future(loop.send("one"))
        await asked.wait()
        with pytest.raises(HostError, match="still answering"):
            await loop.send("two")
        loop.stop()
        await running
        return await loop.send("three")

    assert asyncio.run(scenario()).text == "Back again."


def test_a_provider_error_ends_the_turn_with_an_error_event():
    events = []

    async def failing(request, signal):
        raise ProviderError(
            "Anthropic answered 401 (authentication_error): invalid x-api-key. Check the API key.",
            provider="Anthropic",
            status=401,
            kind="authentication",
        )

    outcome = asyncio.run(chat(Script(failing), events=events).send("hi"))
    assert outcome.status == "error" and "Check the API key" in outcome.error
    assert events[-1].type == "error" and events[-1].data["kind"] == "authentication"


# The cancellation token


def test_a_cancel_token_aborts_once_and_tells_its_listeners_and_children():
    token, heard = CancelToken(), []
    token.add_listener(heard.append)
    removed = token.add_listener(lambda reason: heard.append("removed"))
    removed.dispose()
    child = token.child()
    token.abort("first")
    token.abort("second")
    assert token.aborted and token.reason == "first" and heard == ["first"]
    assert child.aborted and child.reason == "first"
    token.add_listener(heard.append)  # late listeners hear at once
    assert heard == ["first", "first"]
    with pytest.raises(AbortedError) as info:
        token.throw_if_aborted()
    assert info.value.reason == "first"


def test_a_child_token_aborts_alone_without_its_parent():
    parent = CancelToken()
    child = parent.child()
    child.abort("timeout")
    assert child.aborted and not parent.aborted


def test_race_returns_the_value_or_raises_when_aborted_first():
    async def scenario():
        token = CancelToken()
        assert await token.race(asyncio.sleep(0, "value")) == "value"
        cancelled = []

        async def forever():
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

        asyncio.get_running_loop().call_later(0.01, token.abort, "bye")
        with pytest.raises(AbortedError):
            await token.race(forever())
        await asyncio.sleep(0)
        assert await token.wait() == "bye"
        return cancelled

    assert asyncio.run(scenario()) == [True]


# The scripted model


def scripted(page=None, **options):
    return chat(
        ScriptedModel(),
        page or Page(),
        plugins=("decks", "cms"),
        approve=approver(*["allow"] * 5),
        **options,
    )


def test_the_scripted_model_lists_decks_with_the_list_tool():
    loop = scripted()
    outcome = asyncio.run(loop.send("list decks"))
    assert [m["tool_calls"][0]["name"] for m in loop.history if m.get("tool_calls")] == [
        "decks_list_decks"
    ]
    assert "Quarterly review (quarterly-review)" in outcome.text and outcome.steps == 2


def test_the_scripted_model_finds_a_deck_by_title_listing_first_when_it_must():
    page = Page()
    loop = scripted(page)
    asyncio.run(loop.send("Open deck Quarterly Review at slide 4"))
    assert (page.open, page.slide) == ("quarterly-review", 4)
    names = [c["name"] for m in loop.history for c in m.get("tool_calls") or []]
    assert names == ["decks_list_decks", "decks_open"]
    outcome = asyncio.run(loop.send("open the team offsite deck, then next slide and present"))
    assert (page.open, page.slide, page.presenting) == ("team-offsite", 2, True)
    later = [c["name"] for m in loop.history[4:] for c in m.get("tool_calls") or []]
    # the earlier listing was enough
    assert later == ["decks_open", "decks_next_slide", "decks_present"]
    assert outcome.status == "done" and outcome.steps == 2  # three calls in one turn


def test_the_scripted_model_publishes_a_page_found_by_its_title():
    page = Page()
    loop = scripted(page)
    outcome = asyncio.run(loop.send("publish the page about pricing"))
    assert page.published == ["p-7"] and "cms_publish_site_page: done." in outcome.text


def test_the_scripted_model_reports_failures_and_what_it_cannot_find():
    loop = scripted()
    # The reply is read by the person: the failure in their words, not the model's sentence.
    assert asyncio.run(loop.send("next slide")).text == "That did not work; its card says why."
    assert (
        "could not find a deck called “board meeting”"
        in asyncio.run(loop.send("open deck board meeting")).text
    )


def test_the_scripted_model_drives_the_real_decks_plugin():
    from reactor import MemoryPage
    from reactor_plugins.decks import DECKS_PLUGIN

    async def scenario():
        reactor = Reactor(services={"page": MemoryPage(allow_fullscreen=True)})
        reactor.load_plugin(DECKS_PLUGIN)
        for title in ("Quarterly review", "Team offsite"):
            await reactor.commands.execute(
                "decks.createDeck", {"title": title, "slides": [{"title": "S", "body": "x"}] * 5}
            )
        loop = ChatLoop(
            ScriptedModel(),
            Toolbox(reactor, AgentSpec("presenter", plugins=("decks",))),
            approve=approver(*["allow"] * 9),
        )
        listed = await loop.send("list decks")
        await loop.send("open deck team offsite at slide 2")
        moved = await loop.send("next slide then present")
        return listed, moved

    listed, moved = asyncio.run(scenario())
    # The cards show each call's line (the decks tools' summaries: "Decks (2): ‘Quarterly review’,
    # ‘Team offsite’."); the reply does not say it again, but what the person can say next: the
    # plugin's tool that shows a listed deck, as this model reads it.
    assert listed.text == "Say “open deck Quarterly review” to open one."
    assert moved.text == "Done."


def test_the_scripted_model_answers_what_it_can_do_when_nothing_matches():
    outcome = asyncio.run(scripted().send("make me a sandwich"))
    # Two sentences: what it cannot do and why, then three things to try with the tools it has.
    assert outcome.text == (
        "I cannot “make me a sandwich”: I am a scripted model, not an AI, and only understand "
        "short commands for this page's tools. Try “list decks”, “open deck <title> at slide 2” "
        "or “next slide”."
    )
    assert outcome.steps == 1


def test_an_unknown_tool_suggests_the_closest_name_and_lists_every_callable_tool():
    page = Page()
    loop = chat(
        Script(
            calls(
                ("decks_opne", {"id": "q3"}),
            )
        ),
        page,
    )
    asyncio.run(loop.send("open q3"))
    message = results(loop)[0]["error"]["message"]
    assert "There is no tool named 'decks_opne'; nothing ran. Did you mean 'decks_open'?" in message
    assert "Tools you can call: decks_list_decks, " in message and message.endswith(
        ", decks_missing."
    )
