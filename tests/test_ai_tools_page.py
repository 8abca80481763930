"""AI Tools in real Chromium: called as an agent calls them, code run in a Web Worker."""

import copy
import time

import httpx
import pytest

from test_ai_tools_declaration import RECORD

pytestmark = pytest.mark.browser


def sign_in(reactor_page, username):
    """reactor_page signed in as `username`, once its AI Tools are listed and their worker
    booted."""
    page = reactor_page.sign_in(username).page
    reactor_page.wait_for_bundle("ai-tools")
    page.wait_for_function("window.reactor.aiToolWorkerStats().booted >= 1", timeout=60_000)
    return page


def operator(server):
    token = httpx.post(
        f"{server.url}/auth/sign-in", json={"username": "ada", "password": "ada-demo"}
    ).json()["token"]
    return httpx.Client(base_url=server.url, headers={"authorization": f"Bearer {token}"})


def save_tool(server, id, name, code, timeout_ms, groups=("staff",)):
    record = copy.deepcopy(RECORD)
    record.update(id=id, name=name, code=code, visibility={"users": [], "groups": list(groups)})
    record["settings"]["tool"]["annotations"]["timeoutMs"] = timeout_ms
    with operator(server) as ada:
        assert ada.post("/plugins", json=record).status_code == 201


def test_a_call_succeeds_with_the_backlog_newest_first(reactor_page):
    sign_in(reactor_page, "bob")
    answer = reactor_page.call_tool("maintenance_backlog", {"buildingId": "B-101", "limit": 2})
    assert answer["ok"] is True
    assert [t["id"] for t in answer["result"]["tasks"]] == ["T-3", "T-1"]
    unknown = reactor_page.call_tool("maintenance_backlog", {"buildingId": "B-9"})
    assert (
        unknown["error"]["code"] == "failed"
        and "There is no building 'B-9'" in unknown["error"]["message"]
    )


def test_bad_arguments_come_back_with_each_problem_and_its_path(reactor_page):
    sign_in(reactor_page, "bob")
    answer = reactor_page.call_tool(
        "maintenance_backlog", {"buildingId": 7, "limit": 0, "colour": "red"}
    )
    assert answer["ok"] is False and answer["error"]["code"] == "invalid_arguments"
    assert {p["path"] for p in answer["error"]["problems"]} == {"$", "$.buildingId", "$.limit"}


def test_a_revoked_permission_takes_effect_on_the_very_next_call(reactor_page, live_server):
    sign_in(reactor_page, "bob")
    assert reactor_page.call_tool("maintenance_backlog", {"buildingId": "B-102"})["ok"] is True
    with operator(live_server) as ada:
        record = ada.get("/plugins/maintenance-backlog").json()
        record["visibility"] = {"users": [], "groups": ["operators"]}
        assert ada.put("/plugins/maintenance-backlog", json=record).status_code == 200
    answer = reactor_page.call_tool("maintenance_backlog", {"buildingId": "B-102"})
    assert answer["error"]["code"] == "not_permitted"
    assert any(
        b["id"] == "ai-tools"
        for b in reactor_page.page.evaluate("window.reactor.agentToolBundles()")
    ), "the page still lists the tool: the refusal came from the server, not the cache"


def test_a_timeout_frees_the_caller_and_code_that_honours_the_signal_stops_its_request(
    reactor_page, live_server
):
    sign_in(reactor_page, "bob")
    started = time.monotonic()
    answer = reactor_page.call_tool("slow_lookup", {"ms": 20_000})
    assert answer["error"]["code"] == "timeout" and time.monotonic() - started < 5
    slow = live_server.app.state.context.platform.server_half("maintenance").wait_slow("cancelled")
    assert slow == {"started": 1, "completed": 0, "cancelled": 1}, (
        "the aborted signal stopped the request"
    )
    assert reactor_page.page.evaluate("window.reactor.aiToolWorkerStats()")["terminated"] == 0


def test_a_timeout_with_code_that_ignores_the_signal_answers_at_once_and_kills_the_worker(
    reactor_page, live_server
):
    save_tool(
        live_server,
        "sleepy",
        "sleepy",
        "import time\ndef invoke(args, context):\n    time.sleep(8)\n    return 1\n",
        1000,
    )
    sign_in(reactor_page, "bob")
    started = time.monotonic()
    answer = reactor_page.call_tool("sleepy", {})
    assert answer["error"]["code"] == "timeout" and time.monotonic() - started < 3
    reactor_page.page.wait_for_function("window.reactor.aiToolWorkerStats().terminated === 1")


def test_a_runaway_loop_is_killed_while_the_page_keeps_answering_clicks(reactor_page, live_server):
    save_tool(
        live_server,
        "runaway",
        "runaway",
        "def invoke(args, context):\n    while True:\n        pass\n",
        2000,
    )
    page = sign_in(reactor_page, "bob")
    page.evaluate("window.reactor.executeCommand('decks.open', {id: 'onboarding'})")
    page.evaluate("""() => {
        window.__stall = 0; let last = performance.now();
        window.__sampler = setInterval(() => {
            const now = performance.now();
            window.__stall = Math.max(window.__stall, now - last - 20);
            last = now;
        }, 20);
        window.__runaway = window.reactor.callTool('runaway', {});
    }""")
    for expected in (2, 3, 4):
        page.get_by_test_id("next-slide").click()
        page.get_by_text(f"Slide {expected} of 5").wait_for(timeout=1000)
    answer = page.evaluate("window.__runaway")
    stall_ms = page.evaluate("clearInterval(window.__sampler), window.__stall")
    print(f"\nlongest main-thread stall while a runaway AI Tool was killed: {stall_ms:.0f} ms")
    assert answer["error"]["code"] == "timeout"
    page.wait_for_function("window.reactor.aiToolWorkerStats().terminated === 1")
    page.wait_for_function("window.reactor.aiToolWorkerStats().booted === 2", timeout=60_000)
    assert reactor_page.call_tool("maintenance_backlog", {"buildingId": "B-203"})["ok"] is True, (
        "a fresh worker serves the next call"
    )


def test_a_javascript_tool_runs_in_the_worker(reactor_page):
    sign_in(reactor_page, "ada")
    answer = reactor_page.call_tool("open_task_count", {})
    assert answer == {"ok": True, "result": {"buildings": {"B-101": 3, "B-102": 2, "B-203": 1}}}


def test_the_records_are_asked_for_once_while_pyodide_restores(reactor_page):
    # Signed in, the person opens the page again: the worker asks for their records while Pyodide
    # restores (the plugin's declared `preload`), and the plugin's start reads that answer.
    sign_in(reactor_page, "bob")
    page = reactor_page.page
    asked: list[float] = []
    page.on(
        "request",
        lambda request: (
            asked.append(time.time() * 1000)
            if request.method == "GET" and request.url.endswith("/plugins")
            else None
        ),
    )
    reactor_page.open("/")
    reactor_page.wait_for_tool("maintenance_backlog")
    restored = page.evaluate(
        "performance.timeOrigin"
        " + performance.getEntriesByName('reactor:pyodide-ready')[0].startTime"
    )
    assert len(asked) == 1, f"GET /plugins was asked {len(asked)} times during the start"
    assert asked[0] < restored, "asked for while Pyodide restored, not after"
