"""The CMS in real Chromium: sign in at the top of the page, crawl the demo blog into drafts,
publish on request, show the public page in a tab (or get its link when popups are blocked), and
switch the site so the next call goes there."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def ready(reactor_page):
    """The page reactor_page opened, with the CMS plugin loaded."""
    load = reactor_page.page.evaluate("window.reactor.ready")
    assert "cms" in load["loaded"], load
    return reactor_page.page


def execute(page, command, args=None):
    return page.evaluate(
        "([command, args]) => window.reactor.executeCommand(command, args)", [command, args or {}]
    )


def sign_in(reactor_page, user="ada"):
    """The page's one sign-in form (the header's); the CMS panel follows it."""
    panel = reactor_page.sign_in(user).page.locator("#cms")
    panel.get_by_test_id("cms-site").wait_for()
    return panel


def test_signing_in_at_the_top_shows_the_sites_entries_and_their_status(reactor_page):
    page = ready(reactor_page)
    panel = page.locator("#cms")
    assert "Sign in at the top of the page" in panel.get_by_test_id("cms-signed-out").inner_text()
    assert panel.locator("form, input[type=password]").count() == 0  # one sign-in form on the page
    panel = sign_in(reactor_page, "bob")
    assert page.locator("text=Signed in as bob").count() == 1
    assert panel.get_by_test_id("cms-site").input_value() == "acme"
    page.locator('#cms li[data-slug="roadmap"]').wait_for()
    statuses = dict(
        zip(
            page.locator("#cms li").evaluate_all("items => items.map(li => li.dataset.slug)"),
            panel.get_by_test_id("cms-status").all_inner_texts(),
        )
    )
    assert statuses == {"about": "published", "welcome": "published", "roadmap": "draft"}
    assert panel.get_by_test_id("cms-publish").count() == 0  # bob is an editor: no Publish buttons
    cookies = page.context.cookies()
    assert [c["httpOnly"] for c in cookies if c["name"] == "reactor_session"] == [True]
    assert page.evaluate("document.cookie") == ""


def test_a_person_in_no_site_is_told_so_once(reactor_page):
    page = ready(reactor_page)
    reactor_page.sign_in("eve")
    panel = page.locator("#cms")
    panel.get_by_test_id("cms-no-sites").wait_for()
    assert panel.locator("p").all_inner_texts() == [
        "eve is not a member of any site yet; an administrator adds members."
    ]


def test_crawl_into_drafts_publish_on_request_and_show_the_page(reactor_page, live_server):
    page = ready(reactor_page)
    sign_in(reactor_page)
    crawled = execute(page, "cms.crawlBlog", {"url": "/demo-sources/blog/", "limit": 3})
    assert [i["status"] for i in crawled["imported"]] == ["draft"] * 3
    row = page.locator('#cms li[data-slug="markup-b-stays-b-text"]')
    assert row.get_by_test_id("cms-status").inner_text() == "draft"
    assert row.get_by_test_id("cms-entry-title").inner_text() == "Markup <b>stays</b> text"
    assert page.locator("#cms b, #cms img").count() == 0
    published = execute(page, "cms.publishSitePage", {"slug": "markup-b-stays-b-text"})
    assert published["url"] == "/sites/acme/markup-b-stays-b-text"
    assert row.get_by_test_id("cms-status").inner_text() == "published"
    with page.context.expect_page() as opened:
        shown = execute(page, "cms.showSitePage", {"slug": "markup-b-stays-b-text"})
    assert shown["opened"] is True
    public = opened.value
    public.wait_for_load_state()
    assert public.url == live_server.url + "/sites/acme/markup-b-stays-b-text"
    assert public.locator("h1").inner_text() == "Markup <b>stays</b> text"
    assert public.locator("article img, article script, article b").count() == 0
    assert public.evaluate("window.pwned") is None
    assert 'onerror="window.pwned=1"' in public.locator("article").inner_text()


def test_the_show_button_opens_the_public_page(reactor_page):
    page = ready(reactor_page)
    sign_in(reactor_page)
    with page.context.expect_page() as opened:
        page.locator('#cms li[data-slug="welcome"]').get_by_test_id("cms-show").click()
    opened.value.wait_for_load_state()
    assert opened.value.locator("h1").inner_text() == "Welcome to the Acme blog"


def test_a_draft_cannot_be_shown_and_stays_private(reactor_page, live_server):
    page = ready(reactor_page)
    sign_in(reactor_page)
    message = page.evaluate(
        "window.reactor.executeCommand('cms.showSitePage', {slug: 'roadmap'}).then(() => '', "
        "(e) => e.message)"
    )
    assert "is a draft, so it has no public page yet" in message
    assert page.request.get(live_server.url + "/sites/acme/roadmap").status == 404


def test_with_popups_blocked_show_answers_with_the_link(blocking_popups, new_reactor_page):
    reactor = new_reactor_page(page=blocking_popups)
    page = reactor.page
    # Signed in before the page loads, as a cookie from an earlier visit does: no click on the page.
    ada = {"username": "ada", "password": "ada-demo"}
    assert page.request.post(f"{reactor.server.url}/auth/sign-in", data=ada).ok
    signed, shown = reactor.execute_at_load(
        [
            ("cms.restoreSession", {}),
            ("cms.showSitePage", {"slug": "welcome"}),
        ],
    )
    assert signed["site"] == "acme"
    assert shown["opened"] is False and shown["url"] == "/sites/acme/welcome"
    assert shown["message"].endswith("/sites/acme/welcome")
    assert len(page.context.pages) == 1
    assert page.get_by_test_id("cms-message").inner_text() == shown["message"]
    assert page.request.get(reactor.server.url + shown["url"]).ok


def test_switching_the_site_in_the_panel_sends_the_next_call_there(reactor_page, live_server):
    page = ready(reactor_page)
    panel = sign_in(reactor_page)
    assert execute(page, "cms.listSitePages")["site"] == "acme"
    panel.get_by_test_id("cms-site").select_option("globex")
    page.locator('#cms li[data-slug="launch-plan"]').wait_for()
    with page.expect_request(lambda r: "/api/cms/sites/" in r.url) as sent:
        answer = execute(page, "cms.listSitePages")
    assert sent.value.url == live_server.url + "/api/cms/sites/globex/entries"
    assert answer["site"] == "globex" and {e["slug"] for e in answer["entries"]} == {
        "about",
        "launch-plan",
    }


def test_a_reload_keeps_the_person_signed_in_through_the_cookie(reactor_page):
    page = ready(reactor_page)
    sign_in(reactor_page, "bob")
    page.reload()
    page.locator("#cms").get_by_test_id("cms-site").wait_for()
    assert page.get_by_test_id("signed-in-as").inner_text() == "Signed in as bob"
    page.locator("#session").get_by_role("button", name="Sign out").click()
    page.locator("#cms").get_by_test_id("cms-signed-out").wait_for()
    assert page.context.cookies() == [] or all(
        c["name"] != "reactor_session" for c in page.context.cookies()
    )


def command_button(page, label):
    return page.locator("#palette button", has_text=label)


def test_one_sign_in_the_palette_brings_the_headers_form_and_every_part_follows(reactor_page):
    page = ready(reactor_page)
    page.locator("#cms [data-testid=cms-signed-out]").wait_for()
    sign_in_command = command_button(page, "CMS: Sign in")
    sign_in_command.wait_for()
    assert (
        command_button(page, "CMS: Sign out").is_disabled()
        and command_button(page, "CMS: Crawl blog").is_disabled()
    )
    sign_in_command.click()
    assert page.locator('form[data-form="cms.signIn"]').count() == 0  # no second form
    page.wait_for_function(
        "document.activeElement?.name === 'username' && document.activeElement.closest('#session')"
    )
    for field in page.locator("input[type=password], input[name*=password]").all():
        assert field.get_attribute("type") == "password" and field.get_attribute("autocomplete")
    page.keyboard.type("bob")
    page.locator("#session input[name=password]").fill("bob-demo")
    page.keyboard.press("Enter")
    page.get_by_test_id("signed-in-as").get_by_text("Signed in as bob").wait_for()
    page.locator("#cms").get_by_test_id("cms-site").wait_for()  # the CMS panel, without a reload
    page.locator("#plugin-panels:not([hidden])").get_by_text(
        "backlog_chart"
    ).wait_for()  # the plugin panels
    page.wait_for_function(
        "!document.querySelector('#palette [data-command=\"cms.signOut\"]').disabled"
    )
    assert command_button(page, "CMS: Sign in").is_disabled()

    command_button(page, "CMS: Sign out").click()  # signing out elsewhere: the header follows too
    page.locator("#session input[name=username]").wait_for()
    page.locator("#cms [data-testid=cms-signed-out]").wait_for()
    page.locator("#plugin-panels[hidden]").wait_for(state="attached")
    page.wait_for_function(
        "document.querySelector('#palette [data-command=\"cms.signOut\"]').disabled"
    )
    assert page.locator("#palette-status").inner_text() == "CMS: Sign out: done."
    assert page.get_by_test_id("signed-in-as").count() == 0
