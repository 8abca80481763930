"""Every engine a site's visitors use — Chromium, Firefox, WebKit (Safari's) — boots the demo page,
the embed example, the PyScript example and a page without its snapshot; each lists its commands,
calls a tool and draws what the tool changed (a screenshot in test-results/engines/ to look at,
and its key elements checked). On the demo page a person then meets, in each engine, the chat in
time order, the CMS's one sentence, Present's controls at AA contrast and no serious axe-core
finding; with the keyboard alone signs in, chats, allows, presents, and Tab reaches every control;
and each engine's page errors fail the test. A few essential checks per engine: the whole suite
runs in Chromium."""

from __future__ import annotations

import importlib.util
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from accessibility import axe_violations, contrast, said, tab_cycle, tab_to
from reactor.server.app import create_app
from reactor.server.loopback import LoopbackServer
from reactor.testing import call, text
from reactor.testing.engines import ENGINES, PlaywrightPage, debian_engine, playwright_own
from test_embed_page import embedding

pytestmark = pytest.mark.browser

CHECKOUT = Path(__file__).resolve().parents[1]

# The key elements of each page, as a person sees them: present, with a size, not hidden.
UNSEEN = """(selectors) => selectors.filter((selector) => {
  const e = document.querySelector(selector);
  if (!e) return true;
  const box = e.getBoundingClientRect(), style = getComputedStyle(e);
  return !box.width || !box.height || style.visibility === "hidden" || style.display === "none";
})"""
IMPORTED = "() => window.reactor.diagnostics().then((d) => d.checked)"
COMMAND_IDS = "() => window.reactor.listCommands().then((all) => all.map((c) => c.id))"
HAS_BUNDLE = """(id) => new Promise((resolve) => {
  const has = (bundles) => bundles.some((b) => b.id === id);
  const stop = window.reactor.onAgentToolBundles((b) => { if (has(b)) { stop(); resolve(true); } });
  window.reactor.agentToolBundles().then((b) => { if (has(b)) { stop(); resolve(true); } });
  setTimeout(() => { stop(); resolve(false); }, 30000);
})"""


@pytest.fixture(scope="session")
def firefox_pages(playwright):
    """Pages of Firefox: Playwright's own where installed, else Debian's over WebDriver BiDi."""
    if playwright_own(playwright, "firefox"):
        browser = playwright.firefox.launch()
        yield lambda: PlaywrightPage(browser.new_page(), "firefox", "Playwright's Firefox")
        browser.close()
        return
    with debian_engine("firefox") as firefox:
        yield firefox.new_page


@pytest.fixture(scope="session")
def webkit_pages(playwright):
    """Pages of WebKit: Playwright's own where installed, else Debian's WebKitGTK under Xvfb."""
    if playwright_own(playwright, "webkit"):
        browser = playwright.webkit.launch()
        yield lambda: PlaywrightPage(browser.new_page(), "webkit", "Playwright's WebKit")
        browser.close()
        return
    with debian_engine("webkit") as webkit:
        yield webkit.new_page


@pytest.fixture(params=ENGINES)
def engine_page(request):
    """A fresh page of each engine in turn (cookies and storage of its own)."""
    if request.param == "chromium":
        page = PlaywrightPage(request.getfixturevalue("page"), "chromium", "Playwright's Chromium")
    else:
        page = request.getfixturevalue(f"{request.param}_pages")()
    yield page
    page.close()


def clean(page, *origins, allow=()):
    """The page asked no other origin than `origins`, and said no error but those of `allow`."""
    allowed = {urlsplit(origin).netloc for origin in origins}
    strays = [
        url
        for url in page.asked()
        if urlsplit(url).scheme in ("http", "https", "ws", "wss")
        and urlsplit(url).netloc not in allowed
    ]
    assert strays == [], f"{page.engine}: requests off the page's origins: {strays}"
    errors = [e for e in page.heard() if not any(re.search(p, e) for p in allow)]
    assert errors == [], f"{page.engine}: the page went wrong: {errors}"


def boot(page, url):
    page.goto(url)
    return page.run("() => window.reactor.ready")


def use_model(page, model):
    """Point the page's chat at `model` (reactor_model), as Model settings does."""
    settings = {
        "provider": "openai",
        "baseUrl": model.url,
        "model": "stand-in",
        "apiKey": model.key,
    }
    page.until("reactor-chat [data-testid=chat-model]", text="Scripted")
    page.run("(settings) => window.reactor.chat.configure(settings).then(() => null)", settings)
    page.until("reactor-chat [data-testid=chat-model]", text="stand-in")


def test_the_demo_page_boots_lists_calls_and_draws(engine_page, reactor_server):
    page = engine_page
    assert boot(page, reactor_server.url + "/") == {
        "loaded": ["ai-tools", "cms", "decks"],
        "failures": [],
    }
    assert {"decks.open", "decks.present", "cms.crawlBlog"} <= set(page.run(COMMAND_IDS))
    imported = page.run(IMPORTED)
    opened = page.run("() => window.reactor.callTool('decks_open', {id: 'onboarding', slide: 2})")
    assert opened["ok"] and opened["result"]["slideTitle"] == "Day 1: set up", opened
    # What the first call after ready needs (and the chat widget's first use of the host) is in
    # the snapshot: imported there, it held the first call (1.2-3.7 s in WebKit).
    assert page.run(IMPORTED) == imported == [], f"{page.engine} imported them after ready"
    page.until("[data-testid=slide-number]", text="Slide 2 of 5")
    page.until("[data-testid=slide-title]", text="Day 1: set up")
    page.screenshot("demo")
    key = [
        ".bar h1",
        "[data-reactor-progress][data-state=ready]",
        "[data-testid=deck-title]",
        "[data-testid=slide-body]",
        "[data-testid=next-slide]",
        "reactor-chat textarea",
        "#palette button",
    ]
    assert page.run(UNSEEN, key) == [], f"{page.engine} does not show them"
    clean(page, reactor_server.url)


def test_a_person_meets_the_demo_page_alike_in_every_engine(
    engine_page, reactor_server, reactor_model
):
    page = engine_page
    boot(page, reactor_server.url + "/")
    # The CMS says once that eve is in no site.
    page.until("#session input[name=username]")
    page.run(
        """() => { document.querySelector("#session input[name=username]").value = "eve";
                   document.querySelector("#session input[name=password]").value = "eve-demo"; }"""
    )
    page.click("#session button[type=submit]")
    page.until("#cms [data-testid=cms-no-sites]")
    assert page.run("() => [...document.querySelectorAll('#cms p')].map((p) => p.textContent)") == [
        "eve is not a member of any site yet; an administrator adds members."
    ]
    # The chat in time order: the question, the decision, then the result.
    reactor_model.answers = [call("decks_create_deck", {"title": "Eve's notes"}), text("Made.")]
    use_model(page, reactor_model)
    page.run("() => { document.querySelector('reactor-chat textarea').value = 'a deck, please'; }")
    page.click("reactor-chat form.chat-input button[type=submit]")
    page.until("reactor-chat [data-testid=approval]")
    page.click("reactor-chat [data-testid=approval] button")  # the first: Allow
    page.until("reactor-chat .chat-assistant", text="Made.")
    shown = page.run(
        """() => [...document.querySelectorAll("reactor-chat ol.chat-log > li")]
                 .map((li) => [li.className, li.dataset.decision ?? li.dataset.status ?? ""])"""
    )
    assert shown == [
        ["chat-message chat-user", ""],
        ["chat-approval", "allow"],
        ["chat-tool", "finished"],
        ["chat-message chat-assistant", ""],
    ], page.engine
    # Present: its controls at AA contrast, in this engine's drawing, in either theme.
    page.run("() => window.reactor.executeCommand('decks.open', {id: 'onboarding', slide: 2})")
    page.until("[data-testid=present]")
    page.click("[data-testid=present]")
    page.until(".decks--presenting")
    page.screenshot("present")
    for theme in ("light", "dark"):
        page.run("(theme) => { document.getElementById('decks').dataset.theme = theme; }", theme)
        drawn = contrast(page, ".decks--presenting .decks-controls > *")
        assert [c["text"] for c in drawn] == ["Previous", "Next", "Stop", "Print", "2 / 5"]
        faint = [c for c in drawn if c["ratio"] < 4.5]
        assert not faint, f"{page.engine}: below 4.5:1 in the {theme} theme: {faint}"
    found = {"Present, after the chat": axe_violations(page)}
    assert not any(found.values()), f"{page.engine}, axe-core:\n{said(found)}"
    clean(page, reactor_server.url, reactor_model.url)


SAYS_WRONG = """() => {
  console.error("heard: a console error");
  setTimeout(() => { throw new Error("heard: thrown"); });
  Promise.reject(new Error("heard: rejected"));
}"""
A_FRAME = "() => new Promise((drawn) => requestAnimationFrame(drawn))"


def test_every_engine_hears_the_pages_errors_and_they_fail_the_test(engine_page, reactor_server):
    page = engine_page
    boot(page, reactor_server.url + "/")
    page.run(SAYS_WRONG)
    wanted = ["heard: a console error", "heard: thrown", "heard: rejected"]
    deadline = time.monotonic() + 30
    while not all(any(w in e for e in page.heard()) for w in wanted):
        assert time.monotonic() < deadline, f"{page.engine} heard only {page.heard()}"
        page.run(A_FRAME)  # the engine tells its driver meanwhile
    with pytest.raises(AssertionError, match="the page went wrong"):
        clean(page, reactor_server.url)


PENDING = "reactor-chat [data-testid=approval]:not([data-decision])"


def test_a_keyboard_alone_signs_in_chats_allows_and_presents_in_every_engine(
    engine_page, reactor_server, reactor_model
):
    page = engine_page
    boot(page, reactor_server.url + "/")
    reactor_model.answers = [call("decks_create_deck", {"title": "Weekly notes"}), text("Made.")]
    use_model(page, reactor_model)
    tab_to(page, "#session input[name=username]")
    page.type("ada")
    page.press("Tab")
    page.type("ada-demo")
    page.press("Enter")
    page.until("[data-testid=signed-in-as]")
    tab_to(page, "reactor-chat textarea")
    page.type("make a deck called Weekly notes")
    page.press("Enter")
    page.until(PENDING)
    # Back from the message box to the question's buttons: Deny, Always allow, then Allow.
    tab_to(page, f"{PENDING} button:first-of-type", backwards=True)
    page.press("Enter")
    page.until("reactor-chat .chat-assistant", text="Made.")
    decided = page.run(
        """() => [document.querySelector("reactor-chat [data-testid=approval-choice]").textContent,
                  document.querySelector("reactor-chat [data-tool=decks_create_deck]"
                                         + "[data-testid=tool-card]").dataset.status]"""
    )
    assert decided == ["Allowed.", "finished"], page.engine
    # The deck list, back from the chat (forward, Tab would pass the page's end: Firefox, below);
    # a deck: open, present, move on, leave.
    page.until("#decks", text="Weekly notes")  # the list, redrawn with the new deck
    tab_to(page, "[data-testid=open-deck]", backwards=True)
    page.press("Enter")
    page.until("[data-testid=slide-number]", text="Slide 1 of")
    tab_to(page, "[data-testid=present]")
    page.press("Enter")
    page.until(".decks--presenting")
    assert page.run("() => document.fullscreenElement?.id ?? null") == "decks", page.engine
    page.press("ArrowRight")
    page.until("#decks[data-slide='2']")
    page.press("Escape")
    page.until("#decks:not(.decks--presenting)")
    # Tab reaches every control: signed in (the CMS's site, the Agents' token), a deck open. Last:
    # in Firefox, a Tab past the page's last control takes the focus to the browser's toolbar,
    # as for a person, but WebDriver's keys, given to the page, never bring it back. WebKitGTK
    # Tabs to buttons and links (Safari on macOS only with "Press Tab to highlight each item").
    page.until("#cms [data-testid=cms-site]")
    page.until("#agents button", text="Make a token")
    missed = tab_cycle(page)
    assert not missed, f"{page.engine}: Tab never reaches:\n" + "\n".join(missed)
    clean(page, reactor_server.url, reactor_model.url)


def test_the_embed_example_boots_lists_calls_and_draws(engine_page, tmp_path):
    page = engine_page
    with embedding(tmp_path) as (live, site):
        assert boot(page, site) == {"loaded": ["todo-stats"], "failures": []}
        assert page.run(HAS_BUNDLE, "todo"), f"{page.engine}: the page's own plugin came"
        assert {"todo.add", "todo.list", "todoStats.count"} <= set(page.run(COMMAND_IDS))
        added = page.run("() => window.reactor.callTool('todo_add', {title: 'Call the plumber'})")
        assert added == {
            "ok": True,
            "result": {"id": 3, "title": "Call the plumber", "done": False},
        }
        page.until("#todos li[data-id='3']", text="Call the plumber")
        stats = page.run("() => window.reactor.callTool('todo_stats', {})")
        assert stats["result"] == {"total": 3, "done": 0, "open": 3}
        page.screenshot("embed")
        key = ["#todos li[data-id='3'] .todo-title", "#new-todo input", "reactor-chat textarea"]
        assert page.run(UNSEEN, key) == [], f"{page.engine} does not show them"
        clean(page, live.url, site)


@pytest.fixture
def pyscript_example(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "pyscript_example", CHECKOUT / "examples" / "pyscript" / "serve.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with LoopbackServer(module.make_app(tmp_path / "data")) as url:
        yield url


def test_the_pyscript_example_boots_lists_calls_and_draws(engine_page, pyscript_example):
    page = engine_page
    page.goto(f"{pyscript_example}/pyscript/")
    page.until("#status", text="Ready: the assistant can list and add items", timeout_ms=180_000)
    status = page.run("() => document.querySelector('[data-reactor-progress]').textContent")
    assert re.fullmatch(r"Ready in \d+\.\d s: shopping\.", status), f"{page.engine}: {status}"
    assert {"shopping.list", "shopping.add"} <= set(page.run(COMMAND_IDS))
    added = page.run("() => window.reactor.callTool('shopping_add_item', {text: 'Milk'})")
    assert added == {"ok": True, "result": {"count": 1, "items": ["Milk"]}}, added
    page.until("#items li", text="Milk")
    page.screenshot("pyscript")
    assert page.run(UNSEEN, ["#items li", "#status", "reactor-chat textarea"]) == []
    clean(page, pyscript_example)


def without_snapshot(app):
    """`app`, answering 404 for the memory snapshot's files: the page boots Pyodide from its own."""

    async def serve(scope, receive, send):
        if scope["type"] == "http" and "/snapshot/" in scope["path"]:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"gone"})
            return
        await app(scope, receive, send)

    return serve


def test_a_page_without_its_snapshot_boots_lists_calls_and_draws(engine_page, tmp_path):
    page = engine_page
    with LoopbackServer(without_snapshot(create_app(tmp_path / "data"))) as url:
        assert boot(page, url + "/")["failures"] == []
        assert page.run("() => window.reactor.diagnostics()")["snapshot"] is False
        assert "decks.open" in page.run(COMMAND_IDS)
        listed = page.run("() => window.reactor.callTool('decks_list_decks', {})")
        assert "onboarding" in {deck["id"] for deck in listed["result"]["decks"]}
        page.run("() => window.reactor.callTool('decks_open', {id: 'onboarding', slide: 3})")
        page.until("[data-testid=slide-number]", text="Slide 3 of 5")
        page.screenshot("no-snapshot")
        clean(page, url, allow=[r"404", r"snapshot"])
