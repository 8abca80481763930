"""The decks server plugin: its table, its JSON API and the printable page."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from conftest import AppClient
from starlette.applications import Starlette

from reactor import PluginPlatform
from reactor.server.auth.sessions import Auth
from reactor.server.database import Database
from reactor.server.faults import ANSWERS
from reactor.server.openapi import openapi_document
from reactor.server.plugins.context import ServerContext
from reactor.server.plugins.records import PluginRecords
from reactor_plugins.decks import DECKS_AGENT_TOOLS
from reactor_plugins.decks.server import MAX_BODY_BYTES, DeckList
from reactor_plugins.decks.spec import PLUGIN as DECKS

SEED_IDS = ["onboarding", "quarterly-review", "reactor-in-5-minutes"]


def deck(id="demo", title="Demo"):
    return {
        "id": id,
        "title": title,
        "slides": [{"title": "One", "body": "Hello"}, {"title": "Two", "body": "- a\n- b"}],
    }


@pytest.fixture
def database(database_target):
    return Database(database_target)


class Client(AppClient):
    """Requests to an inline ASGI app, signed in as a demo user (ada, an operator, unless
    `as_user` says otherwise)."""

    def __init__(self, app: Any, auth: Auth, username: str | None = "ada") -> None:
        token = auth.sign_in(username, f"{username}-demo") if username else None
        super().__init__(
            app, "http://decks.test", {"authorization": f"Bearer {token}"} if token else {}
        )
        self.auth = auth

    def as_user(self, username: str | None) -> Client:
        return Client(self.app, self.auth, username)


def serve(database, *, seed=True):
    platform = PluginPlatform([DECKS])
    plugin = platform.server_half("decks")
    auth = Auth(database, seed=True)
    context = ServerContext(database, auth, platform, PluginRecords(database, auth, reserved=set()))
    plugin.setup(context, seed=seed)
    return Client(Starlette(routes=plugin.routes(context), exception_handlers=ANSWERS), auth)


@pytest.fixture
def client(database):
    return serve(database)


def count_rows(database):
    with database.transaction() as db:
        return db.execute("SELECT COUNT(*) FROM decks").fetchone()[0]


# Setup ------------------------------------------------------------------------------------


def test_setup_seeds_the_three_demo_decks_into_an_empty_table(client):
    assert [d["id"] for d in client.get("/api/decks").json()] == SEED_IDS


def test_setup_without_seed_leaves_the_table_empty(database):
    assert serve(database, seed=False).get("/api/decks").json() == []


def test_setup_twice_neither_duplicates_nor_overwrites_the_decks(database):
    client = serve(database)
    client.put("/api/decks/onboarding", json={**deck("onboarding"), "title": "Mine"})
    client.delete("/api/decks/quarterly-review")
    decks = serve(database).get("/api/decks").json()
    assert [(d["id"], d["title"]) for d in decks] == [
        ("onboarding", "Mine"),
        ("reactor-in-5-minutes", "Reactor in 5 minutes"),
    ]


def test_the_server_provides_the_same_bundle_the_page_contributes():
    assert DECKS.bundles == [DECKS_AGENT_TOOLS]
    assert PluginPlatform([DECKS]).collect_agent_tools() == [DECKS_AGENT_TOOLS]


def test_the_page_plugin_loads_without_starlette_or_the_server_module():
    code = (
        "import sys, reactor_plugins.decks; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'js', 'pyodide') "
        "or m == 'reactor_plugins.decks.server'))"
    )
    answer = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert answer.stdout.strip() == "[]"


# Reading ----------------------------------------------------------------------------------


def test_the_list_is_summaries_by_title(client):
    first = client.get("/api/decks").json()[0]
    assert set(first) == {"id", "title", "slides", "updated_at", "owner", "version"}
    assert first["id"] == "onboarding" and first["slides"] == 5


def test_a_deck_is_served_as_its_spec(client):
    spec = client.get("/api/decks/quarterly-review").json()
    assert spec["title"] == "Quarterly review — Q3" and len(spec["slides"]) == 5


def test_an_unknown_deck_is_a_404_with_a_sentence(client):
    answer = client.get("/api/decks/nope")
    assert answer.status_code == 404 and answer.json() == {"error": "There is no deck 'nope'."}


# The list's ETag: a 304, kept answers, never a stale list ---------------------------------


def test_a_browser_that_has_the_list_gets_a_304_with_no_body(client):
    first = client.get("/api/decks")
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "no-cache"  # the browser asks again each time
    again = client.get("/api/decks", headers={"if-none-match": etag})
    assert (again.status_code, again.content) == (304, b"")
    assert again.headers["etag"] == etag and again.headers["cache-control"] == "no-cache"


@pytest.mark.parametrize("given", ["{etag}", '"x", {etag}', "{strong}", "*", '{etag}, W/"old"'])
def test_if_none_match_names_the_list_among_others_weak_or_strong(client, given):
    etag = client.get("/api/decks").headers["etag"]
    header = given.format(etag=etag, strong=etag.removeprefix("W/"))
    assert client.get("/api/decks", headers={"if-none-match": header}).status_code == 304


@pytest.mark.parametrize("given", ['W/"old"', '"', "", "x" * 5000, "W/", ","])
def test_an_if_none_match_of_another_or_no_version_gets_the_whole_list(client, given):
    answer = client.get("/api/decks", headers={"if-none-match": given})
    assert answer.status_code == 200 and len(answer.json()) == 3


def test_the_list_is_the_same_gzipped_or_not(client):
    # httpx asks for gzip and undoes it; the bytes sent are read back raw here
    zipped = client.get("/api/decks", headers={"accept-encoding": "gzip"})
    plain = client.get("/api/decks", headers={"accept-encoding": "identity"})
    assert zipped.headers["content-encoding"] == "gzip" and "content-encoding" not in plain.headers
    assert zipped.json() == plain.json() and zipped.headers["etag"] == plain.headers["etag"]
    assert "accept-encoding" in plain.headers["vary"].lower()


def test_a_write_through_another_process_changes_the_list_at_its_next_request(database):
    reader, writer = serve(database), serve(database)  # two apps: each keeps its own answers
    etag = reader.get("/api/decks").headers["etag"]
    assert writer.put("/api/decks/demo", json=deck()).status_code == 201
    changed = reader.get("/api/decks", headers={"if-none-match": etag})
    assert changed.status_code == 200 and "demo" in [d["id"] for d in changed.json()]
    assert changed.headers["etag"] != etag
    renamed = writer.put("/api/decks/demo", json=deck(title="Renamed"))
    assert renamed.status_code == 200
    listed = reader.get("/api/decks", headers={"if-none-match": changed.headers["etag"]}).json()
    assert ("demo", "Renamed") in [(d["id"], d["title"]) for d in listed]


def test_a_process_keeps_the_answers_of_a_few_lists_only(database):
    listing = DeckList(database)
    client = serve(database)
    for number in range(3 * DeckList.MAX_ANSWERS):
        client.put(f"/api/decks/d{number}", json=deck(f"d{number}"))
        answer = listing.read()
        assert listing.cached(listing.etag()) == answer
    assert len(listing.answers) == DeckList.MAX_ANSWERS


def test_the_document_says_the_list_answers_304_with_its_etag(client):
    document = openapi_document(client.app.routes, title="decks", version="1")
    answers = document["paths"]["/api/decks"]["get"]["responses"]
    assert {"etag", "cache-control"} <= set(answers["200"]["headers"])
    assert "content" not in answers["304"] and "etag" in answers["304"]["headers"]


# Writing ----------------------------------------------------------------------------------


def test_put_creates_then_replaces_a_deck_and_each_save_is_a_version(client):
    created = client.put("/api/decks/demo", json=deck())
    assert created.status_code == 201 and created.json() == {
        "id": "demo",
        "title": "Demo",
        "slides": 2,
        "version": 1,
    }
    replaced = client.put("/api/decks/demo", json=deck(title="Again"), headers={"if-match": '"1"'})
    assert (
        replaced.status_code == 200
        and replaced.json()["version"] == 2
        and replaced.headers["etag"] == '"2"'
    )
    read = client.get("/api/decks/demo")
    assert read.json() == deck(title="Again") and read.headers["etag"] == '"2"'


def test_a_write_that_names_an_old_version_is_a_409_with_the_current_deck_and_changes_nothing(
    client,
):
    client.put("/api/decks/demo", json=deck())
    assert (
        client.put(
            "/api/decks/demo", json=deck(title="First"), headers={"if-match": '"1"'}
        ).status_code
        == 200
    )
    late = client.put("/api/decks/demo", json=deck(title="Second"), headers={"if-match": '"1"'})
    assert (
        late.status_code == 409
        and late.json()["version"] == 2
        and late.json()["current"]["title"] == "First"
    )
    assert "is now version 2. Read it again" in late.json()["error"]
    gone = client.delete("/api/decks/demo", headers={"if-match": '"1"'})
    assert gone.status_code == 409 and client.get("/api/decks/demo").json()["title"] == "First"
    assert client.delete("/api/decks/demo", headers={"if-match": '"2"'}).status_code == 204
    deleted = client.put("/api/decks/demo", json=deck(title="Third"), headers={"if-match": '"2"'})
    assert (
        deleted.status_code == 409
        and deleted.json()["current"] is None
        and "was deleted" in deleted.json()["error"]
    )


@pytest.mark.parametrize("header", ["3a", '"-1"', "*", '"' + "9" * 30 + '"', ""])
def test_an_if_match_that_is_not_a_version_is_a_400(client, header):
    answer = client.put("/api/decks/demo", json=deck(), headers={"if-match": header})
    assert (
        answer.status_code == 400 and "If-Match must name a deck version" in answer.json()["error"]
    )


def test_of_many_writes_naming_one_version_exactly_one_wins(database):
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from reactor.server.loopback import LoopbackServer

    client = serve(database)
    client.put("/api/decks/demo", json=deck())
    token = client.headers["authorization"]
    with LoopbackServer(client.app, start_timeout=10) as url:

        def put(number):
            body = deck(title=f"Writer {number}")
            return httpx.put(
                f"{url}/api/decks/demo",
                json=body,
                headers={"authorization": token, "if-match": '"1"'},
                timeout=60,
            )

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(put, range(16)))
    assert sorted(a.status_code for a in answers) == [200] + [409] * 15
    winner = next(a for a in answers if a.status_code == 200).json()
    assert (
        winner["version"] == 2 and client.get("/api/decks/demo").json()["title"] == winner["title"]
    )


def test_put_refuses_a_body_whose_id_is_not_the_address(client, database):
    answer = client.put("/api/decks/demo", json=deck("other"))
    assert answer.status_code == 422
    assert answer.json()["problems"][0]["path"] == "$.id"
    assert "'other' is not the address's 'demo'" in answer.json()["error"]
    assert count_rows(database) == 3


def test_put_refuses_a_malformed_deck_naming_each_problem_and_writes_nothing(client, database):
    bad = {"id": "demo", "title": "", "slides": [{"title": 1, "body": "x"}], "script": "<x>"}
    answer = client.put("/api/decks/demo", json=bad)
    assert answer.status_code == 422
    body = answer.json()
    assert {p["path"] for p in body["problems"]} == {"$", "$.title", "$.slides[0].title"}
    assert (
        body["error"].startswith("The deck is not valid: ")
        and "'script' was unexpected" in body["error"]
    )
    assert count_rows(database) == 3


@pytest.mark.parametrize("body", [b"{not json", b"", b"\xff\xfe", b"[" * 100_000])
def test_put_refuses_a_body_that_is_not_json(client, body):
    answer = client.put(
        "/api/decks/demo", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400 and "not valid JSON" in answer.json()["error"]


@pytest.mark.parametrize(
    "body, kind",
    [(b"[]", "an array"), (b'"deck"', "a string"), (b"3", "a number"), (b"null", "null")],
)
def test_put_refuses_json_that_is_not_an_object(client, body, kind):
    answer = client.put(
        "/api/decks/demo", content=body, headers={"content-type": "application/json"}
    )
    assert (
        answer.status_code == 400
        and answer.json()["error"] == f"The body must be a JSON object, not {kind}."
    )


@pytest.mark.parametrize("where", ["title", "slides[0].body"])
def test_put_refuses_a_lone_surrogate_naming_the_field_and_stores_nothing(client, database, where):
    spec = deck()
    if where == "title":
        spec["title"] = "Bad \ud800 title"
    else:
        spec["slides"][0]["body"] = "\udfff"
    # ensure_ascii: the surrogate travels as an escape (`\\ud800`), as a hostile client sends it
    raw = json.dumps(spec)
    answer = client.put(
        "/api/decks/demo", content=raw.encode(), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 422 and answer.json()["field"] == where
    assert "lone UTF-16 surrogate" in answer.json()["error"]
    assert count_rows(database) == 3 and client.get("/api/decks").status_code == 200


def test_put_refuses_a_body_over_one_megabyte_by_its_declared_length(client, database):
    big = json.dumps({**deck(), "pad": "x" * MAX_BODY_BYTES}).encode()
    answer = client.put(
        "/api/decks/demo", content=big, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413 and "larger than" in answer.json()["error"]
    assert count_rows(database) == 3


def test_put_stops_reading_a_streamed_body_once_it_passes_one_megabyte(client):
    async def chunks():
        for _ in range(20):
            yield b"x" * 100_000

    answer = client.put(
        "/api/decks/demo", content=chunks(), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413


def test_an_id_that_is_not_a_slug_can_never_be_written(client):
    answer = client.put("/api/decks/..%2Fescape", json=deck("../escape"))
    assert answer.status_code in (404, 422)
    assert [d["id"] for d in client.get("/api/decks").json()] == SEED_IDS


def test_writes_need_a_session(client, database):
    anonymous = client.as_user(None)
    assert anonymous.put("/api/decks/demo", json=deck()).json() == {
        "error": "Sign in to save decks."
    }
    answer = anonymous.delete("/api/decks/onboarding")
    assert answer.status_code == 401 and answer.json() == {"error": "Sign in to delete decks."}
    assert count_rows(database) == 3


def test_a_deck_belongs_to_its_creator_and_operators(client):
    bob, eve = client.as_user("bob"), client.as_user("eve")
    assert bob.put("/api/decks/demo", json=deck()).status_code == 201
    assert bob.put("/api/decks/demo", json=deck(title="Bob's again")).status_code == 200
    refused = eve.put("/api/decks/demo", json=deck(title="Eve's"))
    assert refused.status_code == 403
    assert refused.json() == {
        "error": "The deck 'demo' is not eve's; only its owner or an operator may replace it."
    }
    assert eve.delete("/api/decks/demo").status_code == 403
    # seeded: the operators'
    assert bob.put("/api/decks/onboarding", json=deck("onboarding")).status_code == 403
    assert bob.delete("/api/decks/onboarding").status_code == 403
    summaries = {d["id"]: d for d in client.get("/api/decks").json()}
    assert summaries["demo"]["title"] == "Bob's again" and summaries["demo"]["owner"] == "bob"
    assert summaries["onboarding"]["owner"] is None
    # an operator may
    assert client.put("/api/decks/demo", json=deck(title="Ada's edit")).status_code == 200
    assert client.get("/api/decks/demo").json()["title"] == "Ada's edit"
    assert bob.delete("/api/decks/demo").status_code == 204


def test_delete_removes_a_deck_then_answers_404(client):
    assert client.delete("/api/decks/onboarding").status_code == 204
    assert client.get("/api/decks/onboarding").status_code == 404
    gone = client.delete("/api/decks/onboarding")
    assert gone.status_code == 404 and gone.json() == {"error": "There is no deck 'onboarding'."}


# Printing ---------------------------------------------------------------------------------


def test_the_print_page_shows_every_slide_with_print_css(client):
    answer = client.get("/decks/onboarding/print")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    html = answer.text
    assert "<title>Onboarding: your first week</title>" in html and "@page" in html
    assert html.count('<section class="slide">') == 5
    assert (
        "Slide 5 of 5" in html
        and "<li>Collect your laptop and badge from the front desk</li>" in html
    )


def test_the_print_page_escapes_slide_text_and_allows_no_script(client):
    hostile = '<script>alert("x")</script>'
    spec = {
        "id": "xss",
        "title": hostile,
        "slides": [{"title": hostile, "body": f"# {hostile}\n\n- {hostile}", "notes": hostile}],
    }
    assert client.put("/api/decks/xss", json=spec).status_code == 201
    answer = client.get("/decks/xss/print")
    assert "<script>" not in answer.text and "&lt;script&gt;" in answer.text
    assert "default-src 'none'" in answer.headers["content-security-policy"]


def test_printing_an_unknown_deck_is_a_404_page_for_a_person(client):
    answer = client.get("/decks/<b>nope/print")
    assert answer.status_code == 404 and answer.headers["content-type"].startswith("text/html")
    assert "There is no deck ‘&lt;b&gt;nope’." in answer.text and "<b>" not in answer.text


# Mounted in the app -----------------------------------------------------------------------


def test_the_app_serves_the_decks_api_and_tells_the_page_where_it_is(app_server):
    client = app_server.client()
    assert [d["id"] for d in client.get("/api/decks").json()] == SEED_IDS
    boot = client.get("/app/boot.json").json()
    entry = next(p for p in boot["plugins"] if p["name"] == "decks")
    assert entry["plugin"] == "reactor_plugins.decks:DECKS_PLUGIN"
    assert entry["scripts"] == ["/assets/plugins/decks/view.js"] and entry["styles"] == [
        "/assets/plugins/decks/decks.css"
    ]
    assert boot["services"]["decks_api"] == "/api/decks"
    assert b"export function renderDecks" in client.get("/assets/plugins/decks/view.js").content


def test_two_apps_served_by_the_same_handlers_each_keep_their_own_decks_and_list(tmp_path):
    # the handlers are module-level: each app serves them with its own database and list cache
    first = serve(Database(tmp_path / "first.sqlite3"))
    second = serve(Database(tmp_path / "second.sqlite3"))
    before = second.get("/api/decks")
    assert first.put("/api/decks/demo", json=deck()).status_code == 201
    assert first.get("/api/decks/demo").status_code == 200
    assert second.get("/api/decks/demo").status_code == 404
    after = second.get("/api/decks", headers={"if-none-match": before.headers["etag"]})
    assert after.status_code == 304  # the first app's write is not the second's
    assert "demo" in [d["id"] for d in first.get("/api/decks").json()]
