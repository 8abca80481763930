"""The page in real Chromium: boot, the window.reactor facade, and boot errors shown on the page."""

import pytest
from conftest import start_server, stop_server

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


def test_a_boot_failure_is_shown_on_the_page(page, live_server):
    page.route("**/app/boot.json", lambda route: route.fulfill(status=500, body="{}"))
    page.goto(live_server.url)
    progress = page.locator("[data-reactor-progress][data-state='error']")
    progress.wait_for()
    assert "Reactor could not start: the server answered 500" in progress.inner_text()
    assert page.evaluate("window.reactor.ready.then(() => 'ok', e => e.message)").endswith("answered 500 for /app/boot.json")


class GhostPlugin:
    name = "ghost"
    page_plugin = "reactor_plugins.ghost:PLUGIN"


def test_a_plugin_that_cannot_load_is_reported_on_the_page_and_the_rest_work(page, tmp_path):
    from reactor.server.app import default_plugins

    live = start_server(tmp_path, plugins=[*default_plugins(), GhostPlugin()], seed_demo=True)
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
