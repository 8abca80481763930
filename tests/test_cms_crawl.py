"""The crawler: the SSRF guard refuses before connecting, the fetcher re-checks every redirect
and stops at its time and size limits, and fixture sources served on loopback (named by the
allow-list) are read into drafts — hostile markup arriving as text."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from reactor.errors import OutboundFailed, OutboundRefused
from reactor.server.database import Database
from reactor.server.outbound.fetch import FetchPolicy, fetch
from reactor.server.outbound.guard import check_url, parse_allow_list
from reactor_plugins.cms.backend.crawl import import_items
from reactor_plugins.cms.backend.sources import Item, SourceError, feed_items
from reactor_plugins.cms.backend.store import SiteStore
from test_cms_fixtures import entry_count, serve_cms, source_server


@pytest.fixture(scope="module")
def origin():
    with source_server() as url:
        yield url


def allowing(origin, **options):
    return FetchPolicy(parse_allow_list(origin.removeprefix("http://")), **options)


# The guard, before any connection -------------------------------------------------------------


@pytest.mark.parametrize(
    "url, words",
    [
        ("file:///etc/passwd", "uses 'file'"),
        ("gopher://example.com/", "uses 'gopher'"),
        ("ftp://example.com/x", "uses 'ftp'"),
        ("//example.com/", "uses 'no scheme'"),
        ("http://user:pw@example.com/", "carries credentials"),
        ("http://127.0.0.1/", "127.0.0.1, a loopback address"),
        ("http://[::1]:8000/", "::1, a loopback address"),
        ("http://10.1.2.3/", "10.1.2.3, a private address"),
        ("http://192.168.0.1/", "a private address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254, a link-local address"),
        ("http://[::ffff:10.0.0.1]/", "10.0.0.1, a private address"),
        ("http://0.0.0.0/", "0.0.0.0"),
        ("http://localhost/", "127.0.0.1, a loopback address"),
        ("http://", "names no host"),
    ],
)
def test_the_guard_refuses_what_is_not_a_public_http_address(url, words):
    with pytest.raises(OutboundRefused) as refused:
        check_url(url, ())
    assert words in str(refused.value)


@pytest.mark.parametrize(
    "url, words",
    [
        (
            "http://[::127.0.0.1]/",
            "::7f00:1, an IPv4-compatible address embedding 127.0.0.1, a loopback address",
        ),
        (
            "http://[::10.0.0.1]/",
            "an IPv4-compatible address embedding 10.0.0.1, a private address",
        ),
        (
            "http://[::ffff:0:a9fe:a9fe]/",
            "an IPv4-translated address embedding 169.254.169.254, a link-local address",
        ),
        (
            "http://[64:ff9b::7f00:1]/",
            "64:ff9b::7f00:1, a NAT64 address embedding 127.0.0.1, a loopback address",
        ),
        (
            "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",
            "a NAT64 address embedding 169.254.169.254, a link-local address",
        ),
        (
            "http://[64:ff9b:1::c0a8:1]/",
            "64:ff9b:1::c0a8:1, a NAT64 address embedding 192.168.0.1, a private address",
        ),
        (
            "http://[2002:7f00:1::]/",
            "2002:7f00:1::, a 6to4 address embedding 127.0.0.1, a loopback address",
        ),
        ("http://[2002:a00:1::1]/", "a 6to4 address embedding 10.0.0.1, a private address"),
        # Teredo: server 65.54.227.120 (public), client 192.0.2.45 (documentation, not public).
        (
            "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            "a Teredo address embedding 192.0.2.45, a private address",
        ),
        ("http://[2001:0:a00:1::]/", "a Teredo address embedding 10.0.0.1, a private address"),
    ],
)
def test_an_ipv6_address_is_judged_by_the_ipv4_address_it_embeds(url, words):
    with pytest.raises(OutboundRefused) as refused:
        check_url(url, ())
    assert words in str(refused.value)


@pytest.mark.parametrize(
    "address", ["64:ff9b::808:808", "2002:808:808::1", "2606:4700::1111", "::ffff:8.8.8.8"]
)
def test_an_ipv6_address_embedding_a_public_ipv4_address_passes(address):
    assert check_url(f"http://[{address}]/", ()).addresses


def test_a_name_resolving_to_an_address_that_embeds_a_private_one_is_refused():
    with pytest.raises(
        OutboundRefused, match="a NAT64 address embedding 10.0.0.5, a private address"
    ):
        check_url(
            "http://example.test/", (), lambda host, port: ["93.184.216.34", "64:ff9b::a00:5"]
        )


def test_every_address_of_a_name_is_checked_not_just_the_first():
    two_faced = lambda host, port: ["93.184.216.34", "10.0.0.5"]  # noqa: E731
    with pytest.raises(OutboundRefused, match="10.0.0.5, a private address"):
        check_url("http://example.test/", (), two_faced)
    public = check_url("https://example.test/feed?x=1", (), lambda host, port: ["93.184.216.34"])
    assert (public.host, public.port, public.path, public.addresses) == (
        "example.test",
        443,
        "/feed?x=1",
        ("93.184.216.34",),
    )


def test_a_name_that_cannot_be_resolved_is_refused_with_its_name():
    def nowhere(host, port):
        raise OSError("no such host")

    with pytest.raises(OutboundRefused, match="'nowhere.test' could not be resolved"):
        check_url("http://nowhere.test/", (), nowhere)


def test_the_allow_list_admits_exactly_the_hosts_ports_and_paths_it_names():
    rules = parse_allow_list("127.0.0.1:8123, intranet.test/blog/")
    assert check_url("http://127.0.0.1:8123/x", rules).addresses == ("127.0.0.1",)
    # the address is named
    assert check_url("http://localhost:8123/x", rules, lambda h, p: ["127.0.0.1"])
    with pytest.raises(OutboundRefused):
        check_url("http://127.0.0.1:8124/x", rules)  # another port
    private = lambda h, p: ["10.0.0.9"]  # noqa: E731
    assert check_url("http://intranet.test/blog/post", rules, private)
    for outside in (
        "http://intranet.test/admin",
        "http://intranet.test/blog/../admin",
        "http://intranet.test/blog/%2e%2e/admin",
    ):
        with pytest.raises(OutboundRefused):
            check_url(outside, rules, private)


def test_a_broken_allow_list_entry_is_refused_at_configuration():
    with pytest.raises(ValueError, match="names no host"):
        parse_allow_list(":8000")


def test_the_allow_list_is_read_from_the_environment(monkeypatch):
    from reactor_plugins.cms.server import CmsServerPlugin

    monkeypatch.setenv("REACTOR_CRAWL_ALLOW", "127.0.0.1:9999 wiki.internal")
    hosts = [(r.host, r.port) for r in CmsServerPlugin(crawl_allow=["10.0.0.1"]).allow_rules]
    assert hosts == [("10.0.0.1", None), ("127.0.0.1", 9999), ("wiki.internal", None)]


# The fetcher, against a real loopback server --------------------------------------------------


def test_loopback_is_refused_unless_the_allow_list_names_it(origin):
    with pytest.raises(OutboundRefused, match="loopback"):
        fetch(origin + "/demo-sources/feed.xml", FetchPolicy())
    assert b"<rss" in fetch(origin + "/demo-sources/feed.xml", allowing(origin)).body


@pytest.mark.parametrize(
    "path, words", [("/to-private", "10.0.0.7"), ("/to-metadata", "169.254.169.254")]
)
def test_a_redirect_to_a_private_address_is_refused(origin, path, words):
    with pytest.raises(OutboundRefused, match=words):
        fetch(origin + path, allowing(origin))


def test_a_redirect_within_allowed_addresses_is_followed(origin):
    answer = fetch(origin + "/to-blog", allowing(origin))
    assert answer.url == origin + "/demo-sources/blog/" and b"<article>" in answer.body


def test_an_oversized_answer_is_refused(origin):
    with pytest.raises(OutboundFailed, match="larger than 100000 bytes"):
        fetch(origin + "/huge", allowing(origin, max_bytes=100_000))


def test_a_slow_source_times_out(origin):
    started = time.monotonic()
    with pytest.raises(OutboundFailed, match="did not answer within 0.5 seconds"):
        fetch(origin + "/slow", allowing(origin, timeout=0.5))
    assert time.monotonic() - started < 2


def test_a_source_that_dribbles_is_stopped_by_the_overall_deadline(origin):
    started = time.monotonic()
    with pytest.raises(OutboundFailed, match="within 0.5 seconds"):
        fetch(origin + "/dribble", allowing(origin, timeout=0.5))
    assert time.monotonic() - started < 2


def test_a_feed_with_entities_is_refused_unparsed(origin):
    with pytest.raises(SourceError, match="DOCTYPE or entities"):
        feed_items(fetch(origin + "/bomb.xml", allowing(origin)).body, origin)


# Crawling through the API, into drafts ---------------------------------------------------------


@pytest.fixture
def cms(tmp_path, origin):
    return serve_cms(tmp_path, crawl_allow=origin.removeprefix("http://"), crawl_timeout=2)


def crawl(cms, **body):
    client, _ = cms
    return client.as_user("bob").post("/api/cms/sites/acme/crawl", json=body)


def test_a_blog_is_crawled_into_drafts_with_its_markup_as_text(cms, origin):
    client, database = cms
    answer = crawl(cms, kind="blog", url=origin + "/demo-sources/blog/", limit=3)
    assert answer.status_code == 200, answer.text
    imported = answer.json()["imported"]
    assert [i["slug"] for i in imported] == [
        "hello-from-the-demo-blog",
        "shipping-the-crawler",
        "markup-b-stays-b-text",
    ]
    assert {i["status"] for i in imported} == {"draft"}
    ada = client.as_user("ada")
    first = ada.get("/api/cms/sites/acme/entries/hello-from-the-demo-blog").json()
    assert first["source_url"] == origin + "/demo-sources/blog/posts/hello-from-the-demo-blog.html"
    assert first["body"] == (
        "This blog is served by the reactor server itself, under /demo-sources/.\n\n"
        "## Why\n\n- No network needed\n- Same answers every time"
    )
    # the page's meta description
    assert first["excerpt"] == "The first post of a blog the demo crawls."
    hostile = ada.get("/api/cms/sites/acme/entries/markup-b-stays-b-text").json()
    assert hostile["title"] == "Markup <b>stays</b> text"
    assert "pwned = 1" not in hostile["body"]  # the script element is dropped, not kept as text
    # text the source escaped stays text
    assert '<img src=x onerror="window.pwned=1">' in hostile["body"]
    assert client.get("/sites/acme/markup-b-stays-b-text").status_code == 404  # a draft
    ada.post("/api/cms/sites/acme/entries/markup-b-stays-b-text/publish")
    page = client.get("/sites/acme/markup-b-stays-b-text").text
    assert (
        "<img" not in page
        and "<b>" not in page
        and "&lt;img src=x onerror=&quot;window.pwned=1&quot;&gt;" in page
    )


def test_crawling_the_same_source_again_imports_nothing_twice(cms, origin):
    client, database = cms
    crawl(cms, kind="feed", url=origin + "/demo-sources/feed.xml", limit=2)
    count = entry_count(database)
    again = crawl(cms, kind="feed", url=origin + "/demo-sources/feed.xml", limit=2).json()
    assert (
        again["imported"] == []
        and len(again["skipped"]) == 2
        and "already imported" in again["skipped"][0]["reason"]
    )
    assert entry_count(database) == count


def test_an_rss_feed_and_an_atom_feed_are_read_up_to_the_limit(cms, origin):
    rss = crawl(
        cms, kind="feed", url=origin + "/demo-sources/feed.xml", limit=2, collection="pages"
    ).json()
    assert [i["title"] for i in rss["imported"]] == [
        "Hello from the demo blog",
        "Shipping the crawler",
    ]
    atom = crawl(
        cms, kind="feed", url=origin + "/demo-sources/atom.xml", limit=1, dry_run=True
    ).json()
    assert (
        atom["found"] == 1
        and atom["items"][0]["title"] == "Hello from the demo blog"
        and "imported" not in atom
    )
    client, _ = cms
    pages = (
        client.as_user("bob").get("/api/cms/sites/acme/entries?collection=pages").json()["entries"]
    )
    assert {"hello-from-the-demo-blog", "shipping-the-crawler"} <= {e["slug"] for e in pages}


def test_a_wordpress_site_is_read_through_its_rest_api(cms, origin):
    answer = crawl(cms, kind="wordpress", url=origin + "/demo-sources", limit=2).json()
    assert [i["slug"] for i in answer["imported"]] == [
        "hello-from-the-demo-blog",
        "shipping-the-crawler",
    ]
    client, _ = cms
    entry = client.as_user("bob").get("/api/cms/sites/acme/entries/shipping-the-crawler").json()
    assert (
        entry["body"]
        == "Every address is checked before the crawler connects, and again after each redirect."
    )
    assert entry["excerpt"] == "How the crawler stays out of private networks."
    assert entry["status"] == "draft"


@pytest.mark.parametrize(
    "path, status, words",
    [
        ("/to-private", 422, "10.0.0.7"),
        ("/slow", 502, "did not answer within 2 seconds"),
        ("/demo-sources/feed.xml", 422, "is 'application/rss+xml', not a blog page"),
    ],
)
def test_a_crawl_that_cannot_read_its_source_says_why_and_imports_nothing(
    cms, origin, path, status, words
):
    client, database = cms
    count = entry_count(database)
    answer = crawl(cms, kind="blog", url=origin + path)
    assert answer.status_code == status and words in answer.json()["error"]
    assert entry_count(database) == count


def test_a_blog_of_slow_pages_stops_at_the_crawls_time_budget(tmp_path, origin):
    client, database = serve_cms(
        tmp_path, crawl_allow=origin.removeprefix("http://"), crawl_timeout=0.3
    )
    started = time.monotonic()
    answer = client.as_user("bob").post(
        "/api/cms/sites/acme/crawl",
        json={"kind": "blog", "url": origin + "/slow-blog/", "limit": 6},
    )
    assert time.monotonic() - started < 2.5
    reasons = [s["reason"] for s in answer.json()["skipped"]]
    assert answer.json()["imported"] == [] and len(reasons) == 6
    assert (
        "did not answer within 0.3 seconds" in reasons[0]
        and reasons[-1] == "the crawl ran out of time before this page"
    )


def test_without_the_allow_list_the_loopback_sources_are_refused(tmp_path, origin):
    client, database = serve_cms(tmp_path, seed=True)
    answer = client.as_user("ada").post(
        "/api/cms/sites/acme/crawl", json={"kind": "feed", "url": origin + "/demo-sources/feed.xml"}
    )
    assert answer.status_code == 422 and "loopback" in answer.json()["error"]


def test_imports_running_at_once_into_one_site_each_take_a_free_slug(tmp_path):
    store = SiteStore(Database(tmp_path / "cms.sqlite3"))
    store.add_site("acme", "Acme")
    items = [
        [Item("Same title", "Body", "", f"https://example.com/{n}", slug="same")] for n in range(20)
    ]
    with ThreadPoolExecutor(10) as pool:
        reports = list(pool.map(lambda batch: import_items(store, "acme", batch, "posts"), items))
    slugs = [report["imported"][0]["slug"] for report in reports]
    assert len(set(slugs)) == 20 and "same" in slugs and "same-20" in slugs
