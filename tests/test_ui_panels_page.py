"""UI Plugin records in real Chromium: a panel per `ui` record, drawn by its `Run`/`run`, disposed
when the record is disabled, hidden or moved to the agent's tools, and errors kept in their
panel."""

import httpx
import pytest
from conftest import bearer
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

LOGGED_PANEL = """
function Run(params) {
  window.panelLog = window.panelLog ?? [];
  window.panelLog.push(`run ${params.config.tag} in ${params.viewId}`);
  const note = document.createElement("p");
  note.textContent = `Tagged ${params.config.tag}`;
  params.container.append(note);
  return () => window.panelLog.push(`disposed ${params.config.tag}`);
}
"""
PYTHON_PANEL = """
def run(params):
    box = params["container"]
    count = {"n": 0}
    box.html('<p id="py-count">No clicks yet</p>'
             '<button id="py-more" onclick="window.pwned = 1">More</button>'
             '<script>window.pwned = 2</script>'
             '<a id="py-link" href="javascript:window.pwned = 3">link</a>')

    def clicked(event):
        count["n"] += 1
        box.html(f'<p id="py-count">{count["n"]} clicks on {event["target"]["id"]}</p>'
                 '<button id="py-more">More</button>')

    box.on("click", clicked, "button")
    return lambda: None
"""


def ui_record(id, code, language="javascript", **extra):
    return {
        "id": id,
        "name": id.replace("-", "_"),
        "location": "ui",
        "language": language,
        "code": code,
        "settings": {"config": {"tag": id}},
        "visibility": {"users": [], "groups": ["staff"]},
        "enabled": True,
        **extra,
    }


def operator(server):
    # No kept-alive connections: the client waits while the page boots, longer than the server
    # keeps an idle connection, and reusing one it is closing is reset (a flaky test, not a bug).
    return httpx.Client(
        base_url=server.url,
        headers=bearer(server, "ada"),
        limits=httpx.Limits(max_keepalive_connections=0),
    )


def refresh(page):
    return page.evaluate("window.reactor.executeCommand('aiTools.refresh')")


def open_as_bob(reactor_page):
    """The page reactor_page opened, signed in as bob (staff): the records he may see draw their
    panels."""
    return reactor_page.sign_in("bob").page


def panel(page, id):
    return page.locator(f'[data-reactor-panels] [data-panel="{id}"]')


def test_the_demo_chart_record_draws_its_panel_after_sign_in_and_goes_at_sign_out(reactor_page):
    page = reactor_page.page
    expect(page.locator("[data-reactor-panels]")).to_be_hidden()  # a visitor sees no panel
    open_as_bob(reactor_page)
    chart = panel(page, "backlog-chart")
    expect(chart.get_by_role("heading", name="backlog_chart")).to_be_visible()
    expect(chart.get_by_role("list", name="Open maintenance tasks per building")).to_contain_text(
        "B-101"
    )
    expect(chart).to_contain_text("open")
    page.click("#session button:has-text('Sign out')")
    expect(chart).to_have_count(0)
    expect(page.locator("[data-reactor-panels]")).to_be_hidden()


def test_disabling_a_record_runs_its_dispose_and_removes_its_panel(reactor_page, live_server):
    page = reactor_page.page
    with operator(live_server) as ada:
        assert ada.post("/plugins", json=ui_record("logged", LOGGED_PANEL)).status_code == 201
        open_as_bob(reactor_page)
        expect(panel(page, "logged")).to_contain_text("Tagged logged")
        # The active view is the one drawn last: the CMS panel, drawn for the user who signed in.
        assert page.evaluate("window.panelLog") == ["run logged in cms"]
        record = ada.get("/plugins/logged").json()
        assert ada.put("/plugins/logged", json={**record, "enabled": False}).status_code == 200
    assert "logged" not in refresh(page)["panels"]
    expect(panel(page, "logged")).to_have_count(0)
    assert page.evaluate("window.panelLog") == ["run logged in cms", "disposed logged"]


def test_a_record_made_invisible_to_the_user_is_disposed_on_the_next_refresh(
    reactor_page, live_server
):
    page = reactor_page.page
    with operator(live_server) as ada:
        assert ada.post("/plugins", json=ui_record("logged", LOGGED_PANEL)).status_code == 201
        open_as_bob(reactor_page)
        expect(panel(page, "logged")).to_be_visible()
        record = ada.get("/plugins/logged").json()
        record["visibility"] = {"users": ["ada"], "groups": []}
        assert ada.put("/plugins/logged", json=record).status_code == 200
    refresh(page)
    expect(panel(page, "logged")).to_have_count(0)
    assert page.evaluate("window.panelLog").count("disposed logged") == 1


def test_one_record_moves_between_the_panel_area_and_the_agents_tools(reactor_page, live_server):
    page = reactor_page.page
    open_as_bob(reactor_page)
    chart = panel(page, "backlog-chart")
    expect(chart).to_contain_text("B-101")
    call = "window.reactor.callTool('backlog_chart', {})"
    assert page.evaluate(call)["error"]["code"] == "unknown_tool"
    with operator(live_server) as ada:
        record = ada.get("/plugins/backlog-chart").json()
        assert (
            ada.put("/plugins/backlog-chart", json={**record, "location": "ai-tool"}).status_code
            == 200
        )
        assert refresh(page)["panels"] == []
        expect(chart).to_have_count(0)
        page.wait_for_function("window.reactor.aiToolWorkerStats().booted >= 1", timeout=60_000)
        answer = page.evaluate(call)
        assert answer["ok"] is True, answer
        assert answer["result"]["openByBuilding"]["B-101"] >= 1 and answer["result"]["busiest"]
        assert (
            ada.put("/plugins/backlog-chart", json={**record, "location": "ui"}).status_code == 200
        )
    assert refresh(page)["panels"] == ["backlog-chart"]
    expect(chart).to_contain_text("B-101")
    assert page.evaluate(call)["error"]["code"] == "unknown_tool"


def test_a_throwing_run_shows_its_error_in_its_panel_and_the_rest_of_the_page_works(
    reactor_page, live_server
):
    page = reactor_page.page
    broken = "function Run(params) { throw new RangeError('the chart needs a building'); }"
    no_dispose = "function Run(params) { params.container.textContent = 'drawn'; }"
    with operator(live_server) as ada:
        assert ada.post("/plugins", json=ui_record("broken", broken)).status_code == 201
        assert ada.post("/plugins", json=ui_record("no-dispose", no_dispose)).status_code == 201
    open_as_bob(reactor_page)
    expect(panel(page, "broken").get_by_role("alert")).to_have_text(
        "broken failed to start: RangeError: the chart needs a building"
    )
    expect(panel(page, "no-dispose").get_by_role("alert")).to_contain_text(
        "returned undefined, not a function"
    )
    expect(panel(page, "backlog-chart")).to_contain_text("B-101")  # the other panel is drawn
    page.get_by_role("button", name="Open", exact=True).first.click()  # and the page still works
    expect(page.locator("#decks")).to_contain_text("Slide 1 of 5")
    refresh(page)  # a failed panel goes cleanly too
    with operator(live_server) as ada:
        assert ada.delete("/plugins/broken").status_code == 200
    refresh(page)
    expect(panel(page, "broken")).to_have_count(0)


def test_a_python_ui_record_draws_from_the_worker_and_hears_clicks(reactor_page, live_server):
    page = reactor_page.page
    dom = (
        "def run(params):\n    import js\n    js.document.body.append('x')\n    return lambda: None"
    )
    bad_selector = (
        "def run(params):\n    params['container'].on('click', print, 'a[')\n    return "
        "lambda: None"
    )
    with operator(live_server) as ada:
        assert (
            ada.post(
                "/plugins", json=ui_record("bad-selector", bad_selector, language="python")
            ).status_code
            == 201
        )
        assert (
            ada.post(
                "/plugins", json=ui_record("counter", PYTHON_PANEL, language="python")
            ).status_code
            == 201
        )
        assert (
            ada.post("/plugins", json=ui_record("needs-dom", dom, language="python")).status_code
            == 201
        )
    csp = []  # the markup's onclick is never tried: no CSP violation (reactor_page fails on any)
    page.on(
        "console",
        lambda message: "Content Security Policy" in message.text and csp.append(message.text),
    )
    open_as_bob(reactor_page)
    counter = panel(page, "counter")
    expect(counter.locator("#py-count")).to_have_text("No clicks yet")
    assert counter.locator("#py-more").get_attribute("onclick") is None
    assert counter.locator("[onclick], script").count() == 0
    expect(counter.locator("#py-link")).to_have_text("link")
    assert counter.locator("#py-link").get_attribute("href") is None  # a javascript: URL is dropped
    counter.get_by_role("button", name="More").click()
    expect(counter.locator("#py-count")).to_have_text("1 clicks on py-more")
    counter.get_by_role("button", name="More").click()
    expect(counter.locator("#py-count")).to_have_text("2 clicks on py-more")
    assert page.evaluate("window.pwned") is None  # the markup's script and onclick were dropped
    assert csp == []
    expect(panel(page, "needs-dom").get_by_role("alert")).to_contain_text(
        "cross-origin-isolated page (COOP/COEP headers)"
    )
    expect(panel(page, "bad-selector").get_by_role("alert")).to_have_text(
        'container.on: "a[" is not a CSS selector this browser reads.'
    )


def test_leaving_the_page_runs_each_panels_dispose(reactor_page, live_server):
    page = reactor_page.page
    remembered = """
function Run(params) {
  params.container.textContent = "remembering";
  return () => localStorage.setItem(
    "panel-disposed", `${params.config.tag} at ${location.pathname}`);
}
"""
    with operator(live_server) as ada:
        assert ada.post("/plugins", json=ui_record("remembered", remembered)).status_code == 201
    open_as_bob(reactor_page)
    expect(panel(page, "remembered").locator(".plugin-panel-body")).to_have_text("remembering")
    assert page.evaluate("localStorage.getItem('panel-disposed')") is None
    page.goto(f"{live_server.url}/auth/session")  # the same origin, another page
    assert page.evaluate("localStorage.getItem('panel-disposed')") == "remembered at /"
