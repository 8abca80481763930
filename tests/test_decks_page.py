"""The decks view in real Chromium: what the person sees after each command, drawn by view.js."""

from __future__ import annotations

import pytest
from conftest import run_without_gesture, sign_in_on_page, stop_server

pytestmark = pytest.mark.browser


def ready(page, url, username=None):
    page.goto(url)
    load = page.evaluate("window.reactor.ready")
    assert load["failures"] == []
    if username:
        sign_in_on_page(page, username)
    return page


def execute(page, command, args=None):
    return page.evaluate("([command, args]) => window.reactor.executeCommand(command, args)", [command, args or {}])


def test_opening_a_deck_at_a_slide_shows_that_slide(offline_page, live_server):
    page = ready(offline_page, live_server.url)
    execute(page, "decks.open", {"id": "onboarding", "slide": 2})
    stage = page.locator("#decks")
    assert stage.get_by_test_id("deck-title").inner_text() == "Onboarding: your first week"
    assert stage.get_by_test_id("slide-number").inner_text() == "Slide 2 of 5"
    assert stage.get_by_test_id("slide-title").inner_text() == "Day 1: set up"
    items = stage.get_by_test_id("slide-body").locator("ul > li")
    assert items.count() == 3 and items.first.inner_text() == "Collect your laptop and badge from the front desk"


def test_the_list_of_decks_opens_a_deck_from_its_button(offline_page, live_server):
    page = ready(offline_page, live_server.url)
    execute(page, "decks.list")
    rows = page.get_by_test_id("deck-list").locator("li")
    assert rows.count() == 3
    page.locator('[data-deck-id="quarterly-review"]').get_by_test_id("open-deck").click()
    page.get_by_test_id("slide-number").wait_for()
    assert page.get_by_test_id("deck-title").inner_text() == "Quarterly review — Q3"


def test_the_next_button_and_the_arrow_key_advance_the_slide(offline_page, live_server):
    page = ready(offline_page, live_server.url)
    execute(page, "decks.open", {"id": "onboarding"})
    page.get_by_test_id("next-slide").click()
    page.get_by_text("Slide 2 of 5").wait_for()
    page.locator("#decks").press("ArrowRight")
    page.get_by_text("Slide 3 of 5").wait_for()


def test_slide_text_that_looks_like_html_is_shown_as_text(offline_page, live_server):
    page = ready(offline_page, live_server.url, "bob")
    hostile = '<img src=x onerror="window.pwned=1">'
    execute(page, "decks.createDeck", {"title": hostile, "slides": [{"title": hostile, "body": hostile}]})
    answer = execute(page, "decks.listDecks")
    deck_id = next(d["id"] for d in answer["decks"] if d["title"] == hostile)
    execute(page, "decks.open", {"id": deck_id})
    assert page.get_by_test_id("slide-body").inner_text() == hostile
    assert page.locator("#decks img").count() == 0 and page.evaluate("window.pwned") is None


def test_present_goes_full_screen_and_the_view_presents(offline_page, live_server):
    page = ready(offline_page, live_server.url)
    execute(page, "decks.open", {"id": "onboarding"})
    assert execute(page, "decks.present")["presenting"] is True  # Playwright's evaluate counts as a gesture
    assert page.evaluate("document.fullscreenElement !== null")
    assert "decks--presenting" in page.locator("#decks").get_attribute("class")


def test_present_without_a_click_is_refused_by_chromium_and_says_to_press_present(page, live_server):
    decks_open, present = run_without_gesture(page, live_server.url, [
        ("decks.open", {"id": "onboarding"}),
        ("decks.present", {}),
    ])
    assert present["presenting"] is False and present["reason"].startswith("Full screen needs a click")
    assert "Permissions check failed" in present["reason"]
    assert page.get_by_test_id("decks-message").inner_text() == present["reason"]
    assert page.evaluate("document.fullscreenElement") is None


def test_print_with_popups_blocked_answers_with_the_address(blocking_popups, live_server):
    page = blocking_popups
    _, printed = run_without_gesture(page, live_server.url, [
        ("decks.open", {"id": "quarterly-review"}),
        ("decks.print", {}),
    ])
    assert printed["opened"] is False
    assert printed["url"].endswith("/decks/quarterly-review/print")
    assert len(page.context.pages) == 1
    assert page.request.get(live_server.url + printed["url"]).ok


def test_a_deck_created_from_the_page_is_on_the_server_after_a_reload(offline_page, live_server):
    page = ready(offline_page, live_server.url, "bob")
    made = execute(page, "decks.createDeck", {"title": "Made in the page", "slides": [{"title": "One", "body": "Hi"}]})
    assert made["saved"] is True
    page.reload()
    page.evaluate("window.reactor.ready")
    listed = execute(page, "decks.listDecks")
    assert made["id"] in [d["id"] for d in listed["decks"]]
    assert page.request.get(f"{live_server.url}/api/decks/{made['id']}").json()["title"] == "Made in the page"


def test_with_the_server_down_a_change_is_kept_in_the_page_and_reported(page, live_server):
    ready(page, live_server.url)
    execute(page, "decks.open", {"id": "onboarding"})
    stop_server(live_server)
    answer = execute(page, "decks.updateSlide", {"id": "onboarding", "slide": 1, "title": "Kept offline"})
    assert answer["saved"] is False and "could not" in answer["warning"]
    assert execute(page, "decks.getSlide", {"id": "onboarding", "slide": 1})["title"] == "Kept offline"
    assert page.get_by_test_id("slide-title").inner_text() == "Kept offline"


def test_print_opens_the_printable_page_in_a_new_tab(offline_page, live_server):
    page = ready(offline_page, live_server.url)
    execute(page, "decks.open", {"id": "quarterly-review"})
    with page.context.expect_page() as opened:
        page.get_by_test_id("print").click()
    printable = opened.value
    printable.wait_for_load_state()
    assert printable.url.endswith("/decks/quarterly-review/print")
    assert printable.locator("section.slide").count() == 5


def test_signed_out_a_change_answers_the_agent_not_permitted_and_stays_unsaved(offline_page, live_server):
    page = ready(offline_page, live_server.url)
    answer = page.evaluate("window.reactor.callTool('decks_update_slide', {id: 'onboarding', slide: 1, title: 'Anonymous'})")
    assert answer["ok"] is False and answer["error"]["code"] == "not_permitted"
    assert "Ask the person to sign in" in answer["error"]["message"]
    spec = page.evaluate("fetch('/api/decks/onboarding').then(r => r.json())")
    assert spec["slides"][0]["title"] != "Anonymous"


def test_a_change_saved_from_the_page_reaches_the_server(offline_page, live_server):
    page = ready(offline_page, live_server.url, "ada")
    answer = execute(page, "decks.updateSlide", {"id": "onboarding", "slide": 1, "title": "Hello from the page"})
    assert answer["saved"] is True
    spec = page.evaluate("fetch('/api/decks/onboarding').then(r => r.json())")
    assert spec["slides"][0]["title"] == "Hello from the page"
