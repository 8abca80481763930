"""The CMS page plugin on CPython, against a real server: tools bound to the live state (API,
user, site) at call time, drafts first, publish on request, show the public page."""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import urllib.error
import urllib.request

import pytest
from conftest import start_server, stop_server

from reactor import (
    CommandFailedError,
    CommandUnavailableError,
    InvalidArgumentsError,
    MemoryPage,
    Reactor,
    agent_tool_bundles,
    load_agent_tools,
)
from reactor.facade import PageTools
from reactor.http import answer_json
from reactor_plugins.cms import CMS_AGENT_TOOLS, CMS_PLUGIN
from reactor_plugins.cms.server import HERE
from reactor_plugins.cms.spec import cms_plugin


class BrowserLikePage(MemoryPage):
    """MemoryPage with a cookie jar, as a browser keeps the HttpOnly session cookie."""

    def __init__(self, **options):
        super().__init__(**options)
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        self.requests: list[tuple[str, str]] = []

    async def fetch_json(self, method, url, body=None, headers=None):
        self.requests.append((method, url))
        return await asyncio.to_thread(self._send, method, self.base_url + url, body)

    def _send(self, method, url, body):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            url, data=data, method=method, headers={"content-type": "application/json"}
        )
        try:
            with self.opener.open(request, timeout=10) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            with error:
                return answer_json(error.code, error.read().decode())
        return answer_json(200, raw.decode())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # On loopback, not in process: the crawl tools fetch the server's demo blog over the network.
    live = start_server(tmp_path_factory.mktemp("cms"), plugins=[cms_plugin()], seed_demo=True)
    yield live
    stop_server(live)


def start(server, **page_options):
    page = BrowserLikePage(base_url=server.url, **page_options)
    reactor = Reactor(services={"page": page, "cms_api": "/api/cms"})
    assert reactor.load_plugins([CMS_PLUGIN]).loaded == ["cms"]
    return reactor, page


def run(reactor, command, args=None):
    async def answer():
        return await reactor.commands.execute(command, args)

    return asyncio.run(answer())


def signed_in(server, user="ada", **page_options):
    """Signed in as the header's form does it (POST /auth/sign-in), then followed by the CMS."""
    reactor, page = start(server, **page_options)
    asyncio.run(
        page.fetch_json("POST", "/auth/sign-in", {"username": user, "password": f"{user}-demo"})
    )
    run(reactor, "cms.restoreSession")
    return reactor, page


def failure(reactor, command, args=None):
    with pytest.raises(CommandFailedError) as failed:
        run(reactor, command, args)
    return str(failed.value)


# The contract ------------------------------------------------------------------------------


def test_every_command_the_bundle_declares_is_registered_as_it_declares_it(server):
    reactor, _ = start(server)
    assert agent_tool_bundles(reactor) == [CMS_AGENT_TOOLS]
    declared = [*CMS_AGENT_TOOLS["commands"], *CMS_AGENT_TOOLS["otherCommands"]]
    for entry in declared:
        options = reactor.commands.get_command(entry["command"]).options
        assert (options.label, options.description) == (entry["label"], entry["description"])
        assert options.parameters == entry.get(
            "parameters", {"type": "object", "properties": {}, "additionalProperties": False}
        )
    assert [c.id for c in reactor.commands.list_commands()] == [
        entry["command"] for entry in declared
    ]
    tools = {t["command"] for t in CMS_AGENT_TOOLS["commands"]}
    assert {"cms.signIn", "cms.selectSite"}.isdisjoint(tools)  # the person's commands are not tools


def test_the_server_lists_the_same_bundle_file(server):
    with urllib.request.urlopen(server.url + "/plugins/agent-tools") as response:
        assert (
            json.loads(response.read())
            == [load_agent_tools(HERE / "agent-tools.json")]
            == [CMS_AGENT_TOOLS]
        )


# Signing in and the live state ------------------------------------------------------------


def test_before_signing_in_a_tool_says_to_sign_in_and_sends_nothing(server):
    reactor, page = start(server)
    with pytest.raises(CommandUnavailableError) as refused:
        run(reactor, "cms.listSitePages")
    assert "ask the person to sign in at the top of the page" in str(refused.value)
    assert refused.value.display == "Sign in at the top of the page first."
    assert page.requests == []


def test_signing_in_keeps_the_user_and_sites_but_not_the_token(server):
    reactor, page = start(server)
    asyncio.run(
        page.fetch_json("POST", "/auth/sign-in", {"username": "bob", "password": "bob-demo"})
    )
    answer = run(reactor, "cms.restoreSession")
    assert answer == {
        "signedIn": True,
        "username": "bob",
        "site": "acme",
        "sites": [
            {"id": "acme", "title": "Acme Corp", "role": "editor"},
            {"id": "globex", "title": "Globex", "role": "viewer"},
        ],
    }
    assert "token" not in json.dumps(answer) and "token" not in json.dumps(
        vars(reactor.exports("cms"))
    )
    panel = page.views["cms"]
    assert panel["signedIn"] and panel["site"] == "acme" and panel["role"] == "editor"
    assert {e["slug"]: e["status"] for e in panel["entries"]} == {
        "about": "published",
        "welcome": "published",
        "roadmap": "draft",
    }


def test_sign_in_asks_for_the_pages_one_form_and_every_other_command_waits_for_it(server):
    reactor, page = start(server)
    available = {c.id: reactor.commands.is_enabled(c.id) for c in reactor.commands.list_commands()}
    assert available.pop("cms.signIn") and available.pop("cms.restoreSession")
    assert not any(available.values()), "nobody is signed in: no CMS command can run"
    assert run(reactor, "cms.signIn")["signedIn"] is False
    assert page.views["session"] == {"signIn": True}  # web/session.js brings its form forward
    assert reactor.exports("cms").signed_in is False
    with pytest.raises(CommandUnavailableError):
        run(reactor, "cms.signOut")


def test_signing_out_tells_the_header_and_disables_the_commands(server):
    reactor, page = signed_in(server, "bob")
    assert not reactor.commands.is_enabled("cms.signIn")
    assert run(reactor, "cms.signOut") == {"signedIn": False}
    assert page.views["session"] == {"signedIn": False} and page.views["cms"]["signedIn"] is False
    assert not reactor.commands.is_enabled("cms.listSitePages")


def test_switching_the_site_changes_where_the_next_call_goes(server):
    reactor, page = signed_in(server)
    handlers_before = [c.options.execute for c in reactor.commands.list_commands()]
    assert run(reactor, "cms.listSitePages")["site"] == "acme"
    run(reactor, "cms.selectSite", {"site": "globex"})
    page.requests.clear()
    answer = run(reactor, "cms.listSitePages")
    assert answer["site"] == "globex" and "launch-plan" in [e["slug"] for e in answer["entries"]]
    assert page.requests == [("GET", "/api/cms/sites/globex/entries")]
    assert [
        c.options.execute for c in reactor.commands.list_commands()
    ] == handlers_before  # same handlers, live state


def test_the_api_address_is_read_at_call_time_too(server):
    reactor, page = signed_in(server)
    reactor.exports("cms").api = "/elsewhere/api"
    page.requests.clear()
    with pytest.raises(CommandFailedError):
        run(reactor, "cms.readSitePage", {"slug": "about"})
    assert page.requests == [("GET", "/elsewhere/api/sites/acme/entries/about")]


def test_a_site_the_user_has_no_role_on_cannot_be_selected(server):
    reactor, _ = signed_in(server, "bob")
    assert "has no site 'initech'; their sites: acme, globex" in failure(
        reactor, "cms.selectSite", {"site": "initech"}
    )
    assert reactor.exports("cms").site == "acme"


def test_a_session_cookie_from_before_a_reload_signs_the_page_back_in(server):
    _, page = signed_in(server, "bob")
    # a new page, the same cookie jar
    reloaded = Reactor(services={"page": page, "cms_api": "/api/cms"})
    reloaded.load_plugins([CMS_PLUGIN])
    assert run(reloaded, "cms.restoreSession")["username"] == "bob"
    assert reloaded.exports("cms").site == "acme"
    fresh, _ = start(server)
    assert run(fresh, "cms.restoreSession") == {"signedIn": False}
    assert fresh.exports("cms").signed_in is False


def test_a_session_ended_on_the_server_signs_the_page_out(server):
    reactor, page = signed_in(server)
    asyncio.run(page.fetch_json("POST", "/auth/sign-out", {}))
    assert "Ask the person to sign in" in failure(reactor, "cms.listSitePages")
    assert reactor.exports("cms").signed_in is False and page.views["cms"]["signedIn"] is False


# Drafts first, publish on request, show ---------------------------------------------------


def test_creating_makes_a_draft_and_publishing_is_its_own_call(server):
    reactor, _ = signed_in(server)
    made = run(reactor, "cms.createSitePage", {"title": "Draft first", "body": "Hello *there*"})
    assert (
        made["status"] == "draft"
        and made["url"] is None
        and "Publish it with cms_publish_site_page" in made["note"]
    )
    assert run(reactor, "cms.getCurrentSitePage")["slug"] == "draft-first"
    assert "is a draft, so it has no public page" in failure(
        reactor, "cms.showSitePage", {"slug": "draft-first"}
    )
    published = run(reactor, "cms.publishSitePage", {"slug": "draft-first"})
    assert published["status"] == "published" and published["url"] == "/sites/acme/draft-first"


def test_publish_true_publishes_only_when_said_and_only_for_a_publisher(server):
    ada, _ = signed_in(server)
    assert (
        run(ada, "cms.createSitePage", {"title": "Said so", "publish": True})["status"]
        == "published"
    )
    with pytest.raises(InvalidArgumentsError):
        run(ada, "cms.createSitePage", {"title": "Not a boolean", "publish": "yes"})
    bob, _ = signed_in(server, "bob")
    message = failure(bob, "cms.createSitePage", {"title": "Bob says publish", "publish": True})
    assert (
        message
        == "User 'bob' is an editor on site 'acme'; creating an entry as published needs the "
        "publisher role."
    )
    assert "needs the publisher role" in failure(bob, "cms.publishSitePage", {"slug": "roadmap"})


def test_show_opens_the_public_page_of_the_exact_slug(server):
    reactor, page = signed_in(server)
    answer = run(reactor, "cms.showSitePage", {"slug": "welcome"})
    assert answer == {
        "site": "acme",
        "slug": "welcome",
        "url": "/sites/acme/welcome",
        "opened": True,
        "shown": "Welcome to the Acme blog",
    }
    assert page.opened == ["/sites/acme/welcome"]
    assert "no entry 'welcom'" in failure(reactor, "cms.showSitePage", {"slug": "welcom"})


def test_show_with_the_tab_blocked_answers_with_the_link(server):
    reactor, page = signed_in(server, allow_tabs=False)
    answer = run(reactor, "cms.showSitePage", {"slug": "about"})
    assert answer["opened"] is False and answer["url"] == "/sites/acme/about"
    assert answer["message"].endswith("the page is at /sites/acme/about")
    assert page.views["cms"]["message"] == answer["message"]


def test_delete_needs_confirmation_and_refuses_a_published_entry(server):
    reactor, _ = signed_in(server)
    run(reactor, "cms.createSitePage", {"title": "To delete"})
    for args in (
        {"slug": "to-delete"},
        {"slug": "to-delete", "confirm": False},
        {"slug": "to-delete", "confirm": 1},
    ):
        with pytest.raises(InvalidArgumentsError):
            run(reactor, "cms.deleteSitePage", args)
    assert "unpublish it first" in failure(
        reactor, "cms.deleteSitePage", {"slug": "about", "confirm": True}
    )
    assert (
        run(reactor, "cms.deleteSitePage", {"slug": "to-delete", "confirm": True})["deleted"]
        == "to-delete"
    )


def test_updating_changes_fields_and_never_the_status(server):
    reactor, _ = signed_in(server)
    run(reactor, "cms.createSitePage", {"title": "Edit me", "collection": "pages"})
    updated = run(reactor, "cms.updateSitePage", {"slug": "edit-me", "body": "New body"})
    assert updated["body"] == "New body" and updated["status"] == "draft"
    assert "Say what to change" in failure(reactor, "cms.updateSitePage", {"slug": "edit-me"})
    with pytest.raises(InvalidArgumentsError):
        run(reactor, "cms.updateSitePage", {"slug": "edit-me", "status": "published"})


def call(reactor, tool, args):
    """What the model reads of one call of `tool`: the envelope."""
    return json.loads(asyncio.run(PageTools(reactor).call_json(tool, json.dumps(args), None)))


def test_a_refusal_reaches_the_model_with_the_code_it_can_act_on(server):
    reactor, _ = signed_in(server)
    run(reactor, "cms.createSitePage", {"title": "Taken", "slug": "taken-slug"})
    nothing = call(reactor, "cms_update_site_page", {"slug": "taken-slug"})["error"]
    assert nothing["code"] == "invalid_arguments"
    assert nothing["message"].startswith("Say what to change")
    taken = call(reactor, "cms_create_site_page", {"title": "Again", "slug": "taken-slug"})
    assert taken["error"]["code"] == "conflict"
    assert "'taken-slug' is already used" in taken["error"]["message"]
    assert taken["error"]["display"] == taken["error"]["message"]  # no one else's change: said
    published = call(reactor, "cms_delete_site_page", {"slug": "about", "confirm": True})
    assert published["error"]["code"] == "conflict" and "unpublish it first" in str(published)
    missing = call(reactor, "cms_read_site_page", {"slug": "no-such-entry"})
    assert missing["error"]["code"] == "not_found"


def test_the_demo_blog_is_crawled_into_drafts_and_the_panel_shows_them(server):
    reactor, page = signed_in(server)
    answer = run(
        reactor, "cms.crawlBlog", {"url": "/demo-sources/blog/", "limit": 2, "collection": "pages"}
    )
    assert [i["status"] for i in answer["imported"]] == ["draft", "draft"]
    assert answer["note"] == "2 drafts imported; nothing was published."
    shown = {e["slug"]: e["status"] for e in page.views["cms"]["entries"]}
    assert shown["hello-from-the-demo-blog"] == "draft"
    feed = run(
        reactor, "cms.crawlFeed", {"url": "/demo-sources/atom.xml", "limit": 1, "dry_run": True}
    )
    assert feed["found"] == 1 and "imported" not in feed
    wordpress = run(reactor, "cms.crawlWordpress", {"url": "/demo-sources", "limit": 3})
    assert len(wordpress["imported"]) + len(wordpress["skipped"]) == 3


def test_the_crawler_refuses_the_servers_own_api(server):
    reactor, _ = signed_in(server)
    message = failure(reactor, "cms.crawlBlog", {"url": "/api/cms/session"})
    assert "loopback address" in message and "allow-list" in message


@pytest.mark.parametrize(
    "command, args",
    [
        ("cms.readSitePage", {}),
        ("cms.readSitePage", {"slug": 5}),
        ("cms.readSitePage", {"slug": "../../auth/me"}),
        ("cms.createSitePage", {"title": ""}),
        ("cms.createSitePage", {"title": "x" * 201}),
        ("cms.createSitePage", {"title": "x", "body": "y" * 100_001}),
        # the site is the page's, not the model's
        ("cms.createSitePage", {"title": "x", "site": "globex"}),
        ("cms.crawlBlog", {"url": "/x", "limit": 50}),
        ("cms.listSitePages", {"status": "secret"}),
        ("cms.getCurrentSitePage", {"slug": "about"}),
    ],
)
def test_bad_arguments_are_refused_before_any_request(server, command, args):
    reactor, page = signed_in(server)
    page.requests.clear()
    with pytest.raises(InvalidArgumentsError):
        run(reactor, command, args)
    assert page.requests == []


def test_two_pages_changing_one_entry_never_lose_a_change_silently(server):
    first, _ = signed_in(server)
    second, second_page = signed_in(server)
    for reactor in (first, second):
        run(reactor, "cms.selectSite", {"site": "acme"})
    assert run(first, "cms.updateSitePage", {"slug": "roadmap", "excerpt": "From the first page"})[
        "excerpt"
    ]
    with pytest.raises(CommandFailedError) as refused:
        run(second, "cms.updateSitePage", {"slug": "roadmap", "excerpt": "From the second page"})
    assert refused.value.cause.code == "conflict" and "Read it again" in str(refused.value)
    shown = second_page.views["cms"]
    assert "Read it again" in shown["message"]  # the panel redrew with the entry as it is now
    again = run(second, "cms.updateSitePage", {"slug": "roadmap", "body": "On the current entry"})
    assert again["excerpt"] == "From the first page" and again["body"] == "On the current entry"
