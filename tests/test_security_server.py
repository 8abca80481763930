"""The server as an attacker meets it (no browser): cross-site writes, hosts, headers, sign-in
limits, password hashes and sessions, hostile bodies. The browser's own CSRF cases are in
test_security_page.py."""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager

import pytest
from conftest import app_server_over, bearer, new_database

from reactor.server.auth import passwords
from reactor.server.auth.sessions import IDLE_SECONDS, Auth
from reactor.server.auth.sign_in_limits import CLIENT_LIMIT, USER_LIMIT
from reactor.server.database import Database

RECORD = {
    "id": "planted",
    "name": "planted",
    "location": "ai-tool",
    "language": "python",
    "code": "def invoke(args, context):\n    return 'planted'\n",
    "settings": {
        "tool": {"description": "Planted by another site.", "inputSchema": {"type": "object"}}
    },
    "visibility": {"users": [], "groups": ["staff"]},
}


@pytest.fixture(scope="module")
def server(request, tmp_path_factory, backend):
    folder = tmp_path_factory.mktemp("data")
    database = new_database(request, backend, folder)
    return app_server_over(
        folder, seed_demo=True, allow_origins=["http://127.0.0.1:5500"], database=database
    )


@contextmanager
def cookie_client(live, username="ada"):
    """A client that, like a browser, holds the session as a cookie (and sends no bearer token)."""
    with live.client() as client:
        answer = client.post(
            "/auth/sign-in", json={"username": username, "password": f"{username}-demo"}
        )
        assert answer.status_code == 200, answer.text
        yield client


def record_exists(live, record_id="planted") -> bool:
    with live.app.state.context.database.transaction() as db:
        return (
            db.execute("SELECT 1 FROM plugin_records WHERE id = ?", (record_id,)).fetchone()
            is not None
        )


# Cross-site writes ----------------------------------------------------------------------------

FORGED = [
    ({"content-type": "text/plain"}, 415),
    ({"content-type": "application/x-www-form-urlencoded"}, 415),
    ({"content-type": "multipart/form-data; boundary=x"}, 415),
    ({}, 415),
    ({"content-type": "application/json", "origin": "null"}, 403),
    ({"content-type": "application/json", "origin": "http://evil.example"}, 403),
    ({"content-type": "application/json", "origin": "http://127.0.0.1:9"}, 403),
    ({"content-type": "application/json", "sec-fetch-site": "cross-site"}, 403),
    ({"content-type": "application/json", "sec-fetch-site": "same-site"}, 403),
]


@pytest.mark.parametrize("headers, status", FORGED)
def test_a_cookie_write_that_is_not_same_origin_json_is_refused_and_nothing_is_saved(
    server, headers, status
):
    with cookie_client(server) as ada:
        answer = ada.post("/plugins", content=json.dumps(RECORD).encode(), headers=headers)
        assert answer.status_code == status and answer.json()["error"]
    assert not record_exists(server)


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("PATCH", "/plugins/cms", {"enabled": False}),
        (
            "PUT",
            "/api/decks/onboarding",
            {"id": "onboarding", "title": "x", "slides": [{"title": "x"}]},
        ),
        ("DELETE", "/api/decks/onboarding", None),
        ("POST", "/api/cms/sites/acme/entries", {"title": "Planted"}),
        ("POST", "/auth/sign-out", {}),
        ("DELETE", "/plugins/maintenance-backlog", None),
    ],
)
def test_every_write_route_refuses_a_cross_site_cookie(server, method, path, body):
    with cookie_client(server) as ada:
        before = ada.get("/api/decks").json(), ada.get("/plugins").json()
        content = b"" if body is None else json.dumps(body).encode()
        answer = ada.request(
            method,
            path,
            content=content,
            headers={"content-type": "text/plain", "origin": "http://evil.example"},
        )
        assert answer.status_code == 415
        answer = ada.request(
            method,
            path,
            content=content,
            headers={"content-type": "application/json", "origin": "http://evil.example"},
        )
        assert answer.status_code == 403
        assert (ada.get("/api/decks").json(), ada.get("/plugins").json()) == before
        assert ada.get("/auth/me").status_code == 200  # still signed in: sign-out was refused too


def test_sign_in_from_another_site_is_refused(server):
    answer = server.client().post(
        "/auth/sign-in",
        content=b'{"username": "eve", "password": "eve-demo"}',
        headers={"content-type": "text/plain"},
    )
    assert answer.status_code == 415 and "set-cookie" not in answer.headers
    answer = server.client().post(
        "/auth/sign-in",
        json={"username": "eve", "password": "eve-demo"},
        headers={"origin": "http://evil.example"},
    )
    assert answer.status_code == 403 and "set-cookie" not in answer.headers


def test_same_origin_and_allowed_origin_json_writes_work(server):
    with cookie_client(server) as ada:
        own = ada.post("/plugins", json=RECORD, headers={"origin": server.url})
        assert own.status_code == 201
        allowed = ada.put(
            "/plugins/planted",
            json={**RECORD, "enabled": False},
            headers={"origin": "http://127.0.0.1:5500"},
        )
        assert allowed.status_code == 200 and allowed.json()["enabled"] is False
        assert (
            ada.delete(
                "/plugins/planted",
                headers={"content-type": "application/json", "sec-fetch-site": "same-origin"},
            ).status_code
            == 200
        )


def test_a_bearer_token_needs_neither_json_nor_an_origin(server):
    headers = {
        **bearer(server, "ada"),
        "content-type": "text/plain",
        "origin": "http://evil.example",
    }
    answer = server.client().post("/plugins", content=json.dumps(RECORD).encode(), headers=headers)
    assert answer.status_code == 201
    assert server.client().delete("/plugins/planted", headers=headers).status_code == 200


# Hosts and headers ----------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1.nip.io", ""])
def test_a_host_the_server_does_not_serve_is_refused(server, host):
    answer = server.client().get("/api/decks", headers={"host": host})
    assert answer.status_code == 421 and "does not serve the host" in answer.json()["error"]


@pytest.mark.parametrize("host", ["localhost", "[::1]:8000", "127.0.0.1:1234"])
def test_loopback_names_are_served(server, host):
    assert server.client().get("/api/decks", headers={"host": host}).status_code == 200


def test_the_app_page_has_a_content_security_policy_and_nosniff(server):
    answer = server.client().get("/")
    policy = dict(
        part.strip().split(" ", 1) for part in answer.headers["content-security-policy"].split(";")
    )
    assert policy["default-src"] == "'self'" and policy["object-src"] == "'none'"
    assert (
        "'wasm-unsafe-eval'" in policy["script-src"]
        and "'unsafe-inline'" not in policy["script-src"]
    )
    assert policy["frame-ancestors"] == "'self' http://127.0.0.1:5500"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert server.client().get("/api/decks").headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "path", ["/web/%00", "/web/a%00b.js", "/web/%0a", "/vendor/x/%00", "/assets/plugins/decks/%00"]
)
def test_a_path_with_a_control_character_is_a_404_not_a_crash(server, path):
    assert server.client().get(f"{path}").status_code == 404


@pytest.mark.parametrize(
    "where",
    [
        "/web/",
        "/web/sub/",
        "/vendor/{stamp}/",
        "/vendor/{stamp}/pyodide/",
        "/assets/plugins/decks/",
    ],
)
def test_a_file_name_longer_than_the_file_system_allows_is_a_404_not_a_500(server, where):
    from reactor.server.app import runtime_manifest

    path = where.format(stamp=runtime_manifest().stamp) + "a" * 256 + ".js"
    answer = server.client().get(path)
    assert answer.status_code == 404 and answer.json()["error"]


def test_the_demo_sources_run_no_script(server):
    answer = server.client().get("/demo-sources/blog/")
    assert answer.status_code == 200 and answer.headers["content-security-policy"].startswith(
        "default-src 'none'"
    )


# Authorization ----------------------------------------------------------------------------------


def test_maintenance_data_is_for_those_who_may_use_a_tool_that_reads_it(server):
    url = "/api/maintenance/entities?building=B-101"
    assert server.client().get(f"{url}").status_code == 401
    refused = server.client().get(f"{url}", headers=bearer(server, "eve"))
    assert (
        refused.status_code == 403
        and "may use no tool that reads /api/maintenance/entities" in refused.json()["error"]
    )
    assert (
        server.client().get(f"{url}", headers=bearer(server, "bob")).json()["building"]["id"]
        == "B-101"
    )
    assert (
        server.client().get("/api/maintenance/slow?ms=0", headers=bearer(server, "eve")).status_code
        == 403
    )


# Hostile bodies ---------------------------------------------------------------------------------


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    "method, path",
    [
        ("POST", "/auth/sign-in"),
        ("POST", "/plugins"),
        ("PUT", "/plugins/maintenance-backlog"),
        ("PATCH", "/plugins/cms"),
        ("PUT", "/api/decks/x"),
        ("POST", "/api/cms/sites/acme/entries"),
        ("PATCH", "/api/cms/sites/acme/entries/welcome"),
        ("POST", "/api/cms/sites/acme/crawl"),
    ],
)
@pytest.mark.parametrize(
    "body, status",
    [
        (f'{{"a": {deep(2000)}}}', 400),
        (f'{{"a": {deep(900)}}}', 422),
        ('{"title": "\\ud800", "username": "\\ud800", "password": "x"}', 422),
        ('{"\\udfff": 1}', 422),
    ],
)
def test_hostile_json_is_a_4xx_on_every_route(server, method, path, body, status):
    answer = server.client().request(
        method,
        path,
        content=body.encode(),
        headers={**bearer(server, "ada"), "content-type": "application/json"},
    )
    # that route takes 1 KB: refused by its size first
    too_large = path == "/plugins/cms" and len(body) > 1024
    assert answer.status_code == (413 if too_large else status), answer.text
    assert answer.json()["error"]


@pytest.mark.parametrize(
    "code",
    ["x = " + "x+" * 40_000 + "x", "x = " + "-" * 90_000 + "1", "x = " + "(" * 5000 + ")" * 5000],
)
def test_ai_tool_code_that_exhausts_the_parser_is_refused_naming_the_code(server, code):
    answer = server.client().post(
        "/plugins", json={**RECORD, "id": "deep-code", "code": code}, headers=bearer(server, "ada")
    )
    assert answer.status_code == 422 and answer.json()["field"] == "code"
    assert not record_exists(server, "deep-code")


# Sign-in ----------------------------------------------------------------------------------------


@pytest.fixture
def fresh(tmp_path, database_target):
    return app_server_over(tmp_path, plugins=[], seed_demo=True, database=database_target)


def sign_in(live, username, password, **options):
    return live.client().post(
        "/auth/sign-in", json={"username": username, "password": password}, **options
    )


def test_failed_sign_ins_are_limited_per_user_even_with_the_right_password_after(fresh):
    for _ in range(USER_LIMIT):
        assert sign_in(fresh, "bob", "wrong").status_code == 401
    limited = sign_in(fresh, "bob", "bob-demo")
    assert limited.status_code == 429 and 0 < int(limited.headers["retry-after"]) <= 15 * 60
    assert "Too many failed sign-ins" in limited.json()["error"]
    assert sign_in(fresh, "ada", "ada-demo").status_code == 200  # another user is not locked out


def test_failed_sign_ins_are_limited_per_client_across_user_names(fresh):
    for number in range(CLIENT_LIMIT):
        assert sign_in(fresh, f"guess-{number}", "x").status_code == 401
    assert sign_in(fresh, "ada", "ada-demo").status_code == 429


def test_a_right_password_clears_the_users_failures(fresh):
    for _ in range(USER_LIMIT - 1):
        sign_in(fresh, "bob", "wrong")
    assert sign_in(fresh, "bob", "bob-demo").status_code == 200
    for _ in range(USER_LIMIT - 1):
        assert sign_in(fresh, "bob", "wrong").status_code == 401


def test_an_unknown_user_costs_the_same_hashing_as_a_known_one(fresh, monkeypatch):
    threads: list[str] = []
    derive = passwords._derive

    def counted(scheme, password, salt):
        threads.append(threading.current_thread().name)
        return derive(scheme, password, salt)

    monkeypatch.setattr(passwords, "_derive", counted)
    sign_in(fresh, "bob", "wrong")
    known = list(threads)
    threads.clear()
    sign_in(fresh, "nobody-at-all", "wrong")
    assert len(threads) == len(known) == 1
    # Off the event loop, on the hashing pool: other requests are not held while it runs.
    assert all(name.startswith("reactor-hashing") for name in known + threads)


def test_a_legacy_hash_is_upgraded_at_the_next_sign_in(tmp_path):
    database = Database(tmp_path / "r.sqlite3")
    auth = Auth(database, seed=False)
    salt = b"0123456789abcdef"
    with database.transaction() as db:
        db.execute(
            "INSERT INTO users (username, salt, password_hash, hash_scheme) VALUES (?, ?, ?, ?)",
            (
                "old",
                salt,
                passwords._derive(passwords.LEGACY, "old-password", salt),
                passwords.LEGACY,
            ),
        )
    assert auth.sign_in("old", "old-password")
    with database.transaction() as db:
        assert (
            db.execute("SELECT hash_scheme FROM users WHERE username = 'old'").fetchone()[0]
            == passwords.CURRENT
        )
    assert auth.sign_in("old", "old-password") and not auth.sign_in("old", "wrong")


def test_a_database_of_the_previous_schema_is_brought_forward(tmp_path):
    """Made as the previous version made it: no hash schemes, raw tokens, no schema_versions."""
    import sqlite3

    path = tmp_path / "reactor.sqlite3"
    salt = b"fedcba9876543210"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE users (username TEXT PRIMARY KEY, salt BLOB NOT NULL, "
            "password_hash BLOB NOT NULL, groups TEXT NOT NULL DEFAULT '[]');"
            "CREATE TABLE sessions (token TEXT PRIMARY KEY, username TEXT NOT NULL "
            "REFERENCES users(username) ON DELETE CASCADE, expires_at REAL NOT NULL);"
            "CREATE TABLE decks (id TEXT PRIMARY KEY, title TEXT NOT NULL, spec TEXT NOT "
            "NULL, updated_at TEXT NOT NULL);"
        )
        db.execute(
            "INSERT INTO users VALUES (?, ?, ?, ?)",
            ("ada", salt, passwords._derive(passwords.LEGACY, "ada-1234", salt), '["operators"]'),
        )
        db.execute("INSERT INTO sessions VALUES ('raw-token', 'ada', ?)", (time.time() + 3600,))
        db.execute(
            "INSERT INTO decks VALUES ('old', 'Old', ?, '2026-01-01')",
            (json.dumps({"id": "old", "title": "Old", "slides": [{"title": "x"}]}),),
        )
    live = app_server_over(tmp_path, seed_demo=False)
    assert (
        live.client().get("/auth/me", headers={"authorization": "Bearer raw-token"}).status_code
        == 401
    )
    token = sign_in(live, "ada", "ada-1234").json()["token"]
    headers = {"authorization": f"Bearer {token}"}
    assert live.client().get("/api/decks").json()[0] == {
        **live.client().get("/api/decks").json()[0],
        "id": "old",
        "owner": None,
        "version": 1,  # the column the third step added, with its default
    }
    assert live.client().delete("/api/decks/old", headers=headers).status_code == 204
    assert Database(path).version("auth") == 2 and Database(path).version("decks") == 3


def test_sessions_end_when_idle(fresh):
    token = sign_in(fresh, "bob", "bob-demo").json()["token"]
    me = lambda: fresh.client().get("/auth/me", headers={"authorization": f"Bearer {token}"})  # noqa: E731
    assert me().status_code == 200
    with fresh.app.state.context.database.transaction() as db:
        db.execute("UPDATE sessions SET last_seen = ?", (time.time() - IDLE_SECONDS - 1,))
    assert me().status_code == 401


def test_the_database_keeps_no_session_token(fresh):
    token = sign_in(fresh, "bob", "bob-demo").json()["token"]
    with fresh.app.state.context.database.transaction() as db:
        stored = [row[0] for row in db.execute("SELECT token FROM sessions")]
    assert stored and token not in stored
