"""The decks view in real Chromium: what the person sees after each command, drawn by view.js."""

from __future__ import annotations

import pytest
from conftest import stop_server

from reactor.testing import ReactorPage

pytestmark = pytest.mark.browser
PHONE = pytest.mark.browser_context_args(viewport={"width": 390, "height": 844})


def ready(reactor_page, username=None):
    """The page reactor_page opened, every plugin loaded, signed in as `username` (password
    `<name>-demo`)."""
    assert reactor_page.page.evaluate("window.reactor.ready")["failures"] == []
    if username:
        reactor_page.sign_in(username)
    return reactor_page.page


def execute(page, command, args=None):
    return page.evaluate(
        "([command, args]) => window.reactor.executeCommand(command, args)", [command, args or {}]
    )


def test_opening_a_deck_at_a_slide_shows_that_slide(reactor_page):
    page = ready(reactor_page)
    execute(page, "decks.open", {"id": "onboarding", "slide": 2})
    stage = page.locator("#decks")
    assert stage.get_by_test_id("deck-title").inner_text() == "Onboarding: your first week"
    assert stage.get_by_test_id("slide-number").inner_text() == "Slide 2 of 5"
    assert stage.get_by_test_id("slide-title").inner_text() == "Day 1: set up"
    items = stage.get_by_test_id("slide-body").locator("ul > li")
    items.first.wait_for()
    assert (
        items.count() == 3
        and items.first.inner_text() == "Collect your laptop and badge from the front desk"
    )
    # CommonMark: the code span is code, its backticks gone.
    assert (
        items.nth(2).locator("code").inner_text() == "make dev"
        and "`" not in items.nth(2).inner_text()
    )


def test_the_list_of_decks_opens_a_deck_from_its_button(reactor_page):
    page = ready(reactor_page)
    execute(page, "decks.list")
    rows = page.get_by_test_id("deck-list").locator("li")
    assert rows.count() == 3
    page.locator('[data-deck-id="quarterly-review"]').get_by_test_id("open-deck").click()
    page.get_by_test_id("slide-number").wait_for()
    assert page.get_by_test_id("deck-title").inner_text() == "Quarterly review — Q3"


def test_the_next_button_and_the_arrow_key_advance_the_slide(reactor_page):
    page = ready(reactor_page)
    execute(page, "decks.open", {"id": "onboarding"})
    page.get_by_test_id("next-slide").click()
    page.get_by_text("Slide 2 of 5").wait_for()
    page.locator("#decks").press("ArrowRight")
    page.get_by_text("Slide 3 of 5").wait_for()


def test_slide_text_that_looks_like_html_is_shown_as_text(reactor_page):
    page = ready(reactor_page, "bob")
    hostile = '<img src=x onerror="window.pwned=1">'
    execute(
        page,
        "decks.createDeck",
        {"title": hostile, "slides": [{"title": hostile, "body": hostile}]},
    )
    answer = execute(page, "decks.listDecks")
    deck_id = next(d["id"] for d in answer["decks"] if d["title"] == hostile)
    execute(page, "decks.open", {"id": deck_id})
    assert page.get_by_test_id("slide-body").inner_text() == hostile
    assert page.locator("#decks img").count() == 0 and page.evaluate("window.pwned") is None


def inside_viewport(page, locator):
    box, view = locator.bounding_box(), page.viewport_size
    return (
        box is not None
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= view["width"] + 1
        and box["y"] + box["height"] <= view["height"] + 1
    )


def sidebar_is_covered(page):
    """Whether what is on screen where the sidebar's heading is belongs to the slide stage."""
    return page.evaluate("""() => {
        const box = document.querySelector('#palette-title').getBoundingClientRect();
        const hit = document.elementFromPoint(
            Math.min(box.left + 5, innerWidth - 1), Math.min(box.top + 5, innerHeight - 1));
        return document.getElementById('decks').contains(hit);
    }""")


def test_presenting_fills_the_screen_with_the_slide_and_the_keys_move_it(reactor_page):
    page = ready(reactor_page)
    execute(page, "decks.open", {"id": "onboarding", "slide": 2})
    page.get_by_test_id("present").click()  # the person's click: full screen is granted
    page.locator("#decks.decks--presenting").wait_for()
    assert page.evaluate("document.fullscreenElement?.id") == "decks"  # the stage, not the page
    stage, view = page.locator("#decks").bounding_box(), page.viewport_size
    assert stage["width"] * stage["height"] >= 0.9 * view["width"] * view["height"]
    for part in ("slide-title", "slide-body"):
        assert page.get_by_test_id(part).is_visible() and inside_viewport(
            page, page.get_by_test_id(part)
        )
    assert page.get_by_test_id("slide-title").inner_text() == "Day 1: set up"
    assert sidebar_is_covered(page)  # the sidebar and chat are not on screen
    slide = page.get_by_test_id("slide-body").bounding_box()
    assert slide["height"] > 0.2 * view["height"]  # scaled with the screen, not a strip
    page.keyboard.press("ArrowRight")  # no click on the slide needed first
    page.get_by_test_id("slide-title").get_by_text("Day 2").wait_for()
    page.keyboard.press("End")
    page.get_by_text("5 / 5").wait_for()
    page.keyboard.press("Home")
    page.get_by_text("1 / 5").wait_for()
    page.get_by_test_id("slide-body").click()
    page.get_by_text("2 / 5").wait_for()
    page.get_by_test_id("stop-presenting").click()
    page.locator("#decks:not(.decks--presenting)").wait_for()
    page.wait_for_function("document.fullscreenElement === null")
    assert not sidebar_is_covered(page)


def test_stopping_from_the_palette_or_an_agent_leaves_full_screen(reactor_page):
    page = ready(reactor_page)
    execute(page, "decks.open", {"id": "onboarding"})
    # Playwright's evaluate counts as a gesture
    assert execute(page, "decks.present")["presenting"] is True
    assert page.evaluate("document.fullscreenElement?.id") == "decks"
    assert execute(page, "decks.stopPresenting") == {"presenting": False}
    page.wait_for_function("document.fullscreenElement === null")


def test_present_without_a_click_is_refused_by_chromium_and_says_to_press_present(new_reactor_page):
    reactor = new_reactor_page()
    page = reactor.page
    decks_open, present = reactor.execute_at_load(
        [
            ("decks.open", {"id": "onboarding"}),
            ("decks.present", {}),
        ],
    )
    assert present["presenting"] is False and present["reason"].startswith(
        "Full screen needs a click"
    )
    assert "Permissions check failed" in present["reason"]
    assert page.get_by_test_id("decks-message").inner_text() == present["reason"]
    assert page.evaluate("document.fullscreenElement") is None


def test_print_with_popups_blocked_answers_with_the_address(blocking_popups, new_reactor_page):
    reactor = new_reactor_page(page=blocking_popups)
    page = reactor.page
    _, printed = reactor.execute_at_load(
        [
            ("decks.open", {"id": "quarterly-review"}),
            ("decks.print", {}),
        ],
    )
    assert printed["opened"] is False
    assert printed["url"].endswith("/decks/quarterly-review/print")
    assert len(page.context.pages) == 1
    assert page.request.get(reactor.server.url + printed["url"]).ok


def test_a_deck_created_from_the_page_is_on_the_server_after_a_reload(reactor_page, live_server):
    page = ready(reactor_page, "bob")
    made = execute(
        page,
        "decks.createDeck",
        {"title": "Made in the page", "slides": [{"title": "One", "body": "Hi"}]},
    )
    assert made["saved"] is True
    page.reload()
    page.evaluate("window.reactor.ready")
    listed = execute(page, "decks.listDecks")
    assert made["id"] in [d["id"] for d in listed["decks"]]
    assert (
        page.request.get(f"{live_server.url}/api/decks/{made['id']}").json()["title"]
        == "Made in the page"
    )


def test_with_the_server_down_a_change_is_kept_in_the_page_and_reported(page, live_server):
    # unwatched: its requests fail once the server is down
    ready(ReactorPage(page, live_server).open())
    execute(page, "decks.open", {"id": "onboarding"})
    stop_server(live_server)
    answer = execute(
        page, "decks.updateSlide", {"id": "onboarding", "slide": 1, "title": "Kept offline"}
    )
    assert answer["saved"] is False and "could not" in answer["warning"]
    assert (
        execute(page, "decks.getSlide", {"id": "onboarding", "slide": 1})["title"] == "Kept offline"
    )
    assert page.get_by_test_id("slide-title").inner_text() == "Kept offline"


def test_print_opens_the_printable_page_in_a_new_tab(reactor_page):
    page = ready(reactor_page)
    execute(page, "decks.open", {"id": "quarterly-review"})
    with page.context.expect_page() as opened:
        page.get_by_test_id("print").click()
    printable = opened.value
    printable.wait_for_load_state()
    assert printable.url.endswith("/decks/quarterly-review/print")
    assert printable.locator("section.slide").count() == 5


def test_signed_out_a_change_answers_the_agent_not_permitted_and_stays_unsaved(reactor_page):
    page = ready(reactor_page)
    answer = page.evaluate(
        "window.reactor.callTool('decks_update_slide', {id: 'onboarding', slide: 1, title: "
        "'Anonymous'})"
    )
    assert answer["ok"] is False and answer["error"]["code"] == "not_permitted"
    assert "Ask the person to sign in" in answer["error"]["message"]
    spec = page.evaluate("fetch('/api/decks/onboarding').then(r => r.json())")
    assert spec["slides"][0]["title"] != "Anonymous"


def test_a_change_saved_from_the_page_reaches_the_server(reactor_page):
    page = ready(reactor_page, "ada")
    answer = execute(
        page, "decks.updateSlide", {"id": "onboarding", "slide": 1, "title": "Hello from the page"}
    )
    assert answer["saved"] is True
    spec = page.evaluate("fetch('/api/decks/onboarding').then(r => r.json())")
    assert spec["slides"][0]["title"] == "Hello from the page"


def palette_button(page, label):
    return page.locator("#palette button", has_text=label)


def test_the_palette_follows_the_page_state_without_a_reload(reactor_page):
    page = ready(reactor_page)
    next_slide = palette_button(page, "Decks: Next Slide")
    next_slide.wait_for()
    assert next_slide.is_disabled() and palette_button(page, "Decks: Stop Presenting").is_disabled()
    page.locator('[data-deck-id="onboarding"]').get_by_test_id(
        "open-deck"
    ).click()  # the main area's list
    page.wait_for_function(
        "!document.querySelector('#palette [data-command=\"decks.nextSlide\"]').disabled"
    )
    next_slide.click()
    page.get_by_text("Slide 2 of 5").wait_for()
    assert "Decks: Next Slide: done." in page.locator("#palette-status").inner_text()
    page.locator("#palette-filter").fill("zzz")
    page.locator("#palette", has_text="No command matches “zzz”.").wait_for()


def test_a_palette_command_with_arguments_opens_a_form_from_its_schema(reactor_page):
    page = ready(reactor_page, "bob")
    palette_button(page, "Decks: Create Deck").click()
    form = page.locator('form[data-form="decks.createDeck"]')
    assert form.locator("label").first.inner_text() == "title *"  # required fields first
    # an enum is a select
    assert form.locator("select#palette-decks-createDeck-theme option").count() >= 2
    form.get_by_role("button", name="Run").click()  # nothing filled in: said under the field
    form.locator('[data-problem="title"]', has_text="Fill this in.").wait_for()
    form.locator("#palette-decks-createDeck-title").fill("Made in the palette")
    form.get_by_role("button", name="Run").click()
    page.locator("#palette-status", has_text="Decks: Create Deck: done.").wait_for()
    assert any(
        d["title"] == "Made in the palette" for d in execute(page, "decks.listDecks")["decks"]
    )
    assert page.locator('form[data-form="decks.createDeck"]').count() == 0


def test_the_main_area_opens_on_the_list_of_decks(reactor_page):
    page = ready(reactor_page)
    rows = page.get_by_test_id("deck-list").locator("li")
    rows.first.wait_for()
    assert rows.count() == 3 and rows.first.get_by_test_id("open-deck").is_visible()
    assert "slides" in rows.first.inner_text()


@PHONE
def test_at_390_px_nothing_overflows_and_the_chat_stays_reachable(reactor_page):
    page = ready(reactor_page)
    page.get_by_test_id("deck-list").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    progress = page.locator("[data-reactor-progress]").bounding_box()
    assert progress["height"] < 3 * 24  # a line or two, not five
    chat = page.locator("reactor-chat textarea")
    chat.scroll_into_view_if_needed()
    assert chat.is_visible() and inside_viewport(page, chat)


def test_a_signed_out_visit_logs_no_error_in_the_console(reactor_page):
    page = reactor_page.page
    logged = []
    page.on(
        "console",
        lambda message: message.type in ("error", "warning") and logged.append(message.text),
    )
    page = ready(reactor_page.open())  # a visit watched from its start
    page.get_by_test_id("deck-list").wait_for()
    page.locator("#cms [data-testid=cms-signed-out]").wait_for()
    page.wait_for_load_state("networkidle")  # late requests (AI Tools, the chat's set-up) land too
    assert logged == []


def stage_has_focus(page):
    return page.evaluate("document.activeElement?.id") == "decks"


def test_a_deck_opened_from_its_button_takes_the_arrow_keys_at_once(reactor_page):
    page = ready(reactor_page)
    page.locator('[data-deck-id="onboarding"]').get_by_test_id("open-deck").click()
    page.get_by_text("Slide 1 of 5").wait_for()
    assert stage_has_focus(page) and inside_viewport(page, page.get_by_test_id("slide-title"))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.get_by_text("Slide 3 of 5").wait_for()
    page.get_by_test_id(
        "previous-slide"
    ).click()  # the view's own button, redrawn away: the keys stay
    page.get_by_text("Slide 2 of 5").wait_for()
    page.keyboard.press("ArrowLeft")
    page.get_by_text("Slide 1 of 5").wait_for()


def test_a_deck_opened_from_the_palette_takes_the_arrow_keys_at_once(reactor_page):
    page = ready(reactor_page)
    palette_button(page, "Decks: Open Deck").click()
    form = page.locator('form[data-form="decks.open"]')
    form.locator("#palette-decks-open-id").fill("onboarding")
    form.get_by_role("button", name="Run").click()
    page.get_by_text("Slide 1 of 5").wait_for()
    assert stage_has_focus(page)
    page.keyboard.press("ArrowRight")
    page.get_by_text("Slide 2 of 5").wait_for()


def test_a_deck_opened_from_the_chat_takes_the_arrow_keys_at_once(reactor_page):
    page = ready(reactor_page)
    chat = page.locator("reactor-chat")
    page.get_by_test_id("chat-model").wait_for()
    chat.locator("textarea").fill("open deck onboarding")
    chat.locator("textarea").press("Enter")
    number = page.get_by_test_id("slide-number")
    number.get_by_text("Slide 1 of 5").wait_for()
    page.locator("reactor-chat[data-running=false]").wait_for()
    assert stage_has_focus(page)
    page.keyboard.press("ArrowRight")
    number.get_by_text("Slide 2 of 5").wait_for()


def test_esc_leaves_the_presentation(reactor_page):
    page = ready(reactor_page)
    page.locator('[data-deck-id="onboarding"]').get_by_test_id("open-deck").click()
    page.get_by_test_id("present").click()
    page.locator("#decks.decks--presenting").wait_for()
    # headless Chromium does not leave full screen on Esc itself: the view's key does
    page.keyboard.press("Escape")
    page.locator("#decks:not(.decks--presenting)").wait_for()
    page.wait_for_function("document.fullscreenElement === null")
    assert not sidebar_is_covered(page) and page.get_by_test_id("present").is_visible()
    page.keyboard.press("ArrowRight")  # the keys still reach the slide
    page.get_by_text("Slide 2 of 5").wait_for()


def test_a_form_says_every_fields_problem_at_once_in_words_and_the_status_says_the_last_attempt(
    reactor_page,
):
    page = ready(reactor_page, "bob")
    palette_button(page, "Decks: Show All Decks").click()
    page.locator("#palette-status", has_text="Decks: Show All Decks: done.").wait_for()
    palette_button(page, "Decks: Create Deck").click()
    form = page.locator('form[data-form="decks.createDeck"]')
    form.locator("#palette-decks-createDeck-id").fill("Not A Slug")
    form.locator("#palette-decks-createDeck-slides").fill('[{"title": 3}]')
    form.get_by_role("button", name="Run").click()
    id_problem = form.locator('[data-problem="id"]')
    id_problem.get_by_text(
        "Use lowercase letters and digits, with single hyphens between words, like team-offsite."
    ).wait_for()
    # every field at once
    assert form.locator('[data-problem="title"]').inner_text() == "Fill this in."
    assert (
        form.locator('[data-problem="slides"]').inner_text()
        == "Item 1: needs “body”. Item 1, title: should be text."
    )
    assert "does not match" not in form.inner_text() and "^[a-z0-9]" not in form.inner_text()
    assert (
        page.locator("#palette-status").inner_text()
        == "Decks: Create Deck: check the fields above."
    )
    form.locator("#palette-decks-createDeck-title").fill("Made in the form")
    form.locator("#palette-decks-createDeck-id").fill("made-in-the-form")
    form.locator("#palette-decks-createDeck-slides").fill("")
    form.get_by_role("button", name="Run").click()
    page.locator("#palette-status", has_text="Decks: Create Deck: done.").wait_for()
    assert page.locator("#palette .palette-problem:not(:empty)").count() == 0


def test_the_address_names_the_deck_and_slide_is_kept_and_restored(new_reactor_page):
    page = new_reactor_page().open("/#/decks/onboarding/4").page  # a link to a slide
    page.get_by_text("Slide 4 of 5").wait_for()
    page.wait_for_function("document.activeElement?.id === 'decks'")  # the keys work at once
    page.keyboard.press("ArrowRight")
    page.get_by_text("Slide 5 of 5").wait_for()
    page.wait_for_function("location.hash === '#/decks/onboarding/5'")
    page.reload()
    page.get_by_text("Slide 5 of 5").wait_for()  # restored on load
    assert page.get_by_test_id("deck-title").inner_text() == "Onboarding: your first week"
    page.get_by_test_id("back-to-list").click()
    page.get_by_test_id("deck-list").wait_for()
    page.wait_for_function("location.hash === '#/decks'")
    page.go_back()  # the browser's Back returns to the slide the person left
    page.get_by_text("Slide 5 of 5").wait_for()
    page.evaluate("location.hash = '#/decks/quarterly-review/2'")  # a link followed within the page
    page.get_by_test_id("deck-title").get_by_text("Quarterly review — Q3").wait_for()
    assert page.get_by_test_id("slide-number").inner_text() == "Slide 2 of 5"


@PHONE
def test_at_390_px_the_deck_buttons_read_whole(reactor_page):
    page = ready(reactor_page)
    page.locator('[data-deck-id="onboarding"]').get_by_test_id("open-deck").click()
    page.get_by_text("Slide 1 of 5").wait_for()
    broken = page.evaluate("""() => [
            ...document.querySelectorAll('#decks button, #decks .decks-number')]
        .filter((node) => node.getClientRects().length
            && node.offsetHeight > 2 * parseFloat(getComputedStyle(node).lineHeight))
        .map((node) => node.textContent)""")
    assert broken == []
    for label in ("Previous", "Next", "Present", "Print", "← All decks"):
        button = page.locator("#decks button", has_text=label)
        assert button.inner_text() == label and inside_viewport(page, button)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_the_printable_address_of_a_deck_there_is_not_is_a_page_that_says_so(new_reactor_page):
    reactor = new_reactor_page()
    reactor.expect_console_error("the server responded with a status of 404")
    page = reactor.page
    answer = page.goto(f"{reactor.server.url}/decks/NOT A DECK/print")
    assert answer.status == 404
    assert page.locator("h1").inner_text() == "There is no deck ‘NOT A DECK’."
    assert "{" not in page.locator("body").inner_text()  # not the API's JSON
    page.get_by_role("link", name="Back to the decks").click()
    page.get_by_test_id("deck-list").wait_for()


def test_a_refusal_in_the_palette_is_said_in_the_persons_words(reactor_page):
    page = ready(reactor_page)
    palette_button(page, "Decks: Update Slide").click()
    form = page.locator('form[data-form="decks.updateSlide"]')
    form.locator("#palette-decks-updateSlide-id").fill("onboarding")
    form.locator("#palette-decks-updateSlide-slide").fill("1")
    form.locator("#palette-decks-updateSlide-title").fill("Anonymous")
    form.get_by_role("button", name="Run").click()
    status = page.locator("#palette-status[data-state=error]")
    status.wait_for()
    assert status.inner_text() == "Decks: Update Slide: Sign in at the top of the page first."
    assert "the person" not in page.locator("#palette").inner_text()


def test_a_palette_form_never_shows_a_secret_as_typed(reactor_page):
    page = ready(reactor_page)
    page.evaluate("""window.reactor.definePlugin({name: "vault", commands: [{
        id: "vault.open", label: "Vault: Open", execute() {},
        parameters: {type: "object",
                     properties: {password: {type: "string"},
                                  pin: {type: "string", writeOnly: true}},
                     required: ["password"], additionalProperties: false}}]})""")
    palette_button(page, "Vault: Open").click()
    form = page.locator('form[data-form="vault.open"]')
    for name in ("password", "pin"):
        field = form.locator(f"#palette-vault-open-{name}")
        assert (
            field.get_attribute("type") == "password"
            and field.get_attribute("autocomplete") == "current-password"
        )


def test_back_from_the_first_deck_opened_returns_to_the_list(reactor_page):
    page = ready(reactor_page)
    page.locator('[data-deck-id="onboarding"]').get_by_test_id("open-deck").click()
    page.wait_for_function("location.hash === '#/decks/onboarding/1'")
    page.go_back()
    page.get_by_test_id("deck-list").wait_for()
    assert page.evaluate("location.hash") == ""
