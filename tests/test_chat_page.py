"""The chat widget in real Chromium: bundles become tools, approvals wait for the person, Stop
stops."""

import pytest
from conftest import start_server, stop_server
from playwright.sync_api import expect

from fake_openai import FakeOpenAI, text_turn, tool_call_turn
from reactor.plugin_spec import discover_plugins

pytestmark = pytest.mark.browser


@pytest.fixture
def provider():
    return FakeOpenAI()


@pytest.fixture
def server(tmp_path, provider):
    live = start_server(
        tmp_path,
        plugins=[*discover_plugins(), provider.spec()],
        seed_demo=True,
        agent_spec={
            "name": "Decks helper",
            "instructions": "Help with decks.",
            "plugins": ["decks"],
        },
    )
    yield live
    stop_server(live)


def chat_of(reactor_page, username=None):
    """The chat of a ready page, signed in as `username` when given, once it has chosen its
    model."""
    if username:
        reactor_page.sign_in(username)
    reactor_page.page.get_by_test_id("chat-model").wait_for()
    return reactor_page.page.locator("reactor-chat")


@pytest.fixture
def server_page(new_reactor_page, server):
    """A page of `server` that reactor.testing watches, not yet opened."""
    return new_reactor_page(server)


def open_chat(reactor, username=None):
    """`reactor` opened, its chat ready, signed in as `username` when given: its Playwright page."""
    chat_of(reactor.open(), username)
    return reactor.page


def say(page, words):
    """Type `words` into the chat and send them, as a person does."""
    chat = page.locator("reactor-chat")
    chat.locator("textarea").fill(words)
    chat.get_by_role("button", name="Send").click()


def idle(page):
    """Wait until the chat has finished its turn."""
    page.locator("reactor-chat[data-running=false]").wait_for()


def use_fake_provider(page, server):
    chat = page.locator("reactor-chat")
    chat.locator("summary").click()
    chat.locator("select[name=provider]").select_option("openai")
    chat.locator("input[name=baseUrl]").fill(f"{server.url}/v1")
    chat.locator("input[name=model]").fill("gpt-test")
    chat.locator("input[name=apiKey]").fill("test-key")
    chat.get_by_role("button", name="Use this model").click()
    page.get_by_test_id("chat-model").get_by_text("gpt-test").wait_for()


def card(page, tool):
    return page.locator(f"reactor-chat [data-testid=tool-card][data-tool={tool}]").last


def test_the_scripted_model_lists_opens_at_a_slide_and_presents(reactor_page):
    page = reactor_page.page
    chat = chat_of(reactor_page)
    assert page.get_by_test_id("chat-model").inner_text() == "Scripted model (no AI)"
    say(page, "list decks")
    idle(page)
    listed = card(page, "decks_list_decks")
    assert listed.get_attribute("data-status") == "finished"
    line = listed.get_by_test_id("tool-summary").inner_text()
    assert (
        line == "Decks (3): ‘Onboarding: your first week’, ‘Quarterly review — Q3’, ‘Reactor in 5 "
        "minutes’."
    )
    reply = page.locator("reactor-chat .chat-assistant").last.inner_text()
    assert reply == "Say “open deck Onboarding: your first week” to open one." and line not in reply
    assert chat.locator("[data-testid=approval]").count() == 0, "reading needs no approval"
    say(page, "open deck onboarding at slide 4")
    page.get_by_test_id("slide-number").get_by_text("Slide 4 of 5").wait_for()
    idle(page)
    opened = card(page, "decks_open")
    visible = opened.inner_text()  # what the person sees: the summary, with the JSON folded away
    assert (
        "Decks: Open Deck" in visible
        and "Opened ‘Onboarding: your first week’ at slide 4 of 5" in visible
    )
    assert "{" not in visible
    opened.locator("summary").click()
    assert '"slide": 4' in opened.locator(".chat-tool-args").inner_text()
    say(page, "present")
    idle(page)
    assert card(page, "decks_present").get_attribute("data-status") == "finished"
    assert page.evaluate("document.fullscreenElement !== null")


def test_a_write_waits_for_approval_and_a_denial_reaches_the_model(server_page, server, provider):
    page = open_chat(server_page)
    use_fake_provider(page, server)
    provider.turns = [
        tool_call_turn("decks_update_slide", {"id": "onboarding", "slide": 1, "title": "Renamed"}),
        text_turn("Understood, I left the slide as it was."),
    ]
    say(page, "rename the first slide")
    approval = page.get_by_test_id("approval")
    approval.wait_for()
    # What will happen, in the person's words: the deck's title, not the tool's name.
    assert (
        approval.get_by_test_id("approval-question").inner_text()
        == "Change slide 1 of ‘Onboarding: your first week’?"
    )
    # The worker answers a listing after all it had to do before: nothing ran meanwhile.
    page.evaluate("window.reactor.listCommands()")
    assert approval.is_visible(), "the approval stays until the person answers"
    assert len(provider.requests) == 1, "the model waits for the person's answer too"
    title = page.request.get(f"{server.url}/api/decks/onboarding").json()["slides"][0]["title"]
    assert title != "Renamed", "nothing is written before the person answers"
    approval.get_by_role("button", name="Deny").click()
    page.locator("reactor-chat .chat-assistant").get_by_text(
        "I left the slide as it was"
    ).wait_for()
    assert approval.get_by_test_id("approval-choice").inner_text() == "Denied; it did not run."
    assert approval.get_by_role("button").count() == 0  # the choice is recorded, not greyed out
    assert card(page, "decks_update_slide").get_attribute("data-status") == "denied"
    tool_message = next(m for m in provider.requests[-1]["messages"] if m["role"] == "tool")
    assert '"code": "denied"' in tool_message["content"]
    assert (
        page.request.get(f"{server.url}/api/decks/onboarding").json()["slides"][0]["title"]
        != "Renamed"
    )


def test_the_chat_reads_in_time_order_the_question_the_decision_then_the_result(
    server_page, server, provider
):
    page = open_chat(server_page, "ada")
    use_fake_provider(page, server)
    provider.turns = [
        tool_call_turn("decks_update_slide", {"id": "onboarding", "slide": 1, "title": "One"}),
        text_turn("Renamed."),
    ]
    say(page, "rename slide 1")
    page.get_by_test_id("approval").get_by_role("button", name="Allow", exact=True).click()
    page.locator("reactor-chat .chat-assistant").get_by_text("Renamed.").wait_for()
    shown = page.locator("reactor-chat ol.chat-log > li").evaluate_all(
        "items => items.map((li) => [li.className, li.dataset.decision ?? li.dataset.status ?? ''])"
    )
    assert shown == [
        ["chat-message chat-user", ""],
        ["chat-approval", "allow"],
        ["chat-tool", "finished"],
        ["chat-message chat-assistant", ""],
    ]
    approval = page.get_by_test_id("approval").inner_text()
    assert approval.startswith("Change slide 1 of") and "Allowed." in approval


def test_always_allow_runs_the_next_call_of_that_tool_without_asking(server_page, server, provider):
    page = open_chat(server_page, "ada")  # the seeded decks are the operators' to change
    use_fake_provider(page, server)
    provider.turns = [
        tool_call_turn("decks_update_slide", {"id": "onboarding", "slide": 1, "title": "One"}),
        text_turn("Renamed."),
        tool_call_turn(
            "decks_update_slide", {"id": "onboarding", "slide": 2, "title": "Two"}, "call_2"
        ),
        text_turn("Renamed again."),
    ]
    say(page, "rename slide 1")
    page.get_by_test_id("approval").get_by_role("button", name="Always allow").click()
    page.locator("reactor-chat .chat-assistant").get_by_text("Renamed.").wait_for()
    say(page, "rename slide 2")
    page.locator("reactor-chat .chat-assistant").get_by_text("Renamed again.").wait_for()
    assert page.get_by_test_id("approval").count() == 1
    slides = page.request.get(f"{server.url}/api/decks/onboarding").json()["slides"]
    assert [slides[0]["title"], slides[1]["title"]] == ["One", "Two"]


def test_stop_aborts_the_model_request(server_page, server, provider):
    page = open_chat(server_page)
    use_fake_provider(page, server)
    provider.delay = 20
    say(page, "take your time")
    assert provider.asked.wait(10), "the model was asked"
    page.locator("reactor-chat").get_by_role("button", name="Stop").click()
    idle(page)
    assert page.locator("reactor-chat .chat-note").last.inner_text() == "You stopped the assistant."
    assert provider.hung_up.wait(5) and provider.disconnected == 1, (
        "the fetch to the provider was aborted, not left running"
    )


def test_a_tool_outside_the_agents_plugins_is_refused_and_model_text_is_shown_as_text(
    server_page,
    server,
    provider,
):
    page = open_chat(server_page)
    use_fake_provider(page, server)
    hostile = '<img src=x onerror="window.pwned=1">'
    provider.turns = [
        tool_call_turn("cms_delete_site_page", {"slug": "home", "confirm": True}),
        text_turn(f"**Refused** [here](javascript:window.pwned=2): {hostile}"),
    ]
    say(page, "delete the home page")
    reply = page.locator("reactor-chat .chat-assistant").last
    reply.get_by_text(hostile).wait_for()
    assert reply.locator("strong").inner_text() == "Refused"  # the model's Markdown is drawn
    assert reply.locator("a").count() == 0  # a javascript: link stays text
    assert card(page, "cms_delete_site_page").get_attribute("data-status") == "failed"
    tool_message = next(m for m in provider.requests[-1]["messages"] if m["role"] == "tool")
    assert (
        '"code": "not_admitted"' in tool_message["content"]
        or '"code": "unknown_tool"' in tool_message["content"]
    )
    assert page.evaluate("window.pwned") is None and page.locator("reactor-chat img").count() == 0


def test_a_wrong_api_key_is_reported_in_the_chat(server_page, server, provider):
    page = open_chat(server_page)
    use_fake_provider(page, server)
    chat = page.locator("reactor-chat")
    chat.locator("input[name=apiKey]").fill("wrong-key")
    chat.get_by_role("button", name="Use this model").click()
    say(page, "hello")
    idle(page)
    error = chat.locator(".chat-error").last.inner_text()
    assert "401" in error and "Check the API key" in error and "wrong-key" not in error


def test_unusable_settings_are_named_in_the_form_and_the_model_stays(server_page, server, provider):
    page = open_chat(server_page)
    use_fake_provider(page, server)
    chat = page.locator("reactor-chat")
    chat.locator("input[name=baseUrl]").fill("ftp://models.example/v1")
    chat.get_by_role("button", name="Use this model").click()
    said = chat.locator(".chat-settings [role=alert]")
    expect(said).to_contain_text("The base URL must be an http:// or https:// address")
    expect(page.get_by_test_id("chat-model")).to_contain_text("gpt-test")
    configure = "(s) => window.reactor.chat.configure(s).catch((e) => [e.name, e.message])"
    refused = page.evaluate(configure, {"provider": "openai", "model": "x y"})
    assert refused[0] == "SettingsError" and refused[1].startswith("'x y' is not a model name")


def test_webmcp_gets_the_admitted_tools_and_a_write_through_it_still_asks(server_page):
    page = server_page.page
    page.add_init_script("""
        window.__webmcp = [];
        document.modelContext = { registerTool(tool, options) { window.__webmcp.push(tool); } };
    """)
    chat_of(server_page.open(), "ada")  # the seeded decks are the operators' to change
    page.wait_for_function("window.__webmcp.length > 0")
    names = page.evaluate("window.__webmcp.map(t => t.name)")
    assert "decks_open" in names and not any(n.startswith("cms_") for n in names)
    page.evaluate("""() => {
        window.__answer = window.__webmcp.find(t => t.name === 'decks_update_slide')
            .execute({id: 'onboarding', slide: 1, title: 'Via WebMCP'}, {}); }""")
    # in the person's words, as the chat's own calls: the deck's title
    expect(page.get_by_test_id("approval-question")).to_have_text(
        "Change slide 1 of ‘Onboarding: your first week’?"
    )
    page.get_by_test_id("approval").get_by_role("button", name="Allow", exact=True).click()
    assert page.evaluate("window.__answer")["ok"] is True
    assert (
        page.evaluate("window.__webmcp.find(t => t.name === 'decks_open').annotations.readOnlyHint")
        is True
    )


def test_webmcp_hears_only_what_changed_when_a_plugin_comes_and_goes(server_page):
    page = server_page.page
    page.add_init_script("""
        window.__registered = []; window.__withdrawn = [];
        document.modelContext = { registerTool(tool, { signal }) {
          window.__registered.push(tool.name);
          signal.addEventListener("abort", () => window.__withdrawn.push(tool.name));
        } };
    """)
    chat_of(server_page.open())
    page.wait_for_function("window.__registered.includes('decks_open')")
    before = page.evaluate("window.__registered.length")
    page.evaluate("window.reactor.unloadPlugin('decks')")
    page.wait_for_function("window.__withdrawn.includes('decks_open')")
    assert page.evaluate("window.__registered.length") == before, "nothing was registered again"
    assert all(name.startswith("decks_") for name in page.evaluate("window.__withdrawn"))


def test_stop_reaches_a_running_ai_tool_through_its_signal(new_reactor_page, tmp_path, provider):
    import copy

    import httpx

    from test_ai_tools_declaration import RECORD

    live = start_server(
        tmp_path / "stop",
        plugins=[*discover_plugins(), provider.spec()],
        seed_demo=True,
        agent_spec={"name": "Helper", "plugins": ["ai-tools"]},
    )
    try:
        token = httpx.post(
            f"{live.url}/auth/sign-in", json={"username": "ada", "password": "ada-demo"}
        ).json()["token"]
        record = copy.deepcopy(RECORD)
        record.update(
            id="archive",
            name="archive_lookup",
            visibility={"users": [], "groups": ["staff"]},
            code="async def invoke(args, context):\n    return await "
            "context.fetch_json('/api/maintenance/slow?ms=30000')\n",
        )
        record["settings"]["tool"]["annotations"] = {"sideEffect": "none", "timeoutMs": 60000}
        assert (
            httpx.post(
                f"{live.url}/plugins", json=record, headers={"authorization": f"Bearer {token}"}
            ).status_code
            == 201
        )
        page = open_chat(new_reactor_page(live), "bob")
        page.wait_for_function("window.reactor.aiToolWorkerStats().booted >= 1", timeout=60_000)
        use_fake_provider(page, live)
        provider.turns = [tool_call_turn("archive_lookup", {})]
        say(page, "check the archive")
        card(page, "archive_lookup").wait_for()
        archive = live.app.state.context.platform.server_half("maintenance")
        assert archive.wait_slow("started", timeout=30)["started"] == 1, (
            "the tool's request reached the archive"
        )
        page.locator("reactor-chat").get_by_role("button", name="Stop").click()
        idle(page)
        slow = archive.wait_slow("cancelled")
        assert slow == {"started": 1, "completed": 0, "cancelled": 1}, (
            "Stop aborted the tool's own request, long before its timeout"
        )
        assert card(page, "archive_lookup").get_attribute("data-status") == "failed"
    finally:
        stop_server(live)


def test_a_streamed_reply_shows_its_text_before_the_provider_has_finished(
    server_page,
    server,
    provider,
):
    page = open_chat(server_page)
    use_fake_provider(page, server)
    provider.stream = True
    provider.hold.clear()  # the provider keeps its last events until the test has looked
    provider.turns = [text_turn("Streaming **works** here.")]
    say(page, "say something")
    streaming = page.locator("reactor-chat .chat-assistant[data-streaming=true]")
    streaming.get_by_text("Streaming", exact=False).wait_for()
    assert not provider.last_sent.is_set()  # on screen while the answer is still coming
    provider.hold.set()
    idle(page)
    reply = page.locator("reactor-chat .chat-assistant").last
    assert reply.locator("strong").inner_text() == "works"  # whole, it is drawn as Markdown
    assert provider.requests[-1]["stream"] is True


def test_the_chat_driven_from_code_shows_its_model_and_the_person_can_stop_its_reply(
    server_page,
    server,
    provider,
):
    page = open_chat(server_page)
    page.evaluate(
        "(url) => window.reactor.chat.configure({provider: 'openai', baseUrl: url, model: "
        "'gpt-from-code', apiKey: 'test-key'})",
        f"{server.url}/v1",
    )
    page.get_by_test_id("chat-model").get_by_text(
        "gpt-from-code"
    ).wait_for()  # the label follows the code's choice
    provider.delay = 20
    # not awaited: it runs on
    page.evaluate("() => { window.reactor.chat.send('started by the page'); }")
    assert provider.asked.wait(10), "the model was asked"
    stop = page.locator("reactor-chat").get_by_role("button", name="Stop")
    # Playwright waits until it is enabled: a reply the widget did not start can be stopped
    stop.click()
    idle(page)
    assert provider.hung_up.wait(5), "the request to the provider was aborted"
    assert page.locator("reactor-chat").get_by_role("button", name="Send").is_enabled()


def test_a_model_chosen_by_code_before_the_widget_is_ready_stays_chosen(
    server_page,
    server,
    provider,
):
    page = server_page.page
    page.goto(server.url)
    # as a page's own script does at start, before the widget has chosen its model
    page.evaluate(
        "(url) => window.reactor.chat.configure({provider: 'openai', baseUrl: url, model: "
        "'gpt-at-start', apiKey: 'k'})",
        f"{server.url}/v1",
    )
    label = page.get_by_test_id("chat-model")
    expect(label).to_contain_text("gpt-at-start")
    # the widget chose
    page.locator("reactor-chat select[name=provider] option").first.wait_for(state="attached")
    # the widget's own first choice did not replace it
    expect(label).to_contain_text("gpt-at-start")
    provider.turns = [text_turn("From the page's model.")]
    say(page, "hello")
    idle(page)
    assert provider.requests[-1]["model"] == "gpt-at-start"


def test_a_failed_call_shows_the_person_their_sentence_not_the_models(reactor_page):
    page = reactor_page.page
    chat_of(reactor_page)
    say(page, "list pages")  # a CMS tool, nobody signed in
    idle(page)
    failed = card(page, "cms_list_site_pages")
    assert failed.get_attribute("data-status") == "failed"
    assert (
        failed.get_by_test_id("tool-summary").inner_text()
        == "Sign in at the top of the page first."
    )
    visible = page.locator("reactor-chat").inner_text()
    assert "the person" not in visible and "cms_list_site_pages" not in visible


def allow(page, question):
    """The pending approval asks `question`, in the person's words; the person allows it."""
    pending = page.locator("reactor-chat [data-testid=approval]:not([data-decision])")
    pending.wait_for()
    assert pending.get_by_test_id("approval-question").inner_text() == question
    pending.get_by_role("button", name="Allow", exact=True).click()


def test_the_readmes_cms_try_this_works_as_written(reactor_page):
    page = reactor_page.page
    chat_of(reactor_page, "ada")
    page.locator("#cms").get_by_test_id("cms-site").wait_for()
    say(page, "import the latest post from the demo blog")
    allow(page, "Import 1 post from the blog at /demo-sources/blog/ into Acme Corp as drafts?")
    idle(page)
    imported = card(page, "cms_crawl_blog")
    assert imported.get_attribute("data-status") == "finished"
    assert (
        imported.get_by_test_id("tool-summary")
        .inner_text()
        .endswith("/demo-sources/blog/: ‘Hello from the demo blog’.")
    )
    page.locator('#cms [data-slug="hello-from-the-demo-blog"][data-status="draft"]').wait_for()
    say(page, "publish the post about hello from the demo blog")
    allow(page, "Publish ‘Hello from the demo blog’ on Acme Corp?")
    idle(page)
    line = card(page, "cms_publish_site_page").get_by_test_id("tool-summary").inner_text()
    assert line == "Published ‘Hello from the demo blog’ (hello-from-the-demo-blog)."
    # the card says it; the reply does not
    assert line not in page.locator("reactor-chat .chat-assistant").last.inner_text()
    page.locator('#cms [data-slug="hello-from-the-demo-blog"][data-status="published"]').wait_for()
