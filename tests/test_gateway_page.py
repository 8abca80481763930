"""The chat a site ships, in real Chromium: the page talks to the site's model through the reactor
server (a loopback stand-in speaking each provider's streaming wire format stands behind it);
the tools run in the page as always; the key is nowhere the browser can see."""

import logging
from contextlib import contextmanager

import pytest
from conftest import start_server, stop_server
from playwright.sync_api import expect

from reactor.server.gateway.allowance import ALLOWANCE_USED
from reactor.server.gateway.config import AssistantConfig
from reactor.testing.standins import StandIn, call, text
from test_chat_page import idle, say

pytestmark = pytest.mark.browser

KEY = "sk-marker-9d2e61b0c4a7"


@contextmanager
def serve(tmp_path, stand_in, **options):
    """A reactor server whose site model is `stand_in`, for the `with` block."""
    config = AssistantConfig(
        provider=stand_in.provider,
        model="site-model",
        api_key=KEY,
        base_url=stand_in.url,
        **{k: v for k, v in options.items() if k != "browser_keys"},
    )
    server = start_server(
        tmp_path / "data",
        seed_demo=True,
        assistant=config,
        browser_keys=options.get("browser_keys"),
    )
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture
def openai_stand_in():
    stand_in = StandIn("openai", KEY)
    yield stand_in
    stand_in.stop()


@pytest.fixture
def anthropic_stand_in():
    stand_in = StandIn("anthropic", KEY)
    yield stand_in
    stand_in.stop()


def open_chat(reactor, username=None):
    """`reactor` (a page reactor.testing watches) opened as a person opens it, signed in as
    `username` when given, its chat on the site's model: its Playwright page."""
    reactor.open()
    if username:
        reactor.sign_in(username)
    reactor.page.get_by_test_id("chat-model").get_by_text("site-model · via this site").wait_for()
    return reactor.page


def kept_answers(page):
    """Every answer the browser gets from now on, kept as bytes."""
    received = []

    def keep(response):
        try:
            received.append(response.body())
        except Exception:  # a response without a body (a redirect, an aborted stream)
            pass

    page.context.on("response", keep)
    return received


def ask_and_hold(page, stand_in):
    """Ask for an answer the provider holds after its first word, and wait for that word on
    screen."""
    stand_in.answers = [text("Partially answered, and the rest held back")]
    stand_in.hold.clear()
    say(page, "tell me everything")
    page.locator("reactor-chat [data-streaming=true]").get_by_text("Partially").wait_for()


def error_note(page):
    """The last error the chat told the person (waited for)."""
    note = page.locator("reactor-chat li.chat-error").last
    note.wait_for()
    return note


def test_a_signed_in_person_chats_through_the_site_and_the_tools_run_in_the_page(
    new_reactor_page,
    tmp_path,
    openai_stand_in,
    caplog,
):
    stand_in = openai_stand_in
    with serve(tmp_path, stand_in) as server:
        with caplog.at_level(logging.DEBUG):
            reactor = new_reactor_page(server)
            received = kept_answers(reactor.page)
            page = open_chat(reactor, "bob")
            stand_in.answers = [
                call(
                    "decks_open",
                    {"id": "onboarding", "slide": 4},
                    words="Opening the onboarding deck for you.",
                ),
                text("It is open at slide 4."),
            ]
            stand_in.hold.clear()  # the stream waits after its first words
            say(page, "open the onboarding deck at slide 4")
            streaming = page.locator("reactor-chat [data-streaming=true]")
            streaming.get_by_text("Opening").wait_for()
            assert not stand_in.hold.is_set(), (
                "the first words are on screen while the provider still holds the rest"
            )
            stand_in.hold.set()
            page.get_by_test_id("slide-number").get_by_text(
                "Slide 4 of 5"
            ).wait_for()  # the tool ran in the page
            page.locator("reactor-chat .chat-assistant").get_by_text(
                "It is open at slide 4."
            ).wait_for()
            idle(page)
            page.wait_for_load_state("networkidle")
        assert len(stand_in.requests) == 2
        tool_result = next(m for m in stand_in.requests[1]["messages"] if m["role"] == "tool")
        assert '"ok": true' in tool_result["content"], "the page's envelope went back to the model"
        assert all(KEY.encode() not in body for body in received), "the key reached the browser"
        assert KEY not in caplog.text, "the key reached the server's log"
        assert any(KEY in (h.get("authorization") or "") for h in stand_in.headers), (
            "the provider did get it"
        )


def test_anthropic_behind_the_site_streams_text_and_a_tool_call(
    new_reactor_page,
    tmp_path,
    anthropic_stand_in,
):
    stand_in = anthropic_stand_in
    with serve(tmp_path, stand_in) as server:
        page = open_chat(new_reactor_page(server), "bob")
        stand_in.answers = [
            call("decks_list_decks", {}, "toolu_1", words="Let me look."),
            text("There are three decks."),
        ]
        say(page, "list the decks")
        page.locator("reactor-chat .chat-assistant").get_by_text(
            "There are three decks."
        ).wait_for()
        card = page.locator("reactor-chat [data-testid=tool-card][data-tool=decks_list_decks]")
        assert card.get_attribute("data-status") == "finished"
        assert (
            stand_in.requests[0]["model"] == "site-model"
            and stand_in.headers[0]["x-api-key"] == KEY
        )


def test_stop_ends_the_request_to_the_provider_within_a_second(
    new_reactor_page,
    tmp_path,
    openai_stand_in,
):
    stand_in = openai_stand_in
    with serve(tmp_path, stand_in) as server:
        page = open_chat(new_reactor_page(server), "bob")
        ask_and_hold(page, stand_in)
        page.locator("reactor-chat").get_by_role("button", name="Stop").click()
        assert stand_in.hung_up.wait(1.0), (
            "the provider saw its connection close within a second of Stop"
        )
        idle(page)
        assert (
            page.locator("reactor-chat [data-streaming=stopped]")
            .inner_text()
            .startswith("Partially")
        )


def test_closing_the_page_mid_answer_ends_the_request_to_the_provider_once_no_page_comes_back(
    new_reactor_page,
    tmp_path,
    openai_stand_in,
):
    stand_in = openai_stand_in
    # The answer is kept for the page's reload (server/gateway/kept.py): half a second here.
    with serve(tmp_path, stand_in, reattach_seconds=0.5) as server:
        page = open_chat(new_reactor_page(server), "bob")
        ask_and_hold(page, stand_in)
        page.close()
        assert not stand_in.hung_up.wait(0.25), "kept a moment for a reload"
        assert stand_in.hung_up.wait(1.25), (
            "the provider saw its connection close within a second once no page came back"
        )


def test_a_signed_out_page_is_asked_to_sign_in_unless_the_site_opened_the_assistant(
    new_reactor_page,
    tmp_path,
    openai_stand_in,
):
    stand_in = openai_stand_in
    with serve(tmp_path, stand_in) as server:
        page = open_chat(new_reactor_page(server))
        say(page, "hello")
        assert (
            error_note(page).inner_text()
            == "Sign in at the top of the page to use this site's assistant."
        )
        assert stand_in.requests == []
    with serve(tmp_path / "open", stand_in, anonymous=True) as opened:
        page = open_chat(new_reactor_page(opened))  # in a browser context of its own
        stand_in.answers = [text("Hello, visitor.")]
        say(page, "hello")
        page.locator("reactor-chat .chat-assistant").get_by_text("Hello, visitor.").wait_for()


def test_todays_allowance_used_is_a_sentence_a_person_understands(
    new_reactor_page,
    tmp_path,
    openai_stand_in,
):
    stand_in = openai_stand_in
    with serve(tmp_path, stand_in, limit_tokens=25) as server:
        page = open_chat(new_reactor_page(server), "bob")
        stand_in.usage = (10, 20)
        say(page, "hello")
        page.locator("reactor-chat .chat-assistant").get_by_text("Done.").wait_for()
        idle(page)
        say(page, "hello again")
        assert error_note(page).inner_text() == ALLOWANCE_USED
        idle(page)
        assert page.locator("reactor-chat").get_by_role("button", name="Send").is_enabled()


def test_the_providers_failures_are_one_sentence_each(
    new_reactor_page,
    tmp_path,
    anthropic_stand_in,
):
    stand_in = anthropic_stand_in
    with serve(tmp_path, stand_in) as server:
        page = open_chat(new_reactor_page(server), "bob")
        said = []
        for failure in (401, 429, 529, "cut"):
            if failure == "cut":
                stand_in.answers, stand_in.cut_next = [text("Half of an answer")], True
            else:
                stand_in.failures = [failure]
            before = page.locator("reactor-chat li.chat-error").count()
            say(page, "hello")
            page.locator("reactor-chat li.chat-error").nth(before).wait_for()
            idle(page)
            said.append(error_note(page).inner_text())
    assert said == [
        "This site's assistant is not working: its provider refused the site's key. "
        "The site's operator can see why in the server's log.",
        "This site's assistant is busy (its provider's rate limit); wait 7 seconds and try again.",
        "This site's model is overloaded right now; try again in a minute.",
        "The answer was cut off: the site's model stopped sending before it finished. Send "
        "your message again to retry.",
    ]


def test_where_the_site_also_allows_typed_keys_the_person_picks_in_model_settings(
    new_reactor_page,
    tmp_path,
    openai_stand_in,
):
    with serve(tmp_path, openai_stand_in, browser_keys=True) as server:
        page = open_chat(new_reactor_page(server), "bob")
        chat = page.locator("reactor-chat")
        chat.locator("summary").click()
        picker = chat.locator("select[name=provider]")
        options = picker.locator("option").all_inner_texts()
        assert options[0] == "This site's assistant (site-model)" and "Anthropic" in options
        assert not chat.locator("input[name=apiKey]").is_visible(), "the site's model needs no key"
        picker.select_option("scripted")
        assert chat.locator("input[name=apiKey]").is_hidden()
        chat.get_by_role("button", name="Use this model").click()
        page.get_by_test_id("chat-model").get_by_text("Scripted model (no AI)").wait_for()
        picker.select_option("openai")
        expect(chat.locator("input[name=apiKey]")).to_be_visible()


def test_without_typed_keys_the_picker_offers_only_what_needs_none(
    new_reactor_page,
    tmp_path,
    openai_stand_in,
):
    with serve(tmp_path, openai_stand_in) as server:
        page = open_chat(new_reactor_page(server), "bob")
        chat = page.locator("reactor-chat")
        chat.locator("summary").click()
        options = chat.locator("select[name=provider] option").all_inner_texts()
        assert options == ["This site's assistant (site-model)", "Scripted model (no AI)"]
