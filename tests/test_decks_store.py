"""DeckStore: the page's decks, loaded lazily from the server and saved back, never losing work."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import bearer

from reactor import HttpError, MemoryPage, ToolError
from reactor.server.loopback import free_port
from reactor_plugins.decks.store import DeckStore

API = "/api/decks"


def run(coro):
    return asyncio.run(coro)


def deck(id="demo", title="Demo", slides=2):
    return {
        "id": id,
        "title": title,
        "slides": [{"title": f"Slide {n}", "body": f"Body {n}"} for n in range(1, slides + 1)],
    }


class FakeServerPage(MemoryPage):
    """A page whose fetch_json talks to an in-memory decks API; `failure` makes every call raise
    it."""

    def __init__(self, decks=()):
        super().__init__()
        self.server = {d["id"]: d for d in decks}
        self.failure: Exception | None = None
        self.requests: list[tuple[str, str]] = []

    async def fetch_json(self, method, url, body=None, headers=None):
        self.requests.append((method, url))
        if self.failure is not None:
            raise self.failure
        if url == API:
            return [
                {"id": d["id"], "title": d["title"], "slides": len(d["slides"])}
                for d in self.server.values()
            ]
        id = url.rsplit("/", 1)[1]
        if method == "PUT":
            self.server[id] = json.loads(json.dumps(body))
            return {"id": id}
        if id not in self.server:
            raise HttpError(404, f"There is no deck {id!r}.")
        if method == "DELETE":
            del self.server[id]
            return None
        return json.loads(json.dumps(self.server[id]))


# A store without a server -----------------------------------------------------------------


def test_a_page_only_store_starts_empty_and_answers_without_a_save_report():
    store = DeckStore(MemoryPage())
    assert run(store.list_decks()) == []
    assert run(store.create_deck(deck())) == {}
    assert run(store.list_decks()) == [{"id": "demo", "title": "Demo", "slides": 2}]


def test_decks_are_listed_by_title():
    store = DeckStore(MemoryPage())
    for id, title in [("b", "beta"), ("a", "Zed"), ("c", "Alpha")]:
        run(store.create_deck(deck(id, title)))
    assert [d["id"] for d in run(store.list_decks())] == ["c", "b", "a"]


def test_a_malformed_deck_is_refused_whole_and_nothing_is_stored():
    store = DeckStore(MemoryPage())
    bad = deck()
    bad["slides"][1]["body"] = 42
    with pytest.raises(ToolError, match=r"\$\.slides\[1\]\.body: 42 is not of type 'string'") as no:
        run(store.create_deck(bad))
    assert no.value.code == "invalid_arguments"
    assert run(store.list_decks()) == []


def test_a_taken_id_is_a_conflict_and_the_first_deck_is_kept():
    store = DeckStore(MemoryPage())
    run(store.create_deck(deck(title="First")))
    with pytest.raises(ToolError, match="There is already a deck 'demo'") as taken:
        run(store.create_deck(deck(title="Second")))
    assert taken.value.code == "conflict"
    assert taken.value.details["display"] == (
        "There is already a deck ‘First’ with that id; nothing was overwritten."
    )
    assert run(store.get_deck("demo"))["title"] == "First"


def test_get_returns_a_copy_so_a_caller_cannot_change_the_store_by_accident():
    store = DeckStore(MemoryPage())
    run(store.create_deck(deck()))
    copy = run(store.get_deck("demo"))
    copy["slides"].clear()
    assert len(run(store.get_deck("demo"))["slides"]) == 2


def test_an_unknown_deck_is_refused_naming_the_decks_there_are():
    store = DeckStore(MemoryPage())
    with pytest.raises(
        LookupError,
        match="^There is no deck 'x'; there are no decks yet. Create one with decks_create_deck.$",
    ):
        run(store.get_deck("x"))
    run(store.create_deck(deck("b")))
    run(store.create_deck(deck("a")))
    with pytest.raises(LookupError, match=r"^There is no deck 'x'\. Decks: a, b\.$"):
        run(store.get_deck("x"))
    with pytest.raises(LookupError):
        run(store.delete_deck("x"))
    with pytest.raises(LookupError):
        run(store.update_deck(deck("x")))


def test_an_update_replaces_the_whole_deck():
    store = DeckStore(MemoryPage())
    run(store.create_deck(deck()))
    run(store.update_deck(deck(title="Renamed", slides=1)))
    assert run(store.get_deck("demo")) == deck(title="Renamed", slides=1)


def test_a_deleted_deck_is_gone():
    store = DeckStore(MemoryPage())
    run(store.create_deck(deck()))
    run(store.delete_deck("demo"))
    assert run(store.list_decks()) == []


# A store with a server --------------------------------------------------------------------


def test_the_server_is_asked_only_on_first_use_and_only_once_for_the_list():
    page = FakeServerPage([deck("a", "A", 3)])
    store = DeckStore(page, API)
    assert page.requests == []
    assert run(store.list_decks()) == [{"id": "a", "title": "A", "slides": 3}]
    run(store.list_decks())
    assert page.requests == [("GET", API)]


def test_a_deck_spec_is_fetched_when_first_read_then_held():
    page = FakeServerPage([deck("a")])
    store = DeckStore(page, API)
    assert run(store.get_deck("a")) == deck("a")
    run(store.get_deck("a"))
    assert page.requests == [("GET", API), ("GET", f"{API}/a")]


def test_each_change_is_sent_whole_to_the_server_and_reported_saved():
    page = FakeServerPage()
    store = DeckStore(page, API)
    assert run(store.create_deck(deck())) == {"saved": True}
    assert page.server["demo"] == deck()
    assert run(store.update_deck(deck(title="New"))) == {"saved": True}
    assert page.server["demo"]["title"] == "New"
    assert run(store.delete_deck("demo")) == {"saved": True}
    assert page.server == {}


def test_a_deck_the_server_lost_is_reported_unknown():
    page = FakeServerPage([deck("a")])
    store = DeckStore(page, API)
    run(store.list_decks())
    del page.server["a"]
    with pytest.raises(LookupError, match="There is no deck 'a'"):
        run(store.get_deck("a"))
    assert run(store.list_decks()) == []


@pytest.mark.parametrize(
    "failure", [ConnectionError("refused"), OSError("unreachable"), HttpError(503, "Busy.")]
)
def test_when_the_server_is_down_a_change_is_kept_in_the_page_and_reported_unsaved(failure):
    page = FakeServerPage()
    store = DeckStore(page, API)
    run(store.list_decks())
    page.failure = failure
    report = run(store.create_deck(deck()))
    assert report["saved"] is False
    assert "kept in this page but was not saved" in report["warning"]
    assert run(store.get_deck("demo")) == deck()
    assert run(store.list_decks()) == [{"id": "demo", "title": "Demo", "slides": 2, "saved": False}]
    assert store.is_saved("demo") is False


def test_what_was_kept_while_the_server_was_down_is_sent_with_the_next_accepted_change():
    page = FakeServerPage([deck("gone")])
    store = DeckStore(page, API)
    run(store.list_decks())
    page.failure = ConnectionError("refused")
    run(store.create_deck(deck("kept")))
    run(store.delete_deck("gone"))
    page.failure = None
    assert run(store.create_deck(deck("later"))) == {"saved": True}
    assert sorted(page.server) == ["kept", "later"]
    assert store.is_saved("kept") and store.is_saved("gone")


@pytest.mark.parametrize(
    "status, code",
    [
        (400, "invalid_arguments"),
        (409, "conflict"),
        (413, "invalid_arguments"),
        (422, "invalid_arguments"),
    ],
)
def test_a_refused_new_deck_is_rolled_back_and_the_server_sentence_is_raised(status, code):
    page = FakeServerPage()
    store = DeckStore(page, API)
    run(store.list_decks())
    page.failure = HttpError(status, "Decks are read-only today.")
    with pytest.raises(
        ToolError,
        match="^The decks server refused the change to deck 'demo': Decks are read-only today.$",
    ) as refused:
        run(store.create_deck(deck()))
    assert refused.value.code == code
    page.failure = None
    assert run(store.list_decks()) == []


def test_a_refused_update_puts_the_previous_deck_back():
    page = FakeServerPage([deck()])
    store = DeckStore(page, API)
    run(store.get_deck("demo"))
    page.failure = HttpError(422, "No.")
    with pytest.raises(ToolError, match="No.") as refused:
        run(store.update_deck(deck(title="Refused")))
    assert refused.value.code == "invalid_arguments"
    assert run(store.get_deck("demo")) == deck()


@pytest.mark.parametrize(
    "status, sentence",
    [
        (401, "^Sign in to save decks. Ask the person to sign in"),
        (403, "^Sign in to save decks.$"),
    ],
)
def test_a_refused_permission_is_not_permitted_and_rolled_back(status, sentence):
    page = FakeServerPage()
    store = DeckStore(page, API)
    run(store.list_decks())
    page.failure = HttpError(status, "Sign in to save decks.")
    with pytest.raises(ToolError, match=sentence) as refused:
        run(store.create_deck(deck()))
    assert refused.value.code == "not_permitted"
    page.failure = None
    assert run(store.list_decks()) == []


def test_a_refused_delete_puts_the_deck_back():
    page = FakeServerPage([deck()])
    store = DeckStore(page, API)
    run(store.get_deck("demo"))
    page.failure = HttpError(403, "Not yours.")
    with pytest.raises(ToolError, match="Not yours."):
        run(store.delete_deck("demo"))
    assert run(store.get_deck("demo")) == deck()


def test_deleting_a_deck_the_server_never_had_is_not_an_error():
    page = FakeServerPage()
    store = DeckStore(page, API)
    run(store.list_decks())
    page.failure = ConnectionError("down")
    run(store.create_deck(deck()))
    page.failure = None
    page.server.clear()  # the PUT retry has not happened yet; the server has no such deck
    assert run(store.delete_deck("demo")) == {"saved": True}


def test_while_the_server_is_down_the_list_holds_the_page_decks_and_says_why():
    page = FakeServerPage([deck("a")])
    page.failure = ConnectionError("refused")
    store = DeckStore(page, API)
    assert run(store.list_decks()) == []
    assert "cannot be reached" in store.warning
    with pytest.raises(LookupError, match="cannot be reached"):
        run(store.get_deck("a"))
    page.failure = None
    assert [d["id"] for d in run(store.list_decks())] == ["a"]
    assert store.warning == ""


def test_a_server_that_refuses_to_list_is_an_error_with_its_sentence():
    page = FakeServerPage()
    page.failure = HttpError(401, "Sign in first.")
    with pytest.raises(ConnectionError, match="Sign in first."):
        run(DeckStore(page, API).list_decks())


def test_a_deck_on_an_unreachable_server_cannot_be_read_and_says_to_try_again():
    page = FakeServerPage([deck("a")])
    store = DeckStore(page, API)
    run(store.list_decks())
    page.failure = OSError("timed out")
    with pytest.raises(ConnectionError, match="cannot be reached right now .* try again"):
        run(store.get_deck("a"))


# Against the server (its app, called in process) ------------------------------------------


def test_the_store_reads_and_writes_the_real_server(app_server):
    store = DeckStore(
        MemoryPage(
            base_url=app_server.url, headers=bearer(app_server, "ada"), send=app_server.send
        ),
        API,
    )
    ids = [d["id"] for d in run(store.list_decks())]
    assert sorted(ids) == ["onboarding", "quarterly-review", "reactor-in-5-minutes"]
    spec = run(store.get_deck("onboarding"))
    spec["title"] = "Onboarding, revised"
    assert run(store.update_deck(spec)) == {"saved": True}
    with app_server.client() as client:
        assert client.get(f"{API}/onboarding").json()["title"] == "Onboarding, revised"
    assert run(store.delete_deck("quarterly-review")) == {"saved": True}
    fresh = DeckStore(MemoryPage(base_url=app_server.url, send=app_server.send), API)
    assert sorted(d["id"] for d in run(fresh.list_decks())) == [
        "onboarding",
        "reactor-in-5-minutes",
    ]


def test_two_pages_changing_one_deck_never_lose_a_change_silently(app_server):
    def page_of(user):
        return DeckStore(
            MemoryPage(
                base_url=app_server.url, headers=bearer(app_server, user), send=app_server.send
            ),
            API,
        )

    first, second = page_of("ada"), page_of("ada")  # two tabs, or two people, on one deck
    mine, theirs = run(first.get_deck("onboarding")), run(second.get_deck("onboarding"))
    mine["title"], theirs["title"] = "First tab's title", "Second tab's title"
    assert run(first.update_deck(mine)) == {"saved": True}
    with pytest.raises(ToolError) as refused:
        run(second.update_deck(theirs))
    assert refused.value.code == "conflict" and "it is now version 2" in str(refused.value)
    assert run(second.get_deck("onboarding"))["title"] == "First tab's title"  # the page re-read it
    again = run(second.get_deck("onboarding"))
    again["slides"][0]["title"] = "Changed on the current deck"
    assert run(second.update_deck(again)) == {"saved": True}
    with app_server.client() as client:
        stored = client.get(f"{API}/onboarding").json()
    assert (
        stored["title"] == "First tab's title"
        and stored["slides"][0]["title"] == "Changed on the current deck"
    )
    new = {"id": "both", "title": "Made twice", "slides": [{"title": "x", "body": ""}]}
    assert run(first.create_deck(new)) == {"saved": True}
    with pytest.raises(ToolError, match="since this page read it"):
        # its index predates the first's deck
        run(second.create_deck({**new, "title": "Made again"}))
    assert run(second.get_deck("both"))["title"] == "Made twice"


def test_a_closed_port_keeps_the_change_in_the_page_and_reports_it():
    store = DeckStore(MemoryPage(base_url=f"http://127.0.0.1:{free_port()}"), API)
    report = run(store.create_deck(deck()))
    assert report["saved"] is False and "could not be reached" in report["warning"]
    assert run(store.get_deck("demo")) == deck()
