"""The page in real Chromium: boot, the window.reactor facade, and boot errors shown on the page."""

import re

import pytest
from conftest import start_server, stop_server
from playwright.sync_api import expect

from reactor.plugin_spec import PluginSpec, discover_plugins
from reactor.testing import PageCallError

pytestmark = pytest.mark.browser


def test_the_page_boots_offline_and_lists_the_same_bundles_as_the_server(reactor_page):
    assert reactor_page.ready["failures"] == []
    from_page = reactor_page.bundles()
    from_server = reactor_page.page.evaluate("fetch('/plugins/agent-tools').then(r => r.json())")
    assert from_page == from_server
    assert from_page, "the demo lists at least one bundle"
    progress = reactor_page.page.locator("[data-reactor-progress]")
    assert progress.get_attribute("data-state") == "ready"


def test_pyodide_starts_booting_before_the_boot_list_arrives(reactor_page):
    page = reactor_page.page
    started, boot_list = page.evaluate("""[
        performance.getEntriesByName("reactor:pyodide-start")[0].startTime,
        performance.getEntriesByType("resource")
            .find((e) => e.name.endsWith("/app/boot.json")).startTime]""")
    assert started < boot_list
    assert page.evaluate("performance.getEntriesByName('reactor:pyodide-start').length") == 1


def test_no_module_imported_after_pyodides_boot_is_compiled_in_the_worker(reactor_page):
    found = reactor_page.page.evaluate("window.reactor.diagnostics()")
    imported_in_snapshot = {
        "reactor.browser",
        "reactor.protocol",
        "reactor.facade",
        "reactor_plugins.decks",
    }
    assert not imported_in_snapshot & set(found["checked"]), (
        "imported in the memory snapshot, with the page's bundle"
    )
    assert found["stdlibFromZip"] == [], "add them to server.runtime.stdlib.STDLIB_AFTER_BOOT"
    assert found["stale"] == []


# A page's own Python plugin that imports a stdlib module neither reactor nor the snapshot has.
STATISTICS = """<script type="reactor/python" id="stats">
from reactor import define_plugin

def mean(args):
    import statistics
    return statistics.mean(args["values"])

PLUGIN = define_plugin(
    name="stats", register=lambda context: context.register_command("stats.mean", mean)
)
</script>"""


def test_the_stdlib_zip_is_downloaded_only_when_python_first_imports_from_it(new_reactor_page):
    reactor = new_reactor_page()
    asked = []

    def stdlib(route):
        asked.append(route.request.url)
        route.continue_()

    def with_statistics(route):
        page = route.fetch()
        route.fulfill(response=page, body=page.text().replace("</body>", STATISTICS + "</body>"))

    reactor.page.route("**/python_stdlib.zip*", stdlib)
    reactor.page.route(reactor.server.url + "/", with_statistics)
    assert reactor.open().ready["failures"] == []
    assert reactor.page.evaluate("window.reactor.diagnostics()")["snapshot"] is True
    assert asked == [], (
        "a page restored from the snapshot imports nothing from the zip at its start"
    )
    assert reactor.execute("stats.mean", {"values": [1, 2, 6]}) == 3
    assert len(asked) == 1
    assert reactor.execute("stats.mean", {"values": [2, 4]}) == 3
    assert len(asked) == 1


# A page's own Python plugin that reads reactor's source (as a traceback shows it) and imports
# pkgutil, which the snapshot does not have, at its start or once it runs.
LATER = """<script type="reactor/python" id="later">
IMPORT_AT_START
from reactor import define_plugin

def read_and_import(args):
    import inspect
    import reactor
    source = inspect.getsource(reactor.define_plugin)  # before any import that Python looks for
    import pkgutil
    return {"source": source, "pkgutil": pkgutil.__name__}

PLUGIN = define_plugin(
    name="later", register=lambda context: context.register_command("later.read", read_and_import)
)
</script>"""


@pytest.mark.parametrize("at_start", ["import pkgutil", ""], ids=["at-its-start", "once-ready"])
def test_a_page_restored_from_the_snapshot_finds_its_python_files(new_reactor_page, at_start):
    """The files are written after ready, or at the first import that needs them."""
    reactor = new_reactor_page()
    script = LATER.replace("IMPORT_AT_START", at_start)

    def with_later(route):
        page = route.fetch()
        route.fulfill(response=page, body=page.text().replace("</body>", script + "</body>"))

    reactor.page.route(reactor.server.url + "/", with_later)
    assert reactor.open().ready["failures"] == []
    assert reactor.page.evaluate("window.reactor.diagnostics()")["snapshot"] is True
    found = reactor.execute("later.read")
    assert found["source"].startswith("def define_plugin(") and found["pkgutil"] == "pkgutil"


# A page's own Python plugin that tells what Python drew and which time zone it knows.
DRAWN = """<script type="reactor/python" id="drawn">
import os, random, time
from reactor import define_plugin

def register(context):
    context.register_command("probe.drawn", lambda args: {
        "random": random.random(), "timezone": time.timezone, "offset": time.localtime().tm_gmtoff,
        "environ": dict(os.environ)})

PLUGIN = define_plugin(name="drawn", register=register)
</script>"""


def with_drawn_plugin(route):
    page = route.fetch()
    route.fulfill(response=page, body=page.text().replace("</body>", DRAWN + "</body>"))


def test_python_is_restored_from_the_servers_snapshot_with_its_own_draws_and_time_zone(
    new_reactor_page,
    new_context,
):
    context = new_context(timezone_id="Asia/Tokyo")  # the snapshot was made in UTC
    drawn = []
    for _ in range(2):
        reactor = new_reactor_page(page=context.new_page())
        reactor.page.route(reactor.server.url + "/", with_drawn_plugin)
        assert reactor.open().page.evaluate("window.reactor.diagnostics()")["snapshot"] is True
        drawn.append(reactor.execute("probe.drawn"))
        reactor.page.close()
    assert drawn[0]["random"] != drawn[1]["random"], "each page reseeds random"
    assert [d["offset"] for d in drawn] == [9 * 3600] * 2
    assert [d["timezone"] for d in drawn] == [-9 * 3600] * 2
    # The snapshot was made on the server: nothing of its environment (paths, variables) came along.
    environ = drawn[0]["environ"]
    assert environ.get("_") == "./this.program" and environ["HOME"] == "/home/pyodide", environ


def test_without_its_snapshot_the_page_boots_pyodide_from_its_files(new_reactor_page):
    reactor = new_reactor_page()
    refused = []

    def gone(route):
        refused.append(route.request.url)
        route.fulfill(status=404, body="gone")

    reactor.page.route("**/snapshot/*", gone)
    reactor.expect_console_error("the server responded with a status of 404")
    assert reactor.open().ready["failures"] == [] and refused
    assert reactor.page.evaluate("window.reactor.diagnostics()")["snapshot"] is False
    expect(reactor.page.locator("[data-reactor-progress]")).to_have_attribute("data-state", "ready")
    assert reactor.execute("decks.listDecks")


HOST_BUTTON = """addEventListener("DOMContentLoaded", () => {
  const button = Object.assign(document.createElement("button"),
                               {id: "host-button", textContent: "Clicked 0 times"});
  window.__clicks = [];
  button.addEventListener("click", (event) => {
    window.__clicks.push({waited: performance.now() - event.timeStamp, booting: !window.__readyAt});
    button.textContent = `Clicked ${window.__clicks.length} times`;
  });
  document.body.prepend(button);
  window.reactor.ready.then(() => { window.__readyAt = performance.now(); });
});"""


def test_the_host_page_answers_clicks_at_once_while_python_boots(new_reactor_page):
    reactor = new_reactor_page()
    page = reactor.page
    page.add_init_script(HOST_BUTTON)
    page.goto(reactor.server.url, wait_until="domcontentloaded")
    button = page.locator("#host-button")
    clicks = 0
    while page.evaluate("!window.__readyAt") and clicks < 500:
        button.click()
        clicks += 1
        expect(button).to_have_text(f"Clicked {clicks} times")  # on the screen, not only in a flag
    seen = page.evaluate("window.__clicks")
    booting = [click for click in seen if click["booting"]]
    assert len(booting) >= 5, f"only {len(booting)} clicks landed before reactor.ready"
    assert max(click["waited"] for click in booting) < 100, booting  # no long task held the page
    assert page.locator("[data-reactor-progress]").get_attribute("data-state") == "ready"


def test_an_unknown_command_rejects_with_the_sentence(reactor_page):
    with pytest.raises(PageCallError) as refused:
        reactor_page.execute("decks.fly")
    assert refused.value.name == "CommandNotFoundError"
    assert refused.value.message.startswith("There is no command 'decks.fly'.")


def test_every_shape_of_arguments_crosses_to_python_as_it_did_whole(reactor_page):
    """The worker's JavaScript reads a call's envelope and hands Python its arguments' text
    (web/reactor-worker.js); what a page passes must mean what it meant when Python read it all."""
    outcomes = reactor_page.page.evaluate(
        """async () => {
            const run = (id, args) => window.reactor.executeCommand(id, args).then(
                (value) => ({ value }), (e) => ({ name: e.name, message: e.message }));
            return [
                await run("decks.getDeck", { id: "onboarding" }),
                await run("decks.getDeck", '{"id": "onboarding"}'),
                await run("decks.listDecks", null),
                await run("decks.getDeck", [1]),
                await run("decks.getDeck", "not json"),
                await run("decks.getDeck", { id: 7 }),
                await run(5, {}),
            ];
        }"""
    )
    by_object, by_text, listed, array, not_json, wrong, numbered = outcomes
    assert by_object["value"]["deck"]["id"] == "onboarding" and by_text == by_object
    assert any(deck["id"] == "onboarding" for deck in listed["value"]["decks"])
    assert array == {
        "name": "InvalidArgumentsError",
        "message": "The arguments of 'decks.getDeck' must be an object, not list.",
    }
    assert not_json["name"] == "InvalidArgumentsError" and "not valid JSON" in not_json["message"]
    assert (
        wrong["name"] == "InvalidArgumentsError"
        and "$.id: 7 is not of type 'string'" in wrong["message"]
    )
    assert numbered["name"] == "CommandNotFoundError" and numbered["message"].startswith(
        "There is no command 5."
    )


def test_executing_before_ready_waits_for_python(new_reactor_page):
    reactor = new_reactor_page()
    reactor.page.goto(reactor.server.url, wait_until="domcontentloaded")
    assert reactor.page.locator("[data-reactor-progress]").get_attribute("data-state") == "loading"
    commands = reactor.page.evaluate("window.reactor.listCommands()")
    assert any(c["id"] == "decks.open" for c in commands)


def test_a_slow_download_shows_how_much_of_python_has_come(new_reactor_page):
    reactor = new_reactor_page()
    page = reactor.page
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    link = {"offline": False, "latency": 20, "downloadThroughput": 20e6 / 8, "uploadThroughput": -1}
    cdp.send("Network.emulateNetworkConditions", link)  # 20 Mbit/s: ~3 s for the first visit
    page.goto(reactor.server.url)
    progress = page.locator("[data-reactor-progress]")
    downloading = re.compile(r"^Downloading Python… (\d+) % \(\d+\.\d s\)$")
    expect(progress).to_have_text(downloading, timeout=20_000)
    first = int(downloading.match(progress.inner_text())[1])
    page.wait_for_function(
        """(first) => {
            const text = document.querySelector("[data-reactor-progress]").textContent;
            const share = text.match(/^Downloading Python… (\\d+) %/);
            return share ? Number(share[1]) > first : !text.startsWith("Downloading");
        }""",
        arg=first,
        timeout=20_000,
    )
    expect(progress).to_have_attribute("data-state", "ready", timeout=30_000)
    assert progress.inner_text().startswith("Ready in ")


@pytest.mark.parametrize(
    "failing, status, shown",
    [
        ("**/app/boot.json", 500, "the server answered 500 for /app/boot.json"),
        ("**/app/python-*.bundle", 503, "the page's Python could not be installed: "),
    ],
)
def test_a_boot_failure_is_shown_on_the_page(new_reactor_page, failing, status, shown):
    reactor = new_reactor_page()
    page = reactor.page
    reactor.expect_console_error(f"status of {status}")
    page.route(failing, lambda route: route.fulfill(status=status, body="{}"))
    page.goto(reactor.server.url)
    progress = page.locator("[data-reactor-progress][data-state='error']")
    progress.wait_for()
    assert f"Reactor could not start: {shown}" in progress.inner_text()
    rejected = page.evaluate("window.reactor.ready.then(() => 'ok', e => e.message)")
    assert shown in rejected and f"answered {status}" in rejected


GHOST = PluginSpec(name="ghost", page="reactor_plugins.ghost:PLUGIN")


def test_a_plugin_that_cannot_load_is_reported_on_the_page_and_the_rest_work(
    new_reactor_page,
    tmp_path,
):
    live = start_server(tmp_path, plugins=[*discover_plugins(), GHOST], seed_demo=True)
    try:
        reactor = new_reactor_page(live).expect_load_failure("Plugin 'ghost'").open()
        assert "Plugin 'ghost' could not be imported" in reactor.ready["failures"][0]
        progress = reactor.page.locator("[data-reactor-progress]")
        assert progress.get_attribute("data-state") == "warning"
        assert "Plugin 'ghost' could not be imported" in progress.inner_text()
        assert reactor.execute("decks.listDecks")
    finally:
        stop_server(live)
