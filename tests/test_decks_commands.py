"""The decks commands, run as a person or an agent runs them: through the reactor."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from conftest import bearer

import reactor_plugins.decks as decks_package
from reactor import (
    CommandFailedError,
    CommandUnavailableError,
    InvalidArgumentsError,
    MemoryPage,
    PluginLoadError,
    Reactor,
    agent_tool_bundles,
)
from reactor.facade import PageTools
from reactor.host import AgentSpec, ChatLoop, ModelTurn, Toolbox, ToolCall
from reactor.server.loopback import free_port
from reactor_plugins.decks import DECKS_AGENT_TOOLS, DECKS_PLUGIN

SEEDS = json.loads((Path(decks_package.__file__).parent / "seed.json").read_text(encoding="utf-8"))[
    "decks"
]
IDS = sorted(d["id"] for d in SEEDS)


def run(awaitable):
    async def answer():
        return await awaitable

    return asyncio.run(answer())


def start(page=None, api=None, seed=True):
    """A reactor with the decks plugin; with `seed`, the three demo decks created by command."""
    page = page or MemoryPage()
    reactor = Reactor(services={"page": page, "decks_api": api})
    assert reactor.load_plugins([DECKS_PLUGIN]).loaded == ["decks"]
    for spec in SEEDS if seed else ():
        run(reactor.commands.execute("decks.createDeck", spec))
    return reactor, page


def execute(reactor, command, args=None):
    return run(reactor.commands.execute(command, args))


def view(page):
    return page.views["decks"]


@pytest.fixture
def decks():
    return start()


# Registration -----------------------------------------------------------------------------


def test_every_tool_names_a_registered_command_with_the_tools_own_parameters(decks):
    reactor, _ = decks
    for tool in DECKS_AGENT_TOOLS["commands"]:
        command = reactor.commands.get_command(tool["command"])
        assert (command.options.label, command.options.description) == (
            tool["label"],
            tool["description"],
        )
        if "parameters" in tool:
            assert command.options.parameters == tool["parameters"]
            assert command.options.parameters["additionalProperties"] is False
        else:
            assert command.options.parameters == {
                "type": "object",
                "properties": {},
                "additionalProperties": False,
            }


def test_every_decks_command_is_a_tool_with_a_label(decks):
    reactor, _ = decks
    ids = {c.id for c in reactor.commands.list_commands() if c.plugin == "decks"}
    assert ids == {t["command"] for t in DECKS_AGENT_TOOLS["commands"]}
    assert len(ids) == 19
    assert all(reactor.commands.get_command(id).options.label.startswith("Decks: ") for id in ids)


def test_the_bundle_is_contributed_once_with_every_tool_granted(decks):
    reactor, _ = decks
    [bundle] = agent_tool_bundles(reactor)
    assert bundle == DECKS_AGENT_TOOLS
    assert bundle["toolset"] == [t["name"] for t in bundle["commands"]]
    assert all(name.startswith("decks_") for name in bundle["toolset"])


def test_unloading_the_plugin_removes_its_commands_and_tools(decks):
    reactor, _ = decks
    reactor.unload_plugin("decks")
    assert reactor.commands.list_commands() == [] and agent_tool_bundles(reactor) == []


def test_the_plugin_refuses_to_load_without_a_page_service():
    report = Reactor(services={}).load_plugins([DECKS_PLUGIN])
    assert isinstance(report.failed["decks"], PluginLoadError)
    assert "needs the page service" in str(report.failed["decks"])


# Screen commands --------------------------------------------------------------------------


def test_list_shows_the_decks_in_the_view_and_answers_them(decks):
    reactor, page = decks
    answer = execute(reactor, "decks.list")
    assert answer["shown"] == "list" and sorted(d["id"] for d in answer["decks"]) == IDS
    assert view(page)["decks"] == answer["decks"] and "deck" not in view(page)


def test_an_empty_list_says_there_are_no_decks():
    reactor, page = start(seed=False)
    assert execute(reactor, "decks.list")["decks"] == []
    assert view(page)["message"] == "There are no decks yet."


def test_open_shows_the_first_slide_and_answers_where_the_screen_is(decks):
    reactor, page = decks
    answer = execute(reactor, "decks.open", {"id": "quarterly-review"})
    assert answer == {
        "id": "quarterly-review",
        "title": "Quarterly review — Q3",
        "slide": 1,
        "of": 5,
        "slideTitle": "Q3 at a glance",
        "presenting": False,
    }
    state = view(page)
    assert (
        state["deck"]["id"] == "quarterly-review" and state["slide"] == 1 and "decks" not in state
    )
    assert state["deck"]["theme"] == "light"
    assert state["deck"]["slides"][0]["body"].startswith(
        "Revenue grew 18% quarter on quarter, ahead of the 12% plan."
    )


def test_open_at_a_slide_shows_that_slide(decks):
    reactor, page = decks
    assert (
        execute(reactor, "decks.open", {"id": "onboarding", "slide": 4})["slideTitle"]
        == "Days 3–4: ship something small"
    )
    assert view(page)["slide"] == 4


def test_opening_an_unknown_deck_names_the_decks_there_are(decks):
    reactor, page = decks
    with pytest.raises(CommandFailedError) as failed:
        execute(reactor, "decks.open", {"id": "nope"})
    assert str(failed.value) == f"There is no deck 'nope'. Decks: {', '.join(IDS)}."
    assert isinstance(failed.value.cause, LookupError)
    assert "decks" not in page.views


def test_an_agent_asking_for_an_unknown_deck_gets_not_found_with_the_decks_there_are(decks):
    reactor, _ = decks
    answer = json.loads(run(PageTools(reactor).call_json("decks_get_deck", '{"id": "nope"}', None)))
    assert answer["ok"] is False
    assert answer["error"] == {
        "code": "not_found",
        "message": f"There is no deck 'nope'. Decks: {', '.join(IDS)}.",
    }


@pytest.mark.parametrize(
    "tool, args, code, message",
    [
        (
            "decks_update_slide",
            {"id": "onboarding", "slide": 1},
            "invalid_arguments",
            "Say what to change: pass a new `title`, `body` or `notes`.",
        ),
        (
            "decks_update_deck",
            {"id": "onboarding"},
            "invalid_arguments",
            "Say what to change: pass a new `title`, `theme` or `slides`.",
        ),
        (
            "decks_print",
            {},
            "invalid_arguments",
            "Which deck? Pass its `id`, as listed by decks_list_decks, or open one first.",
        ),
        (
            "decks_insert_slide",
            {"id": "onboarding", "slide": 9, "title": "x", "body": ""},
            "invalid_arguments",
            "A new slide can take the numbers 1 to 6; there is no slide 9 to insert.",
        ),
        (
            "decks_get_slide",
            {"id": "onboarding", "slide": 9},
            "not_found",
            "The deck has slides 1 to 5; there is no slide 9.",
        ),
        (
            "decks_create_deck",
            {"id": "onboarding", "title": "Again"},
            "conflict",
            "There is already a deck 'onboarding'; choose another id, or change that deck with "
            "decks_update_deck.",
        ),
    ],
)
def test_a_refusal_reaches_the_model_with_the_code_it_can_act_on(decks, tool, args, code, message):
    reactor, _ = decks
    answer = json.loads(run(PageTools(reactor).call_json(tool, json.dumps(args), None)))
    assert answer["ok"] is False
    assert (answer["error"]["code"], answer["error"]["message"]) == (code, message)


def test_the_last_slide_kept_is_a_request_to_fix_not_a_failure(decks):
    reactor, _ = decks
    execute(reactor, "decks.createDeck", {"id": "one", "title": "One"})
    call = PageTools(reactor).call_json("decks_delete_slide", '{"id": "one", "slide": 1}', None)
    error = json.loads(run(call))["error"]
    assert error["code"] == "invalid_arguments" and "keeps at least one slide" in error["message"]


def test_opening_past_the_last_slide_says_which_slides_there_are(decks):
    reactor, _ = decks
    with pytest.raises(
        CommandFailedError, match=r"^The deck has slides 1 to 5; there is no slide 7\.$"
    ):
        execute(reactor, "decks.open", {"id": "onboarding", "slide": 7})


@pytest.mark.parametrize(
    "command", ["decks.goToSlide", "decks.nextSlide", "decks.previousSlide", "decks.present"]
)
def test_moving_without_an_open_deck_is_unavailable_not_failed(decks, command):
    reactor, _ = decks
    assert reactor.commands.get_command(command).describe()["available"] is False
    with pytest.raises(CommandUnavailableError, match="no deck is open; open one with decks_open"):
        execute(reactor, command, {"slide": 1} if command == "decks.goToSlide" else {})


def test_moving_becomes_available_once_a_deck_is_open(decks):
    reactor, _ = decks
    execute(reactor, "decks.open", {"id": "onboarding"})
    assert reactor.commands.get_command("decks.nextSlide").describe()["available"] is True


def test_next_previous_and_go_to_move_through_the_deck(decks):
    reactor, page = decks
    execute(reactor, "decks.open", {"id": "onboarding"})
    assert execute(reactor, "decks.nextSlide")["slide"] == 2
    assert execute(reactor, "decks.goToSlide", {"slide": 5})["slideTitle"] == "Day 5: look back"
    assert execute(reactor, "decks.previousSlide")["slide"] == 4
    assert (
        view(page)["slide"] == 4
        and view(page)["deck"]["slides"][3]["title"] == "Days 3–4: ship something small"
    )


def test_next_on_the_last_slide_stays_and_says_so(decks):
    reactor, page = decks
    execute(reactor, "decks.open", {"id": "onboarding", "slide": 5})
    answer = execute(reactor, "decks.nextSlide")
    assert answer["slide"] == 5 and answer["message"] == "This is the last slide (5 of 5)."
    assert view(page)["message"] == "This is the last slide (5 of 5)."


def test_previous_on_the_first_slide_stays_and_says_so(decks):
    reactor, page = decks
    execute(reactor, "decks.open", {"id": "onboarding"})
    assert execute(reactor, "decks.previousSlide")["message"] == "This is the first slide."
    assert view(page)["slide"] == 1


def test_go_to_a_slide_out_of_range_is_refused_and_the_screen_stays(decks):
    reactor, page = decks
    execute(reactor, "decks.open", {"id": "onboarding", "slide": 2})
    with pytest.raises(
        CommandFailedError, match="The deck has slides 1 to 5; there is no slide 6."
    ):
        execute(reactor, "decks.goToSlide", {"slide": 6})
    assert view(page)["slide"] == 2


def test_present_refused_by_the_browser_answers_why_and_tells_the_person():
    reactor, page = start(MemoryPage(allow_fullscreen=False))
    execute(reactor, "decks.open", {"id": "onboarding"})
    answer = execute(reactor, "decks.present")
    assert answer["presenting"] is False
    assert answer["reason"].startswith(
        "Full screen needs a click: press the Present button on the page"
    )
    assert view(page)["message"] == answer["reason"] and view(page)["presenting"] is False


def test_present_accepted_goes_full_screen_and_the_view_presents():
    reactor, page = start(MemoryPage(allow_fullscreen=True))
    execute(reactor, "decks.open", {"id": "onboarding", "slide": 3})
    answer = execute(reactor, "decks.present")
    assert answer["presenting"] is True and answer["slide"] == 3
    assert page.fullscreen is True and view(page)["presenting"] is True
    assert execute(reactor, "decks.nextSlide")["presenting"] is True


def test_print_opens_the_printable_page_of_the_open_deck(decks):
    reactor, page = decks
    execute(reactor, "decks.open", {"id": "onboarding"})
    answer = execute(reactor, "decks.print")
    assert answer["opened"] is True and answer["url"] == "/decks/onboarding/print"
    assert page.opened == ["/decks/onboarding/print"]


def test_print_blocked_answers_the_address_for_the_person_to_open():
    reactor, page = start(MemoryPage(allow_tabs=False))
    answer = execute(reactor, "decks.print", {"id": "quarterly-review"})
    assert answer["opened"] is False and answer["url"] == "/decks/quarterly-review/print"
    assert "/decks/quarterly-review/print" in answer["message"]
    assert view(page)["message"] == answer["message"]


def test_print_without_a_deck_asks_which(decks):
    reactor, _ = decks
    with pytest.raises(
        CommandFailedError, match=r"^Which deck\? Pass its `id`, as listed by decks_list_decks"
    ):
        execute(reactor, "decks.print")
    with pytest.raises(CommandFailedError, match="There is no deck 'nope'"):
        execute(reactor, "decks.print", {"id": "nope"})


# Data commands ----------------------------------------------------------------------------


def test_list_decks_answers_summaries_and_leaves_the_screen_alone(decks):
    reactor, page = decks
    answer = execute(reactor, "decks.listDecks")
    assert answer == {
        "decks": [
            {"id": "onboarding", "title": "Onboarding: your first week", "slides": 5},
            {"id": "quarterly-review", "title": "Quarterly review — Q3", "slides": 5},
            {"id": "reactor-in-5-minutes", "title": "Reactor in 5 minutes", "slides": 5},
        ]
    }
    assert "decks" not in page.views


def test_get_deck_answers_the_spec_and_an_outline(decks):
    reactor, _ = decks
    answer = execute(reactor, "decks.getDeck", {"id": "reactor-in-5-minutes"})
    assert answer["deck"] == next(d for d in SEEDS if d["id"] == "reactor-in-5-minutes")
    assert answer["outline"][0] == {"slide": 1, "title": "Reactor in 5 minutes"}
    assert len(answer["outline"]) == 5


def test_create_deck_makes_an_id_from_the_title_and_answers_it():
    reactor, _ = start(seed=False)
    answer = execute(reactor, "decks.createDeck", {"title": "Team Offsite 2025"})
    assert answer == {
        "id": "team-offsite-2025",
        "title": "Team Offsite 2025",
        "slides": 1,
        "outline": [{"slide": 1, "title": "Team Offsite 2025"}],
    }
    again = execute(reactor, "decks.createDeck", {"title": "Team offsite 2025!"})
    assert again["id"] == "team-offsite-2025-2"


def test_create_deck_with_an_id_slides_and_theme(decks):
    reactor, _ = decks
    slides = [{"title": "Hi", "body": "- a\n- b", "notes": "smile"}]
    answer = execute(
        reactor, "decks.createDeck", {"id": "hi", "title": "Hi", "theme": "dark", "slides": slides}
    )
    assert answer["id"] == "hi"
    assert execute(reactor, "decks.getDeck", {"id": "hi"})["deck"] == {
        "id": "hi",
        "title": "Hi",
        "theme": "dark",
        "slides": slides,
    }


def test_create_deck_refuses_a_taken_id(decks):
    reactor, _ = decks
    with pytest.raises(CommandFailedError, match="There is already a deck 'onboarding'"):
        execute(reactor, "decks.createDeck", {"id": "onboarding", "title": "Again"})


def test_a_created_deck_appears_in_the_list_on_screen(decks):
    reactor, page = decks
    execute(reactor, "decks.list")
    execute(reactor, "decks.createDeck", {"title": "Fresh"})
    assert "fresh" in [d["id"] for d in view(page)["decks"]]


def test_update_deck_changes_only_what_is_given(decks):
    reactor, _ = decks
    answer = execute(reactor, "decks.updateDeck", {"id": "onboarding", "title": "Week one"})
    assert answer["title"] == "Week one" and answer["slides"] == 5
    deck = execute(reactor, "decks.getDeck", {"id": "onboarding"})["deck"]
    assert (
        deck["title"] == "Week one"
        and deck["slides"] == next(d for d in SEEDS if d["id"] == "onboarding")["slides"]
    )


def test_update_deck_can_replace_every_slide(decks):
    reactor, _ = decks
    answer = execute(
        reactor, "decks.updateDeck", {"id": "onboarding", "slides": [{"title": "Only", "body": ""}]}
    )
    assert answer["outline"] == [{"slide": 1, "title": "Only"}]


def test_update_deck_with_nothing_to_change_says_what_it_takes(decks):
    reactor, _ = decks
    with pytest.raises(
        CommandFailedError, match="Say what to change: pass a new `title`, `theme` or `slides`."
    ):
        execute(reactor, "decks.updateDeck", {"id": "onboarding"})


def test_update_slide_changes_one_slide_and_redraws_it_when_on_screen(decks):
    reactor, page = decks
    execute(reactor, "decks.open", {"id": "onboarding", "slide": 2})
    answer = execute(
        reactor, "decks.updateSlide", {"id": "onboarding", "slide": 2, "body": "# New\n\nText"}
    )
    assert (
        answer["slide"] == 2
        and answer["title"] == "Day 1: set up"
        and answer["body"] == "# New\n\nText"
    )
    assert view(page)["deck"]["slides"][1]["body"] == "# New\n\nText"


def test_update_slide_out_of_range_changes_nothing(decks):
    reactor, _ = decks
    with pytest.raises(
        CommandFailedError, match="^The deck has slides 1 to 5; there is no slide 9.$"
    ):
        execute(reactor, "decks.updateSlide", {"id": "onboarding", "slide": 9, "title": "x"})
    with pytest.raises(
        CommandFailedError, match="Say what to change: pass a new `title`, `body` or `notes`."
    ):
        execute(reactor, "decks.updateSlide", {"id": "onboarding", "slide": 1})


def test_add_slide_appends_and_answers_its_number(decks):
    reactor, _ = decks
    answer = execute(
        reactor, "decks.addSlide", {"id": "onboarding", "title": "Extra", "body": "More"}
    )
    assert answer["slide"] == 6 and answer["outline"][-1] == {"slide": 6, "title": "Extra"}


def test_insert_slide_takes_the_number_given_and_moves_the_rest_down(decks):
    reactor, _ = decks
    answer = execute(
        reactor,
        "decks.insertSlide",
        {"id": "onboarding", "slide": 2, "title": "Agenda", "body": ""},
    )
    assert [s["title"] for s in answer["outline"][:3]] == ["Welcome", "Agenda", "Day 1: set up"]
    last = execute(
        reactor, "decks.insertSlide", {"id": "onboarding", "slide": 7, "title": "End", "body": ""}
    )
    assert last["outline"][-1] == {"slide": 7, "title": "End"}
    with pytest.raises(
        CommandFailedError, match="A new slide can take the numbers 1 to 8; there is no slide 9"
    ):
        execute(
            reactor, "decks.insertSlide", {"id": "onboarding", "slide": 9, "title": "x", "body": ""}
        )


def test_delete_slide_moves_the_rest_up_and_keeps_the_screen_in_range(decks):
    reactor, page = decks
    execute(reactor, "decks.open", {"id": "onboarding", "slide": 5})
    answer = execute(reactor, "decks.deleteSlide", {"id": "onboarding", "slide": 5})
    assert answer["deleted"] == 5 and len(answer["outline"]) == 4
    assert view(page)["slide"] == 4 and len(view(page)["deck"]["slides"]) == 4


def test_the_last_slide_of_a_deck_cannot_be_deleted(decks):
    reactor, _ = decks
    execute(reactor, "decks.createDeck", {"id": "one", "title": "One"})
    with pytest.raises(CommandFailedError, match="A deck keeps at least one slide"):
        execute(reactor, "decks.deleteSlide", {"id": "one", "slide": 1})
    assert execute(reactor, "decks.listSlides", {"id": "one"})["slides"] == [
        {"slide": 1, "title": "One"}
    ]


def test_list_slides_and_get_slide_read_without_changing_the_screen(decks):
    reactor, page = decks
    listed = execute(reactor, "decks.listSlides", {"id": "quarterly-review"})
    assert listed["title"] == "Quarterly review — Q3" and listed["slides"][2] == {
        "slide": 3,
        "title": "What did not",
    }
    slide = execute(reactor, "decks.getSlide", {"id": "quarterly-review", "slide": 3})
    assert (
        slide["of"] == 5
        and slide["notes"].startswith("Be direct")
        and slide["body"].startswith("- The EU")
    )
    assert "decks" not in page.views


def test_delete_deck_answers_the_remaining_decks_and_closes_it_on_screen(decks):
    reactor, page = decks
    execute(reactor, "decks.open", {"id": "onboarding"})
    answer = execute(reactor, "decks.deleteDeck", {"id": "onboarding"})
    assert answer["deleted"] == "onboarding"
    assert [d["id"] for d in answer["decks"]] == ["quarterly-review", "reactor-in-5-minutes"]
    assert (
        "deck" not in view(page)
        and view(page)["message"] == "The deck ‘Onboarding: your first week’ was deleted."
    )
    assert reactor.commands.get_command("decks.nextSlide").describe()["available"] is False
    with pytest.raises(CommandFailedError, match="There is no deck 'onboarding'"):
        execute(reactor, "decks.deleteDeck", {"id": "onboarding"})


# Bad and hostile arguments ----------------------------------------------------------------


@pytest.mark.parametrize(
    "command, args, path",
    [
        ("decks.open", {}, "$"),
        ("decks.open", {"id": 7}, "$.id"),
        ("decks.open", {"id": "onboarding", "slide": 0}, "$.slide"),
        ("decks.open", {"id": "onboarding", "slide": "2"}, "$.slide"),
        ("decks.open", {"id": "onboarding", "slide": 2.5}, "$.slide"),
        ("decks.open", {"id": "onboarding", "page": 2}, "$"),
        ("decks.nextSlide", {"steps": 2}, "$"),
        ("decks.listDecks", {"filter": "q"}, "$"),
        ("decks.createDeck", {"title": ""}, "$.title"),
        ("decks.createDeck", {"title": "x", "id": "../etc/passwd"}, "$.id"),
        ("decks.createDeck", {"title": "x", "theme": "neon"}, "$.theme"),
        ("decks.createDeck", {"title": "x", "slides": []}, "$.slides"),
        ("decks.createDeck", {"title": "x", "slides": [{"title": "a"}]}, "$.slides[0]"),
        (
            "decks.createDeck",
            {"title": "x", "slides": [{"title": "a", "body": "b", "html": "<b>"}]},
            "$.slides[0]",
        ),
        ("decks.createDeck", {"title": "x", "slides": "one slide"}, "$.slides"),
        ("decks.updateSlide", {"id": "onboarding", "slide": 1, "body": None}, "$.body"),
        ("decks.updateSlide", {"id": "onboarding", "slide": 1, "body": "x" * 20_001}, "$.body"),
        ("decks.addSlide", {"id": "onboarding", "title": "x"}, "$"),
        ("decks.getSlide", {"id": "onboarding", "slide": True}, "$.slide"),
        ("decks.deleteDeck", {"id": ["onboarding"]}, "$.id"),
    ],
)
def test_bad_arguments_are_refused_with_the_path_of_each_problem_and_change_nothing(
    decks, command, args, path
):
    reactor, _ = decks
    before = execute(reactor, "decks.getDeck", {"id": "onboarding"})
    with pytest.raises(InvalidArgumentsError) as refused:
        execute(reactor, command, args)
    assert path in [p["path"] for p in refused.value.problems]
    assert execute(reactor, "decks.getDeck", {"id": "onboarding"}) == before
    assert [d["id"] for d in execute(reactor, "decks.listDecks")["decks"]] == IDS


def test_arguments_that_are_not_an_object_are_refused(decks):
    reactor, _ = decks
    with pytest.raises(InvalidArgumentsError, match="must be an object"):
        run(reactor.commands.execute("decks.getDeck", ["onboarding"]))  # type: ignore[arg-type]


def test_too_many_slides_are_refused_whole(decks):
    reactor, _ = decks
    slides = [{"title": str(n), "body": ""} for n in range(201)]
    with pytest.raises(InvalidArgumentsError):
        execute(reactor, "decks.createDeck", {"title": "Huge", "slides": slides})
    assert "huge" not in [d["id"] for d in execute(reactor, "decks.listDecks")["decks"]]


def test_a_deck_that_grows_past_the_size_limit_is_refused_and_unchanged(decks):
    reactor, _ = decks
    body = "é" * 20_000
    for n in range(8):
        execute(reactor, "decks.addSlide", {"id": "onboarding", "title": str(n), "body": body})
    with pytest.raises(
        CommandFailedError, match="The deck is not valid: \\$: the deck is \\d+ bytes"
    ):
        execute(
            reactor, "decks.addSlide", {"id": "onboarding", "title": "last straw", "body": body}
        )
    assert len(execute(reactor, "decks.listSlides", {"id": "onboarding"})["slides"]) == 13


def test_markup_in_a_slide_reaches_the_view_unchanged_as_data(decks):
    # The view draws it with CommonMark, raw HTML off (web/markdown.js; test_decks_page.py).
    reactor, page = decks
    hostile = '<img src=x onerror="alert(1)">'
    execute(
        reactor,
        "decks.createDeck",
        {"id": "xss", "title": hostile, "slides": [{"title": hostile, "body": hostile}]},
    )
    execute(reactor, "decks.open", {"id": "xss"})
    state = view(page)
    assert state["deck"]["title"] == hostile and state["deck"]["slides"][0]["body"] == hostile


# With the server ----------------------------------------------------------------------------


def test_when_the_server_is_down_the_change_is_kept_and_the_answer_and_screen_say_so():
    page = MemoryPage(base_url=f"http://127.0.0.1:{free_port()}")
    reactor, page = start(page, api="/api/decks", seed=False)
    listed = execute(reactor, "decks.list")
    assert "cannot be reached" in listed["warning"] and "cannot be reached" in view(page)["message"]
    answer = execute(reactor, "decks.createDeck", {"title": "Offline notes"})
    assert answer["saved"] is False and "kept in this page but was not saved" in answer["warning"]
    assert view(page)["decks"] == [
        {"id": "offline-notes", "title": "Offline notes", "slides": 1, "saved": False}
    ]
    assert "not saved" in view(page)["message"]
    update = execute(
        reactor, "decks.updateSlide", {"id": "offline-notes", "slide": 1, "body": "Still here"}
    )
    assert update["saved"] is False
    assert (
        execute(reactor, "decks.getSlide", {"id": "offline-notes", "slide": 1})["body"]
        == "Still here"
    )


def test_the_commands_read_and_write_the_real_server(app_server):
    reactor, page = start(
        MemoryPage(
            base_url=app_server.url, headers=bearer(app_server, "ada"), send=app_server.send
        ),
        api="/api/decks",
        seed=False,
    )
    assert [d["id"] for d in execute(reactor, "decks.listDecks")["decks"]] == IDS
    answer = execute(
        reactor, "decks.updateSlide", {"id": "onboarding", "slide": 1, "title": "Hello"}
    )
    assert answer["saved"] is True
    created = execute(reactor, "decks.createDeck", {"title": "From the agent"})
    assert created["saved"] is True
    other, _ = start(
        MemoryPage(base_url=app_server.url, send=app_server.send), api="/api/decks", seed=False
    )
    assert execute(other, "decks.getSlide", {"id": "onboarding", "slide": 1})["title"] == "Hello"
    assert (
        execute(other, "decks.getDeck", {"id": "from-the-agent"})["deck"]["title"]
        == "From the agent"
    )
    assert execute(reactor, "decks.print", {"id": "onboarding"})["opened"] is True


@pytest.mark.parametrize(
    "user, sentence",
    [
        (None, "Sign in to save decks. Ask the person to sign in"),
        (
            "bob",
            "The deck 'onboarding' is not bob's; only its owner or an operator may replace it.",
        ),
    ],
)
def test_a_write_the_server_refuses_answers_the_model_not_permitted(app_server, user, sentence):
    headers = bearer(app_server, user) if user else {}
    reactor, _ = start(
        MemoryPage(base_url=app_server.url, headers=headers, send=app_server.send),
        api="/api/decks",
        seed=False,
    )
    answer = json.loads(
        run(
            PageTools(reactor).call_json(
                "decks_update_slide", '{"id": "onboarding", "slide": 1, "title": "Hello"}', None
            )
        )
    )
    assert answer["ok"] is False and answer["error"]["code"] == "not_permitted"
    assert answer["error"]["message"].startswith(sentence)
    assert execute(reactor, "decks.getSlide", {"id": "onboarding", "slide": 1})["title"] != "Hello"


class OneCall:
    """A model that makes one call, then answers with words."""

    label = "one call"

    def __init__(self, name, args):
        self.turns = [
            ModelTurn("", (ToolCall("call_1", name, args),), "tool_use"),
            ModelTurn("Kept it."),
        ]

    async def complete(self, request, signal):
        return self.turns.pop(0)


def test_a_question_asked_before_the_decks_are_listed_names_the_deck_by_its_title(app_server):
    # Right after a reload the chat asks again about the call it waited on, before the page has
    # listed the server's decks: the person still reads the deck's title, not its id.
    reactor, _ = start(
        MemoryPage(
            base_url=app_server.url, headers=bearer(app_server, "ada"), send=app_server.send
        ),
        api="/api/decks",
        seed=False,
    )
    asked = []

    async def deny(request):
        asked.append(request.question)
        return "deny"

    loop = ChatLoop(
        OneCall("decks_delete_deck", {"id": "onboarding"}),
        Toolbox(reactor, AgentSpec("presenter", plugins=("decks",))),
        approve=deny,
    )
    assert run(loop.send("delete the onboarding deck")).text == "Kept it."
    title = next(d["title"] for d in SEEDS if d["id"] == "onboarding")
    assert asked == [f"Delete the deck ‘{title}’? This cannot be undone."]
    assert "onboarding" in [d["id"] for d in execute(reactor, "decks.listDecks")["decks"]]


class Calls:
    """A model that makes the calls given, one a turn, then answers with words."""

    label = "calls"

    def __init__(self, *calls):
        self.turns = [
            ModelTurn("", (ToolCall(f"call_{n}", name, args),), "tool_use")
            for n, (name, args) in enumerate(calls, 1)
        ] + [ModelTurn("Done.")]

    async def complete(self, request, signal):
        return self.turns.pop(0)


def test_the_line_a_person_reads_after_each_slide_change_names_the_deck_by_its_title(decks):
    reactor, _ = decks
    lines = []

    async def allow(request):
        return "allow"

    loop = ChatLoop(
        Calls(
            ("decks_get_slide", {"id": "onboarding", "slide": 2}),
            ("decks_update_slide", {"id": "onboarding", "slide": 2, "notes": "Slowly."}),
            ("decks_add_slide", {"id": "onboarding", "title": "Extra", "body": "More"}),
            ("decks_insert_slide", {"id": "onboarding", "slide": 2, "title": "Plan", "body": ""}),
            ("decks_delete_slide", {"id": "onboarding", "slide": 7}),
            ("decks_delete_deck", {"id": "onboarding"}),
        ),
        Toolbox(reactor, AgentSpec("presenter", plugins=("decks",))),
        approve=allow,
        on_event=lambda event: (
            lines.append(event.data["summary"]) if event.type == "tool_call.finished" else None
        ),
    )
    assert run(loop.send("tidy the onboarding deck")).text == "Done."
    assert lines == [
        "Read slide 2 of 5 of ‘Onboarding: your first week’: ‘Day 1: set up’.",
        "Saved slide 2 of ‘Onboarding: your first week’.",
        "Added slide 6 to ‘Onboarding: your first week’.",
        "Inserted slide 2 into ‘Onboarding: your first week’.",
        "Deleted slide 7 of ‘Onboarding: your first week’.",
        "Deleted the deck ‘Onboarding: your first week’.",
    ]


def test_a_slide_change_answers_the_model_the_decks_id_and_title(decks):
    reactor, _ = decks
    answers = [
        execute(reactor, "decks.getSlide", {"id": "onboarding", "slide": 1}),
        execute(reactor, "decks.updateSlide", {"id": "onboarding", "slide": 1, "notes": "Hi."}),
        execute(reactor, "decks.addSlide", {"id": "onboarding", "title": "X", "body": ""}),
        execute(
            reactor, "decks.insertSlide", {"id": "onboarding", "slide": 1, "title": "Y", "body": ""}
        ),
        execute(reactor, "decks.deleteSlide", {"id": "onboarding", "slide": 1}),
    ]
    assert all(
        (a["id"], a["deckTitle"]) == ("onboarding", "Onboarding: your first week") for a in answers
    )
    deleted = execute(reactor, "decks.deleteDeck", {"id": "onboarding"})
    assert (deleted["deleted"], deleted["deckTitle"]) == (
        "onboarding",
        "Onboarding: your first week",
    )


def test_a_question_about_a_deck_the_server_cannot_list_names_it_by_its_id():
    page = MemoryPage(base_url=f"http://127.0.0.1:{free_port()}")
    reactor, _ = start(page, api="/api/decks", seed=False)
    tool = Toolbox(reactor, AgentSpec("presenter", plugins=("decks",))).tool("decks_add_slide")
    assert run(tool.question({"id": "onboarding", "title": "New"})) == (
        "Add a slide to ‘onboarding’?"
    )


def test_leaving_full_screen_stops_presenting():
    import asyncio

    from reactor import MemoryPage, Reactor
    from reactor_plugins.decks import DECKS_PLUGIN

    async def scenario():
        page = MemoryPage(allow_fullscreen=True)
        reactor = Reactor(services={"page": page, "decks_api": None})
        reactor.load_plugins([DECKS_PLUGIN])
        await reactor.commands.execute(
            "decks.createDeck", {"title": "T", "slides": [{"title": "S", "body": "b"}]}
        )
        await reactor.commands.execute("decks.open", {"id": "t"})
        stop = reactor.commands.get_command("decks.stopPresenting")
        assert stop.describe()["available"] is False  # nothing to stop yet
        assert (await reactor.commands.execute("decks.present"))["presenting"] is True
        assert page.fullscreen_view == "decks"  # the slide stage, not the whole page
        assert stop.describe()["available"] is True
        assert await reactor.commands.execute("decks.stopPresenting") == {"presenting": False}
        assert stop.describe()["available"] is False
        return page.views["decks"]["presenting"]

    assert asyncio.run(scenario()) is False


def test_the_page_opens_on_the_deck_list_but_never_over_a_deck_opened_meanwhile():
    from reactor import MemoryPage, Reactor
    from reactor_plugins.decks import DECKS_PLUGIN

    async def scenario(open_first):
        page = MemoryPage()
        reactor = Reactor(services={"page": page, "decks_api": None})
        reactor.load_plugins([DECKS_PLUGIN])
        await reactor.commands.execute(
            "decks.createDeck", {"title": "T", "slides": [{"title": "S", "body": "b"}]}
        )
        await reactor.activate_plugins()  # does not wait for the list: the page is ready at once
        if open_first:
            await reactor.commands.execute("decks.open", {"id": "t"})
        for _ in range(5):
            await asyncio.sleep(0)
        return page.views["decks"]

    listed = asyncio.run(scenario(open_first=False))
    assert [d["id"] for d in listed["decks"]] == ["t"] and "deck" not in listed
    opened = asyncio.run(scenario(open_first=True))
    assert opened["deck"]["id"] == "t" and "decks" not in opened
