"""Accessible by default, in real Chromium: axe-core finds no serious or critical violation on the
demo page in each of its states (decks, a deck, Present, the palette with a form, the chat with
cards and a pending approval, the Agents and CMS panels) nor on the embed example; Tab reaches
every control; a person with a keyboard alone sends a chat, allows an approval and presents a
deck; Present's controls are drawn at WCAG AA contrast. The keyboard-only path, Tab's round and
Present's contrast run in Firefox and WebKit too (tests/test_engines.py)."""

import pytest

from accessibility import axe_violations, contrast, said, tab_cycle, tab_to
from reactor.testing import call, text
from test_embed_page import embedding

pytestmark = pytest.mark.browser

ASK = "make a deck called Weekly notes"


@pytest.fixture
def model(reactor_model):
    """A model that creates a deck (a write: the person is asked first), then says so."""
    reactor_model.answers = [call("decks_create_deck", {"title": "Weekly notes"}), text("Made.")]
    return reactor_model


def ask(page, text):
    chat = page.locator("reactor-chat")
    chat.locator("textarea").fill(text)
    chat.get_by_role("button", name="Send").click()


def pending_approval(page):
    approval = page.locator("reactor-chat [data-testid=approval]:not([data-decision])")
    approval.wait_for()
    return approval


def test_the_demo_page_has_no_serious_violation_in_any_state(reactor_page, model):
    page, found = reactor_page.page, {}
    reactor_page.use_model(model)
    page.locator("#agents h2").wait_for()
    found["signed out, the deck list"] = axe_violations(page)
    reactor_page.sign_in("ada")
    page.locator("#cms").get_by_test_id("cms-site").wait_for()
    page.locator("#agents").get_by_role("button", name="Make a token").wait_for()
    found["signed in: the CMS and Agents panels"] = axe_violations(page)
    page.locator("#palette button[data-command='decks.createDeck']").click()
    page.locator(".palette-form").wait_for()
    found["the palette with a form"] = axe_violations(page)
    ask(page, ASK)
    pending_approval(page)
    found["the chat with a card and an approval"] = axe_violations(page)
    pending_approval(page).get_by_role("button", name="Allow", exact=True).click()
    page.locator("reactor-chat[data-running=false]").wait_for()
    page.get_by_test_id("open-deck").first.click()
    page.get_by_test_id("slide-number").wait_for()
    found["a deck open"] = axe_violations(page)
    page.get_by_test_id("present").click()
    page.locator(".decks--presenting").wait_for()
    found["Present"] = axe_violations(page)
    assert not any(found.values()), "axe-core's serious violations:\n" + said(found)


def test_the_embed_example_has_no_serious_violation_and_its_list_works_by_keys(
    new_reactor_page, tmp_path
):
    with embedding(tmp_path) as (live, site):
        reactor = new_reactor_page(live).allow_origin(site).open(site)
        page = reactor.page
        reactor.chat("list todos")
        found = {"the to-do page with a tool card": axe_violations(page)}
        assert not any(found.values()), "axe-core's serious violations:\n" + said(found)
        missed = tab_cycle(page)
        assert not missed, "Tab never reaches:\n" + "\n".join(missed)
        # A to-do is selected and done by keys alone, as by a click.
        tab_to(page, page.locator("#todos li[data-id='2'] .todo-title"))
        page.keyboard.press("Enter")
        page.locator("#todos li[data-id='2'].selected").wait_for()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Space")
        page.locator("#todos li[data-id='2'].done").wait_for()
        assert reactor.call_tool("todo_stats")["result"] == {"total": 2, "done": 1, "open": 1}


def test_presents_controls_are_drawn_at_wcag_aa_contrast(reactor_page):
    page = reactor_page.page
    reactor_page.execute("decks.open", {"id": "onboarding", "slide": 2})
    page.get_by_test_id("present").click()
    page.locator(".decks--presenting").wait_for()
    for theme in ("light", "dark"):
        page.evaluate(
            "(theme) => { document.getElementById('decks').dataset.theme = theme }", theme
        )
        drawn = contrast(page, ".decks--presenting .decks-controls > *")
        assert [c["text"] for c in drawn] == ["Previous", "Next", "Stop", "Print", "2 / 5"]
        faint = [c for c in drawn if c["ratio"] < 4.5]
        assert not faint, f"below 4.5:1 in the {theme} theme: {faint}"


def test_tab_reaches_every_control_of_the_page(reactor_page):
    page = reactor_page.page
    reactor_page.sign_in("ada")
    page.locator("#cms").get_by_test_id("cms-site").wait_for()
    page.locator("#agents").get_by_role("button", name="Make a token").wait_for()
    reactor_page.execute("decks.open", {"id": "onboarding", "slide": 2})
    missed = tab_cycle(page)
    assert not missed, "Tab never reaches:\n" + "\n".join(missed)


def test_a_keyboard_alone_signs_in_sends_a_chat_allows_its_approval_and_presents_a_deck(
    reactor_page, model
):
    page = reactor_page.use_model(model).page
    keys = page.keyboard
    tab_to(page, page.locator("#session input[name=username]"))
    keys.type("ada")
    keys.press("Tab")
    keys.type("ada-demo")
    keys.press("Enter")
    page.get_by_test_id("signed-in-as").wait_for()
    chat = page.locator("reactor-chat")
    tab_to(page, chat.locator("textarea"))
    keys.type(ASK)
    keys.press("Enter")
    pending_approval(page)
    approval = chat.get_by_test_id("approval").last
    assert "Weekly notes" in approval.get_by_test_id("approval-question").inner_text()
    # Back from the message box to the question's buttons: Deny, Always allow, Allow.
    tab_to(page, approval.get_by_role("button", name="Allow", exact=True), backwards=True)
    keys.press("Enter")
    page.locator("reactor-chat .chat-assistant").get_by_text("Made.").wait_for()
    assert approval.get_by_test_id("approval-choice").inner_text() == "Allowed."
    card = chat.locator("[data-testid=tool-card][data-tool=decks_create_deck]")
    assert card.get_attribute("data-status") == "finished"
    # The deck list: open the first deck, present it, move on, leave.
    tab_to(page, page.get_by_test_id("open-deck").first)
    keys.press("Enter")
    page.get_by_test_id("slide-number").wait_for()
    tab_to(page, page.get_by_test_id("present"))
    keys.press("Enter")
    page.locator(".decks--presenting").wait_for()
    assert page.evaluate("document.fullscreenElement?.id") == "decks"
    keys.press("ArrowRight")
    page.locator("#decks[data-slide='2']").wait_for()
    keys.press("Escape")
    page.locator("#decks:not(.decks--presenting)").wait_for()
