"""Two `reactor serve` processes on one PostgreSQL, as a team runs them behind one address: what
one acknowledges, the other's next request reads — sessions, sign-in limits, plugin records and
switches, decks — and their start-up together (migrations, seeds) takes turns."""

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

RECORD = {
    "id": "shared-tool",
    "name": "shared_tool",
    "location": "ai-tool",
    "language": "python",
    "code": "def invoke(args, context):\n    return 'shared'\n",
    "settings": {
        "tool": {"description": "Seen by both processes.", "inputSchema": {"type": "object"}}
    },
    "visibility": {"users": [], "groups": ["staff"]},
}


def serve(tmp_path, database, name, *options, env=None):
    """`reactor serve` on a free port over `database`, its data in `tmp_path / name`, with
    `options` (and `env` in place of this environment, when given): the process and its URL."""
    command = [
        sys.executable,
        "-m",
        "reactor",
        "serve",
        "--port",
        "0",
        "--data",
        str(tmp_path / name),
        "--database",
        database,
        *options,
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    line = process.stdout.readline()
    if not line.startswith("reactor is serving"):
        process.kill()
        process.stdout.close()
        raise AssertionError(f"{name} did not start: {line!r}")
    return process, line.split()[3].rstrip("/")


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory, postgres_cluster):
    tmp_path = tmp_path_factory.mktemp("two")
    database = postgres_cluster.database()
    with ThreadPoolExecutor(
        2
    ) as pool:  # started together: both migrate and seed the empty database
        started = list(pool.map(lambda name: serve(tmp_path, database, name), ["a", "b"]))
    yield [url for _, url in started]
    for process, _ in started:
        process.terminate()
        process.wait(timeout=30)
        process.stdout.close()


def sign_in(url, username, password=None):
    return httpx.post(
        f"{url}/auth/sign-in",
        json={"username": username, "password": password or f"{username}-demo"},
    )


def bearer(token):
    return {"authorization": f"Bearer {token}"}


def test_both_started_on_one_empty_database_with_the_demo_seeded_once(two_servers):
    a, b = two_servers
    for url in (a, b):
        decks = httpx.get(f"{url}/api/decks").json()
        assert sorted(d["id"] for d in decks) == [
            "onboarding",
            "quarterly-review",
            "reactor-in-5-minutes",
        ]


def test_a_session_made_by_one_process_is_valid_on_the_other_and_ends_on_both(two_servers):
    a, b = two_servers
    token = sign_in(a, "bob").json()["token"]
    assert httpx.get(f"{b}/auth/me", headers=bearer(token)).json()["username"] == "bob"
    assert httpx.post(f"{b}/auth/sign-out", headers=bearer(token)).status_code == 200
    assert httpx.get(f"{a}/auth/me", headers=bearer(token)).status_code == 401


def test_sign_in_limits_count_the_attempts_made_at_either_process(two_servers):
    a, b = two_servers
    for attempt in range(10):
        assert sign_in((a, b)[attempt % 2], "carol", "wrong").status_code == 401
    refused = sign_in(a, "carol")
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert sign_in(b, "carol").status_code == 429


def test_a_deck_written_through_one_is_read_by_the_next_request_to_the_other(two_servers):
    a, b = two_servers
    ada = bearer(sign_in(a, "ada").json()["token"])
    deck = {"id": "shared", "title": "Shared", "slides": [{"title": "One", "body": "From A"}]}
    assert httpx.put(f"{a}/api/decks/shared", json=deck, headers=ada).status_code in (200, 201)
    assert httpx.get(f"{b}/api/decks/shared").json()["slides"][0]["body"] == "From A"
    assert httpx.delete(f"{b}/api/decks/shared", headers=ada).status_code == 204
    assert httpx.get(f"{a}/api/decks/shared").status_code == 404


def test_a_plugin_record_and_a_plugin_switch_made_on_one_hold_on_the_other(two_servers):
    a, b = two_servers
    ada = bearer(sign_in(a, "ada").json()["token"])
    bob = bearer(sign_in(b, "bob").json()["token"])
    assert httpx.post(f"{a}/plugins", json=RECORD, headers=ada).status_code == 201
    assert httpx.get(f"{b}/plugins/shared-tool", headers=bob).json()["name"] == "shared_tool"
    hidden = {**RECORD, "visibility": {"users": [], "groups": ["operators"]}}
    assert httpx.put(f"{a}/plugins/shared-tool", json=hidden, headers=ada).status_code == 200
    assert httpx.get(f"{b}/plugins/shared-tool", headers=bob).status_code in (403, 404)
    assert (
        httpx.patch(f"{a}/plugins/decks", json={"enabled": False}, headers=ada).status_code == 200
    )
    try:
        assert httpx.get(f"{b}/api/decks").status_code == 404
        assert "decks" not in {p["name"] for p in httpx.get(f"{b}/app/boot.json").json()["plugins"]}
    finally:
        assert (
            httpx.patch(f"{b}/plugins/decks", json={"enabled": True}, headers=ada).status_code
            == 200
        )
    assert httpx.get(f"{a}/api/decks").status_code == 200


def list_etags(urls, headers=None):
    """The decks list's ETag as each process answers it (each answer whole and the same)."""
    answers = [httpx.get(f"{url}/api/decks", headers=headers) for url in urls]
    assert all(a.status_code == 200 and a.json() == answers[0].json() for a in answers)
    return [a.headers["etag"] for a in answers]


def test_an_unchanged_decks_list_is_a_304_with_the_same_etag_from_both_processes(two_servers):
    a, b = two_servers
    etag, same = list_etags(two_servers)
    assert etag == same
    for url in (a, b, a, b):
        answer = httpx.get(f"{url}/api/decks", headers={"if-none-match": etag})
        assert (answer.status_code, answer.content) == (304, b"")
        assert answer.headers["etag"] == etag and answer.headers["cache-control"] == "no-cache"


def test_a_new_changed_or_deleted_deck_changes_the_list_etag_on_both_processes_at_once(
    two_servers,
):
    a, b = two_servers
    ada = bearer(sign_in(a, "ada").json()["token"])
    seen = [list_etags(two_servers)[0]]

    def after(write, url):
        """The write through `url`; then the next request to each process: a new ETag, the same
        on both, and the one before no longer answered 304. The list as it is now."""
        assert write(url).status_code in (200, 201, 204)
        etags = list_etags(two_servers)
        assert etags[0] == etags[1] != seen[-1]
        for other in (a, b):
            stale = httpx.get(f"{other}/api/decks", headers={"if-none-match": seen[-1]})
            assert stale.status_code == 200 and stale.headers["etag"] == etags[0]
        seen.append(etags[0])
        return httpx.get(f"{b}/api/decks").json()

    def put(id, title):
        deck = {"id": id, "title": title, "slides": [{"title": "One", "body": "x"}]}
        return lambda url: httpx.put(f"{url}/api/decks/{id}", json=deck, headers=ada)

    listed = after(put("etag-one", "New deck"), a)
    assert ("etag-one", "New deck") in [(d["id"], d["title"]) for d in listed]
    listed = after(put("etag-one", "Renamed"), b)
    assert ("etag-one", "Renamed") in [(d["id"], d["title"]) for d in listed]
    listed = after(lambda url: httpx.delete(f"{url}/api/decks/etag-one", headers=ada), a)
    assert "etag-one" not in [d["id"] for d in listed]
    assert seen[-1] == seen[0], "the list is again what it was: so is its ETag"
    # Another deck in the place of the first: as many decks, the same versions, another list.
    listed = after(put("etag-two", "In its place"), b)
    assert "etag-two" in [d["id"] for d in listed] and seen[-1] != seen[1]
    assert httpx.delete(f"{a}/api/decks/etag-two", headers=ada).status_code == 204


def test_every_person_and_nobody_get_the_same_decks_list_under_the_same_etag(two_servers):
    a, b = two_servers
    people = [bearer(sign_in(a, name).json()["token"]) for name in ("ada", "bob", "eve")]
    answers = [httpx.get(f"{url}/api/decks", headers=h) for url in (a, b) for h in [{}, *people]]
    assert len({(x.headers["etag"], x.content) for x in answers}) == 1
