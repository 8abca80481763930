"""Reactor embedded in a page of another origin (examples/embed, a to-do list), in real Chromium."""

import functools
import importlib.util
import threading
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from conftest import start_server, stop_server

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "embed" / "serve.py"
TODO_TOOLS = {"todo_add", "todo_list", "todo_complete", "todo_select"}


@contextmanager
def embedding(tmp_path, allowed=None, plugins=None, **options):
    """The reactor server (with `options`, as create_app takes them) and the example page, each
    on its own loopback port. The example's socket is bound first (port 0), so the reactor server
    cannot be given the same port."""
    spec = importlib.util.spec_from_file_location("embed_example_serve", EXAMPLE)
    serve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve)
    site_server = serve.make_server(0, "")
    site = f"http://127.0.0.1:{site_server.server_address[1]}"
    try:
        live = start_server(
            tmp_path / "data",
            seed_demo=True,
            allow_origins=[site] if allowed is None else allowed,
            **({} if plugins is None else {"plugins": plugins}),
            **options,
        )
    except BaseException:
        site_server.server_close()
        raise
    # The example's pages name the reactor server, whose address is known only now.
    site_server.RequestHandlerClass = functools.partial(
        serve.ExampleHandler, reactor=live.url.rstrip("/")
    )
    thread = threading.Thread(target=site_server.serve_forever, daemon=True)
    thread.start()
    try:
        yield live, site
    finally:
        site_server.shutdown()
        site_server.server_close()
        stop_server(live)


@pytest.fixture
def embedded(new_reactor_page, tmp_path):
    """The example page, reactor ready with its to-do tools; requests may go to its two origins."""
    with embedding(tmp_path) as (live, site):
        reactor = new_reactor_page(live).allow_origin(site).open(site)
        reactor.wait_for_bundle("todo")
        yield reactor


def test_the_example_on_another_origin_boots_reactor_with_its_python_and_javascript_plugins(
    embedded,
):
    page = embedded.page
    assert embedded.ready == {"loaded": ["todo-stats"], "failures": []}
    assert page.locator("[data-reactor-progress]").get_attribute("data-state") == "ready"
    assert page.evaluate("window.reactor.diagnostics()")["snapshot"] is True, (
        "restored from the server's snapshot"
    )
    assert set(embedded.tools()) == TODO_TOOLS | {"todo_stats"}
    commands = {c["id"]: c for c in page.evaluate("window.reactor.listCommands()")}
    assert {"todo.add", "todo.list", "todo.complete", "todo.select", "todoStats.count"} <= set(
        commands
    )
    assert (
        commands["todo.add"]["plugin"] == "todo"
        and commands["todoStats.count"]["plugin"] == "todo-stats"
    )


def test_both_plugins_tools_answer_with_the_envelope_and_read_the_live_list(embedded):
    page, call = embedded.page, embedded.call_tool
    listed = call("todo_list")
    assert listed["ok"] is True and [t["title"] for t in listed["result"]] == [
        "Water the plants",
        "Write to the landlord",
    ]
    # The person changes the page after the plugins registered: the next calls see it.
    page.fill("#new-todo input[name=title]", "Buy milk")
    page.press("#new-todo input[name=title]", "Enter")
    page.click("#todos li[data-id='2'] .todo-title")
    assert [t["title"] for t in call("todo_list")["result"]][-1] == "Buy milk"
    done = {"id": 2, "title": "Write to the landlord", "done": True}
    assert call("todo_complete") == {"ok": True, "result": done}
    assert call("todo_stats") == {"ok": True, "result": {"total": 3, "done": 1, "open": 2}}
    added = call("todo_add", {"title": "Call the plumber"})
    assert added == {"ok": True, "result": {"id": 4, "title": "Call the plumber", "done": False}}
    page.locator("#todos li[data-id='4']").get_by_text("Call the plumber").wait_for()
    assert call("todo_select", {"id": 4})["ok"] is True
    assert page.locator("#todos li.selected").inner_text() == "Call the plumber"


def test_a_javascript_handler_s_failure_and_bad_arguments_come_back_as_envelopes(embedded):
    missing = embedded.call_tool("todo_complete", {"id": 99})
    assert missing["ok"] is False and missing["error"]["code"] == "failed"
    assert missing["error"]["message"] == "There is no to-do 99; the list has 1, 2."
    bad = embedded.call_tool("todo_add", {"title": ""})
    assert (
        bad["error"]["code"] == "invalid_arguments"
        and bad["error"]["problems"][0]["path"] == "$.title"
    )


def test_a_misdeclared_javascript_plugin_is_refused_with_the_sentence_and_nothing_is_registered(
    embedded,
):
    page = embedded.page
    before = page.evaluate("window.reactor.listCommands()")
    error = page.evaluate("""window.reactor.definePlugin({
        name: "weather",
        commands: [{id: "weather.now", execute: () => ({sky: "blue"})}],
        agentTools: {id: "weather", name: "Weather",
                     commands: [{name: "weather.now", command: "weather.now",
                                 description: "Say the weather."}]},
    }).then(() => null, (e) => ({name: e.name, message: e.message}))""")
    assert error["name"] == "DeclarationError"
    assert "'weather.now' is not a name a model can call" in error["message"]
    assert page.evaluate("window.reactor.listCommands()") == before
    assert "weather" not in {b["id"] for b in embedded.bundles()}
    taken = page.evaluate("""window.reactor.definePlugin(
            {name: "copycat", commands: [{id: "todo.add", execute() {}}]})
        .then(() => null, (e) => ({name: e.name, message: e.message}))""")
    assert (
        taken["name"] == "PluginLoadError"
        and "'todo.add' is already registered by plugin 'todo'" in taken["message"]
    )
    assert embedded.call_tool("todo_add", {"title": "Still mine"})["ok"] is True, "the first's stay"


def test_unloading_a_plugin_takes_its_commands_and_tools_and_tells_the_host(embedded):
    page = embedded.page
    page.evaluate("""() => {
        window.__heard = [];
        window.reactor.onAgentToolBundles(
            (bundles) => window.__heard.push(bundles.map((b) => b.id)));
        window.__disposed = 0;
        return window.reactor.definePlugin({name: "extra",
                                            commands: [{id: "extra.ping", execute: () => "pong"}],
                                            dispose() { window.__disposed += 1; }});
    }""")
    assert page.evaluate("window.reactor.unloadPlugin('todo')") == ["todo"]
    page.wait_for_function("window.__heard.length > 0")  # told once, after the burst of changes
    assert page.evaluate("window.__heard") == [["todo-stats"]]
    assert embedded.tools() == ["todo_stats"]
    assert not any(c["plugin"] == "todo" for c in page.evaluate("window.reactor.listCommands()"))
    assert embedded.call_tool("todo_list")["error"]["code"] == "unknown_tool"
    assert "There is no command 'todo.list'" in embedded.call_tool("todo_stats")["error"]["message"]
    assert page.evaluate("window.reactor.unloadPlugin('extra')") == ["extra"]
    assert page.evaluate("window.__disposed") == 1
    error = page.evaluate("window.reactor.unloadPlugin('todo').then(() => null, (e) => e.name)")
    assert error == "PluginNotFoundError"


def test_a_listener_hears_what_changed_the_bundles_added_and_the_ids_removed(embedded):
    heard = embedded.page.evaluate("""async () => {
        const heard = [];
        const stop = window.reactor.onAgentToolBundles((bundles, change) => heard.push({
            ids: bundles.map((b) => b.id), added: change.added.map((b) => b.id),
            removed: [...change.removed], listed: change.added.every((b) => bundles.includes(b)),
            frozen: [change, change.added, change.removed].every(Object.isFrozen)}));
        const tool = {name: "extra_go", command: "extra.go", description: "Go."};
        await window.reactor.definePlugin({name: "extra",
            commands: [{id: "extra.go", execute: () => 1}],
            agentTools: {id: "extra", name: "Extra", commands: [tool]}});
        await window.reactor.unloadPlugin("extra");
        stop();
        return heard;
    }""")
    before = [b["id"] for b in embedded.page.evaluate("window.reactor.agentToolBundles()")]
    told = {"listed": True, "frozen": True}
    assert heard == [
        {"ids": [*before, "extra"], "added": ["extra"], "removed": [], **told},
        {"ids": before, "added": [], "removed": ["extra"], **told},
    ]


def test_a_definition_s_tools_are_listed_the_moment_it_resolves(embedded):
    # The worker coalesces change notices after a burst; the page waits for the one that covers
    # each definition, so a host that defines and then lists never sees the list without it.
    listed = embedded.page.evaluate("""async () => {
        const seen = [];
        for (let i = 0; i < 5; i++) {
            await window.reactor.definePlugin({name: `p${i}`,
                commands: [{id: `p${i}.go`, execute: () => i}],
                agentTools: {id: `p${i}`, name: `P${i}`,
                             commands: [{name: `p${i}_go`, command: `p${i}.go`,
                                         description: "Go."}]}});
            seen.push((await window.reactor.agentToolBundles()).some((b) => b.id === `p${i}`));
        }
        await window.reactor.unloadPlugin("p0");
        seen.push((await window.reactor.agentToolBundles()).some((b) => b.id === "p0"));
        return seen;
    }""")
    assert listed == [True, True, True, True, True, False]


def test_a_javascript_command_s_is_enabled_reads_the_page_s_state_at_the_moment_of_the_call(
    embedded,
):
    page = embedded.page
    page.evaluate("""() => {
        window.__open = false;
        return window.reactor.definePlugin({name: "door", commands: [
            {id: "door.walk", execute: () => "walked", isEnabled: () => window.__open}]});
    }""")
    available = (
        "window.reactor.listCommands().then((all) => all.find((c) => c.id === "
        "'door.walk').available)"
    )
    found = "window.reactor.findCommands('DOOR').then((f) => [f.matching, f.commands[0].available])"
    assert page.evaluate(available) is False and page.evaluate(found) == [1, False]
    refused = page.evaluate(
        "window.reactor.executeCommand('door.walk').then(() => null, (e) => [e.name, e.message])"
    )
    assert refused == [
        "CommandUnavailableError",
        "The command 'door.walk' is unavailable right now: it is disabled in the current "
        "state of the page",
    ]
    page.evaluate("window.__open = true")
    assert page.evaluate(available) is True and page.evaluate(found) == [1, True]
    assert embedded.execute("door.walk") == "walked"


def test_a_call_stopped_in_the_page_is_stopped_in_the_worker_and_its_late_result_dropped(embedded):
    answer = embedded.page.evaluate("""async () => {
        let release;
        await window.reactor.definePlugin({name: "slow",
            commands: [{id: "slow.wait",
                        execute: () => new Promise((resolve) => { release = resolve; })}],
            agentTools: {id: "slow", name: "Slow",
                         commands: [{name: "slow_wait", command: "slow.wait",
                                     description: "Wait."}]}});
        const controller = new AbortController();
        const pending = window.reactor.callTool("slow_wait", {}, {signal: controller.signal});
        await new Promise((resolve) => setTimeout(resolve, 100));
        controller.abort(new Error("The person changed their mind."));
        const answer = await pending;
        release("late");
        await new Promise((resolve) => setTimeout(resolve, 100));
        return answer;
    }""")
    assert answer == {
        "ok": False,
        "error": {"code": "aborted", "message": answer["error"]["message"]},
    }
    assert "The person changed their mind." in answer["error"]["message"]
    follow_up = embedded.call_tool("todo_list")
    assert follow_up["ok"], "the worker still answers after a stopped call"


def test_the_chat_widget_calls_the_page_s_own_tools(embedded):
    page = embedded.page
    embedded.chat("list todos")
    card = page.locator("reactor-chat [data-testid=tool-card][data-tool=todo_list]")
    assert card.get_attribute("data-status") == "finished"
    card.locator("summary").click()  # the result sits behind the card's Details
    assert "Write to the landlord" in card.locator(".chat-tool-result").inner_text()


def test_ai_tools_run_in_a_worker_started_from_the_embedding_page(new_reactor_page, tmp_path):
    with embedding(tmp_path) as (live, site):
        reactor = new_reactor_page(live).allow_origin(site)
        page = reactor.page
        # The example's config, plus the server's AI Tools plugin. (Not by rewriting the page with
        # route.fulfill: Chromium then treats the page as public, and refuses it loopback requests.)
        page.add_init_script("""Object.defineProperty(window, "reactorConfig", {
            set(config) { this.__config = {...config, plugins: ["ai-tools"]}; },
            get() { return this.__config; }})""")
        assert reactor.open(site).ready["loaded"] == ["ai-tools", "todo-stats"]
        signed_in = page.evaluate(
            """(server) => fetch(server + "/auth/sign-in", {
            method: "POST", credentials: "include", headers: {"content-type": "application/json"},
            body: JSON.stringify({username: "bob", password: "bob-demo"}),
            }).then((r) => r.status)""",
            live.url,
        )
        assert signed_in == 200
        reactor.execute("aiTools.refresh")
        page.wait_for_function("window.reactor.aiToolWorkerStats().booted >= 1", timeout=60_000)
        answer = reactor.call_tool("maintenance_backlog", {"buildingId": "B-101", "limit": 2})
        assert answer["ok"] is True and [t["id"] for t in answer["result"]["tasks"]] == [
            "T-3",
            "T-1",
        ]


def test_a_page_whose_origin_the_server_does_not_allow_is_refused_visibly(
    new_reactor_page,
    tmp_path,
):
    with embedding(tmp_path, allowed=["http://127.0.0.1:1"]) as (live, site):
        reactor = new_reactor_page(live).allow_origin(site)
        reactor.expect_console_error("blocked by CORS policy|net::ERR_FAILED")
        page = reactor.page
        page.goto(site)
        progress = page.locator("[data-reactor-progress][data-state='error']")
        progress.wait_for()
        assert "Reactor could not load from" in progress.inner_text()
        assert page.evaluate("typeof window.reactor") == "undefined"
        refused = httpx.get(f"{live.url}/web/reactor.js", headers={"origin": site})
        assert not any(name.startswith("access-control-") for name in refused.headers)
