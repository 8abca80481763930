"""The page in real Chromium: boot, the window.reactor facade, and boot errors shown on the page."""

import pytest
from conftest import start_server, stop_server
from playwright.sync_api import expect

from reactor.plugin_spec import PluginSpec, discover_plugins

pytestmark = pytest.mark.browser


def open_ready(page, url):
    page.goto(url)
    return page.evaluate("window.reactor.ready")


def test_the_page_boots_offline_and_lists_the_same_bundles_as_the_server(offline_page, live_server):
    load = open_ready(offline_page, live_server.url)
    assert load["failures"] == []
    from_page = offline_page.evaluate("window.reactor.agentToolBundles()")
    from_server = offline_page.evaluate("fetch('/plugins/agent-tools').then(r => r.json())")
    assert from_page == from_server
    assert from_page, "the demo lists at least one bundle"
    assert offline_page.locator("[data-reactor-progress]").get_attribute("data-state") == "ready"


def test_pyodide_starts_booting_before_the_boot_list_arrives(offline_page, live_server):
    open_ready(offline_page, live_server.url)
    started, boot_list = offline_page.evaluate("""[
        performance.getEntriesByName("reactor:pyodide-start")[0].startTime,
        performance.getEntriesByType("resource").find((e) => e.name.endsWith("/app/boot.json")).startTime]""")
    assert started < boot_list
    assert offline_page.evaluate("performance.getEntriesByName('reactor:pyodide-start').length") == 1


def test_no_module_imported_after_pyodides_boot_is_compiled_in_the_worker(offline_page, live_server):
    open_ready(offline_page, live_server.url)
    found = offline_page.evaluate("window.reactor.diagnostics()")
    assert {"reactor.browser", "reactor.protocol", "reactor.facade"} <= set(found["checked"])
    assert found["stdlibFromZip"] == [], "add them to runtime_python.STDLIB_AFTER_BOOT"
    assert found["stale"] == []


HOST_BUTTON = """addEventListener("DOMContentLoaded", () => {
  const button = Object.assign(document.createElement("button"), {id: "host-button", textContent: "Clicked 0 times"});
  window.__clicks = [];
  button.addEventListener("click", (event) => {
    window.__clicks.push({waited: performance.now() - event.timeStamp, booting: !window.__readyAt});
    button.textContent = `Clicked ${window.__clicks.length} times`;
  });
  document.body.prepend(button);
  window.reactor.ready.then(() => { window.__readyAt = performance.now(); });
});"""


def test_the_host_page_answers_clicks_at_once_while_python_boots(offline_page, live_server):
    offline_page.add_init_script(HOST_BUTTON)
    offline_page.goto(live_server.url, wait_until="domcontentloaded")
    button = offline_page.locator("#host-button")
    clicks = 0
    while offline_page.evaluate("!window.__readyAt") and clicks < 500:
        button.click()
        clicks += 1
        expect(button).to_have_text(f"Clicked {clicks} times")  # on the screen, not only in a flag
    seen = offline_page.evaluate("window.__clicks")
    booting = [click for click in seen if click["booting"]]
    assert len(booting) >= 5, f"only {len(booting)} clicks landed before reactor.ready"
    assert max(click["waited"] for click in booting) < 100, booting  # no long task held the page
    assert offline_page.locator("[data-reactor-progress]").get_attribute("data-state") == "ready"


def test_an_unknown_command_rejects_with_the_sentence(offline_page, live_server):
    open_ready(offline_page, live_server.url)
    error = offline_page.evaluate(
        "window.reactor.executeCommand('decks.fly', {}).then(() => null, e => ({name: e.name, message: e.message}))"
    )
    assert error["name"] == "CommandNotFoundError"
    assert error["message"].startswith("There is no command 'decks.fly'.")


def test_executing_before_ready_waits_for_python(offline_page, live_server):
    offline_page.goto(live_server.url, wait_until="domcontentloaded")
    assert offline_page.locator("[data-reactor-progress]").get_attribute("data-state") == "loading"
    commands = offline_page.evaluate("window.reactor.listCommands()")
    assert any(c["id"] == "decks.open" for c in commands)


@pytest.mark.parametrize(
    "failing, status, shown",
    [
        ("**/app/boot.json", 500, "the server answered 500 for /app/boot.json"),
        ("**/app/python-*.bundle", 503, "the page's Python could not be installed: "),
    ],
)
def test_a_boot_failure_is_shown_on_the_page(page, live_server, failing, status, shown):
    page.route(failing, lambda route: route.fulfill(status=status, body="{}"))
    page.goto(live_server.url)
    progress = page.locator("[data-reactor-progress][data-state='error']")
    progress.wait_for()
    assert f"Reactor could not start: {shown}" in progress.inner_text()
    rejected = page.evaluate("window.reactor.ready.then(() => 'ok', e => e.message)")
    assert shown in rejected and f"answered {status}" in rejected


GHOST = PluginSpec(name="ghost", page="reactor_plugins.ghost:PLUGIN")


def test_a_plugin_that_cannot_load_is_reported_on_the_page_and_the_rest_work(page, tmp_path):
    live = start_server(tmp_path, plugins=[*discover_plugins(), GHOST], seed_demo=True)
    try:
        load = open_ready(page, live.url)
        assert "Plugin 'ghost' could not be imported" in load["failures"][0]
        progress = page.locator("[data-reactor-progress]")
        assert progress.get_attribute("data-state") == "warning"
        assert "Plugin 'ghost' could not be imported" in progress.inner_text()
        decks = page.evaluate("window.reactor.executeCommand('decks.listDecks', {})")
        assert decks
    finally:
        stop_server(live)
