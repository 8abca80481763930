"""The CMS server: every call checks the session and the role before anything changes; drafts
are never public; bad input is refused with a sentence naming it; public pages escape."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from reactor.errors import DatabaseBusy
from reactor.server.loopback import LoopbackServer
from reactor_plugins.cms.backend.store import SiteStore
from test_cms_fixtures import entry_count, serve_cms

ACME = "/api/cms/sites/acme"


@pytest.fixture
def served(tmp_path, database_target):
    return serve_cms(tmp_path, target=database_target)


@pytest.fixture
def client(served):
    return served[0]


def draft(**fields):
    return {"title": "A new post", "body": "Hello", **fields}


# Sessions and roles ------------------------------------------------------------------------

EVERY_CALL = [
    ("GET", "/api/cms/session", None),
    ("GET", f"{ACME}/entries", None),
    ("POST", f"{ACME}/entries", draft()),
    ("GET", f"{ACME}/entries/welcome", None),
    ("PATCH", f"{ACME}/entries/roadmap", {"title": "Changed"}),
    ("DELETE", f"{ACME}/entries/roadmap?confirm=roadmap", None),
    ("POST", f"{ACME}/entries/roadmap/publish", None),
    ("POST", f"{ACME}/entries/welcome/unpublish", None),
    ("POST", f"{ACME}/crawl", {"kind": "feed", "url": "/demo-sources/feed.xml"}),
]


@pytest.mark.parametrize("method, path, body", EVERY_CALL)
def test_every_call_without_a_session_is_401_and_changes_nothing(served, method, path, body):
    client, database = served
    before = client.as_user("ada").get(f"{ACME}/entries").json()
    answer = client.request(method, path, json=body) if body else client.request(method, path)
    assert answer.status_code == 401 and "signed in" in answer.json()["error"]
    assert client.as_user("ada").get(f"{ACME}/entries").json() == before


def test_a_stale_or_made_up_token_is_no_session(client):
    client.token = "made-up"
    assert client.get(f"{ACME}/entries").status_code == 401


MATRIX = [
    # user, method, path, body, status
    ("eve", "GET", f"{ACME}/entries", None, 403),
    ("eve", "GET", f"{ACME}/entries/welcome", None, 403),
    ("ada", "GET", "/api/cms/sites/initech/entries", None, 403),  # no such site: the same answer
    ("bob", "GET", "/api/cms/sites/globex/entries", None, 200),  # viewer reads
    ("bob", "POST", "/api/cms/sites/globex/entries", draft(), 403),  # viewer writing
    ("bob", "PATCH", "/api/cms/sites/globex/entries/launch-plan", {"title": "x"}, 403),
    ("bob", "DELETE", "/api/cms/sites/globex/entries/launch-plan?confirm=launch-plan", None, 403),
    (
        "bob",
        "POST",
        "/api/cms/sites/globex/crawl",
        {"kind": "feed", "url": "/demo-sources/feed.xml"},
        403,
    ),
    ("bob", "POST", f"{ACME}/entries", draft(), 201),  # editor writes drafts
    ("bob", "POST", f"{ACME}/entries", draft(publish=True), 403),  # editor publishing
    ("bob", "POST", f"{ACME}/entries/roadmap/publish", None, 403),
    ("bob", "POST", f"{ACME}/entries/welcome/unpublish", None, 403),
    ("bob", "PATCH", f"{ACME}/entries/roadmap", {"title": "Roadmap v2"}, 200),
    # published: changes the public page
    ("bob", "PATCH", f"{ACME}/entries/welcome", {"title": "Sneaky"}, 403),
    ("bob", "DELETE", f"{ACME}/entries/roadmap?confirm=roadmap", None, 200),
    ("ada", "POST", f"{ACME}/entries/roadmap/publish", None, 200),
    ("ada", "POST", f"{ACME}/entries/welcome/unpublish", None, 200),
    ("ada", "POST", f"{ACME}/entries", draft(publish=True), 201),
    ("ada", "PATCH", f"{ACME}/entries/welcome", {"title": "Welcome!"}, 200),
]


@pytest.mark.parametrize("user, method, path, body, status", MATRIX)
def test_the_role_on_the_site_decides(served, user, method, path, body, status):
    client, database = served
    site = path.split("/")[4]
    watcher = client.as_user("ada")
    before = watcher.get(f"/api/cms/sites/{site}/entries").json() if site != "initech" else None
    caller = client.as_user(user)
    answer = (
        caller.request(method, path, json=body)
        if body is not None
        else caller.request(method, path)
    )
    assert answer.status_code == status, answer.text
    if status == 403:
        assert repr(user) in answer.json()["error"]
        if before is not None:
            assert watcher.get(f"/api/cms/sites/{site}/entries").json() == before


def test_the_refusal_names_the_role_and_what_is_needed(client):
    answer = client.as_user("bob").post(f"{ACME}/entries/roadmap/publish")
    assert (
        answer.json()["error"]
        == "User 'bob' is an editor on site 'acme'; publishing needs the publisher role."
    )
    answer = client.as_user("eve").get(f"{ACME}/entries")
    assert answer.json()["error"].startswith("User 'eve' has no role on site 'acme'")


def test_the_session_lists_the_users_sites_and_roles(client):
    assert client.as_user("bob").get("/api/cms/session").json() == {
        "user": {"username": "bob"},
        "sites": [
            {"id": "acme", "title": "Acme Corp", "role": "editor"},
            {"id": "globex", "title": "Globex", "role": "viewer"},
        ],
    }
    assert client.as_user("eve").get("/api/cms/session").json()["sites"] == []


# Drafts first, published on request ----------------------------------------------------------


def test_a_created_entry_is_a_draft_unless_the_call_says_publish(client):
    ada = client.as_user("ada")
    made = ada.post(f"{ACME}/entries", json=draft(publish=False)).json()
    assert made["status"] == "draft" and made["url"] is None and made["slug"] == "a-new-post"
    again = ada.post(f"{ACME}/entries", json=draft()).json()
    assert again["slug"] == "a-new-post-2"


def test_drafts_are_not_public_and_publishing_makes_the_page(client):
    ada = client.as_user("ada")
    assert client.get("/sites/acme/roadmap").status_code == 404
    assert "Roadmap" not in client.get("/sites/acme/").text
    published = ada.post(f"{ACME}/entries/roadmap/publish").json()
    assert published["status"] == "published" and published["url"] == "/sites/acme/roadmap"
    page = client.get("/sites/acme/roadmap")
    assert page.status_code == 200 and "<em>more anvils</em>" in page.text
    ada.post(f"{ACME}/entries/roadmap/unpublish")
    assert client.get("/sites/acme/roadmap").status_code == 404


def test_an_unknown_site_or_slug_is_the_same_404_as_a_draft(client):
    for path in (
        "/sites/acme/nothing",
        "/sites/initech/about",
        "/sites/initech/",
        "/sites/globex/launch-plan",
    ):
        assert client.get(path).status_code == 404


def test_a_published_entry_cannot_be_deleted_and_a_draft_needs_the_exact_slug(served):
    client, database = served
    ada = client.as_user("ada")
    count = entry_count(database)
    refused = ada.delete(f"{ACME}/entries/welcome?confirm=welcome")
    assert refused.status_code == 409 and "unpublish it first" in refused.json()["error"]
    assert ada.delete(f"{ACME}/entries/roadmap").status_code == 422
    assert ada.delete(f"{ACME}/entries/roadmap?confirm=welcome").status_code == 422
    assert entry_count(database) == count
    assert ada.delete(f"{ACME}/entries/roadmap?confirm=roadmap").json() == {
        "deleted": "roadmap",
        "site": "acme",
    }
    assert entry_count(database) == count - 1


# Bad input ---------------------------------------------------------------------------------

BAD_BODIES = [
    ({"body": "no title"}, "title", "Give the entry a title"),
    ({"title": 5}, "title", "Give the entry a title"),
    ({"title": "   "}, "title", "not only spaces"),
    ({"title": "x" * 201}, "title", "1 to 200 characters"),
    ({"title": "x", "body": "y" * 100_001}, "body", "at most 100000"),
    ({"title": "x", "slug": "Not A Slug"}, "slug", "'Not A Slug' is not valid"),
    ({"title": "x", "collection": "drafts"}, "collection", "'drafts' does not exist"),
    ({"title": "x", "status": "published"}, "status", "not a field you can set"),
    ({"title": "x", "publish": "yes"}, "publish", "must be true or false"),
    ({"title": "x", "source_url": "javascript:alert(1)"}, "source_url", "start with http"),
    ({"title": "x", "body": None}, "body", "The body is text"),
]


@pytest.mark.parametrize("body, field, words", BAD_BODIES)
def test_a_bad_field_is_refused_naming_it(served, body, field, words):
    client, database = served
    count = entry_count(database)
    answer = client.as_user("ada").post(f"{ACME}/entries", json=body)
    assert answer.status_code == 422 and answer.json()["field"] == field
    assert words in answer.json()["error"]
    assert entry_count(database) == count


@pytest.mark.parametrize(
    "content, headers, status, words",
    [
        (b"{not json", {"content-type": "application/json"}, 400, "not valid JSON"),
        (b"[1, 2]", {"content-type": "application/json"}, 400, "must be a JSON object"),
        (
            b'{"title": "' + b"x" * 600_000 + b'"}',
            {"content-type": "application/json"},
            413,
            "larger than",
        ),
    ],
)
def test_a_body_that_is_not_a_json_object_of_sane_size_is_refused(
    client, content, headers, status, words
):
    answer = client.as_user("ada").post(f"{ACME}/entries", content=content, headers=headers)
    assert answer.status_code == status and words in answer.json()["error"]


def test_a_taken_slug_is_a_conflict(client):
    answer = client.as_user("ada").post(f"{ACME}/entries", json=draft(slug="welcome"))
    assert answer.status_code == 409 and "'welcome' is already used" in answer.json()["error"]


def test_entries_made_at_once_with_one_title_each_get_their_own_slug(served):
    # Through real HTTP, where requests run in parallel: 100 of these once gave 41 answers of 500.
    client, database = served
    count, token = entry_count(database), client.as_user("ada").token
    with LoopbackServer(client.app, start_timeout=10) as url:

        def post(body):
            return httpx.post(
                f"{url}{ACME}/entries",
                json=body,
                headers={"authorization": f"Bearer {token}"},
                timeout=60,
            )

        with ThreadPoolExecutor(50) as pool:
            derived = list(pool.map(post, [{"title": "Race"}] * 100))
            chosen = list(pool.map(post, [{"title": "Race", "slug": "the-one"}] * 10))
    assert [a.status_code for a in derived] == [201] * 100, {a.status_code: a.text for a in derived}
    slugs = {a.json()["slug"] for a in derived}
    assert len(slugs) == 100 and "race" in slugs and "race-100" in slugs
    assert sorted(a.status_code for a in chosen) == [201] + [409] * 9
    refused = next(a for a in chosen if a.status_code == 409)
    assert (
        refused.json()["error"]
        == "The slug 'the-one' is already used on site 'acme'; choose another or update that entry."
    )
    assert entry_count(database) == count + 101


def test_a_database_too_busy_to_answer_is_503_not_500(served, monkeypatch):
    client, _ = served

    def locked(*args, **kwargs):
        # what the database layer raises (tests/test_database.py)
        raise DatabaseBusy("database is locked")

    monkeypatch.setattr(SiteStore, "list_entries", locked)
    answer = client.as_user("ada").get(f"{ACME}/entries")
    assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
    assert (
        answer.json()["error"] == "The database is busy with other changes; try again in a moment."
    )


def test_an_update_must_change_something_and_cannot_rename(client):
    ada = client.as_user("ada")
    assert ada.patch(f"{ACME}/entries/roadmap", json={}).status_code == 422
    renamed = ada.patch(f"{ACME}/entries/roadmap", json={"slug": "other"})
    assert renamed.status_code == 422 and renamed.json()["field"] == "slug"
    missing = ada.patch(f"{ACME}/entries/nothing-here", json={"title": "x"})
    assert missing.status_code == 404 and "'nothing-here'" in missing.json()["error"]


def test_a_change_naming_an_old_version_is_a_409_with_the_entry_as_it_is_now(client):
    ada = client.as_user("ada")
    read = ada.get(f"{ACME}/entries/roadmap").json()
    first = ada.patch(
        f"{ACME}/entries/roadmap", json={"title": "First", "version": read["version"]}
    )
    assert first.status_code == 200 and first.json()["version"] == read["version"] + 1
    late = ada.patch(
        f"{ACME}/entries/roadmap", json={"title": "Second", "version": read["version"]}
    )
    assert late.status_code == 409 and late.json()["current"]["title"] == "First"
    assert (
        late.json()["version"] == first.json()["version"]
        and "Read it again" in late.json()["error"]
    )
    assert ada.get(f"{ACME}/entries/roadmap").json()["title"] == "First"
    for bad in (0, "2", 1.5, True):
        refused = ada.patch(f"{ACME}/entries/roadmap", json={"title": "x", "version": bad})
        assert refused.status_code == 422 and refused.json()["field"] == "version"


def test_listing_filters_are_checked(client):
    ada = client.as_user("ada")
    assert [e["slug"] for e in ada.get(f"{ACME}/entries?status=draft").json()["entries"]] == [
        "roadmap"
    ]
    assert [e["slug"] for e in ada.get(f"{ACME}/entries?collection=pages").json()["entries"]] == [
        "about"
    ]
    assert ada.get(f"{ACME}/entries?status=secret").status_code == 422


@pytest.mark.parametrize(
    "body, field",
    [
        ({"kind": "gopher", "url": "/demo-sources/feed.xml"}, "kind"),
        ({"kind": "feed"}, "url"),
        ({"kind": "feed", "url": 5}, "url"),
        ({"kind": "feed", "url": "/x", "limit": 0}, "limit"),
        ({"kind": "feed", "url": "/x", "limit": 21}, "limit"),
        ({"kind": "feed", "url": "/x", "limit": True}, "limit"),
        ({"kind": "feed", "url": "/x", "collection": "drafts"}, "collection"),
        ({"kind": "feed", "url": "/x", "publish": True}, "publish"),
    ],
)
def test_a_bad_crawl_request_is_refused_naming_the_field(client, body, field):
    answer = client.as_user("ada").post(f"{ACME}/crawl", json=body)
    assert answer.status_code == 422 and answer.json()["field"] == field


# Public pages ------------------------------------------------------------------------------


def test_hostile_text_in_an_entry_is_escaped_on_its_public_page(client):
    ada = client.as_user("ada")
    hostile = '<script>window.pwned=1</script><img src=x onerror="window.pwned=1">'
    body = (
        f"{hostile}\n\n[click](javascript:alert(1)) and [ok](https://example.com/?a=1&b=2)\n\n- "
        f"{hostile}"
    )
    made = ada.post(
        f"{ACME}/entries",
        json={"title": hostile, "excerpt": hostile, "body": body, "publish": True},
    ).json()
    page = client.get(made["url"])
    assert page.status_code == 200
    assert (
        "<script" not in page.text
        and "<img" not in page.text
        and "javascript:" not in page.text.split("[click]")[0]
    )
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page.text
    assert (
        '<a href="https://example.com/?a=1&amp;b=2"' in page.text
        and 'href="javascript' not in page.text
    )
    assert "script-src" not in page.headers["content-security-policy"]
    assert page.headers["content-security-policy"].startswith("default-src 'none'")


def test_what_the_tools_let_a_model_send_is_what_the_api_takes(client):
    # One declaration, entry.schema.json: the tools refer to it and backend/entry.py reads it.
    # Were the two written apart, a tool would send what the API refuses, or forbid what it takes.
    from reactor.schema import argument_problems
    from reactor_plugins.cms import CMS_AGENT_TOOLS
    from reactor_plugins.cms.backend.entry import ENTRY_SCHEMA

    declared = [*CMS_AGENT_TOOLS["commands"], *CMS_AGENT_TOOLS["otherCommands"]]
    for entry in declared:
        for name, shape in entry.get("parameters", {}).get("properties", {}).items():
            if name in ENTRY_SCHEMA["properties"]:
                words = {k: v for k, v in shape.items() if k != "description"}
                assert words == ENTRY_SCHEMA["properties"][name], (entry["command"], name)
    create = next(t for t in declared if t["command"] == "cms.createSitePage")["parameters"]
    url = "https://example.com/"
    for field, taken, refused in [
        ("title", "t" * 200, "t" * 201),
        ("slug", "s" * 80, "s" * 81),
        ("slug", "a-fine-slug", "Not A Slug"),
        ("excerpt", "e" * 1000, "e" * 1001),
        ("body", "b" * 100_000, "b" * 100_001),
        ("source_url", url + "u" * (2000 - len(url)), url + "u" * (2001 - len(url))),
        ("collection", "pages", "drafts"),
    ]:
        fields = {"title": "A title", field: taken}
        assert argument_problems(create, fields) == [], field
        assert client.as_user("ada").post(f"{ACME}/entries", json=fields).status_code == 201
        fields[field] = refused
        assert [p["path"] for p in argument_problems(create, fields)] == [f"$.{field}"]
        answer = client.as_user("ada").post(f"{ACME}/entries", json=fields)
        assert (answer.status_code, answer.json()["field"]) == (422, field)


def test_two_apps_served_by_the_same_handlers_each_keep_their_own_entries(tmp_path):
    # the API's handlers are module-level: each app serves them with its own store and access
    first, _ = serve_cms(tmp_path / "first")
    second, _ = serve_cms(tmp_path / "second")
    made = first.as_user("ada").post(f"{ACME}/entries", json=draft(title="Only here")).json()
    assert first.as_user("ada").get(f"{ACME}/entries/{made['slug']}").status_code == 200
    assert second.as_user("ada").get(f"{ACME}/entries/{made['slug']}").status_code == 404
