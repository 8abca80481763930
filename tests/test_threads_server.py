"""A signed-in person's conversations on the server (`/api/threads`), on SQLite and PostgreSQL:
kept in turns, read back whole, listed newest first; another person's answers 404 as an unknown
one does; a stale version or another tab's answer refuses a turn; limits refuse with a sentence
and write nothing."""

from __future__ import annotations

import re
import time

import pytest
from conftest import app_server_over, bearer

from reactor.server.threads.store import ThreadLimits

USER_TURN = {
    "messages": [{"role": "user", "content": "Open the onboarding deck at slide four, please"}],
    "items": [{"type": "message", "role": "user", "text": "Open the onboarding deck…"}],
    "answering": True,
    "tab": "tab-a",
}
TOOL_TURN = {
    "messages": [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "decks_open", "arguments": '{"id": "x"}'}],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "name": "decks_open",
            "result": {"ok": True, "result": {"slide": 4}},
        },
    ],
    "items": [
        {
            "type": "tool_call.finished",
            "call_id": "c1",
            "name": "decks_open",
            "title": "Decks: Open Deck",
            "summary": "Opened at slide 4",
            "result": {"ok": True, "result": {"slide": 4}},
        },
        {
            "type": "approval",
            "call_id": "c1",
            "question": "Open it?",
            "decision": "allow",
            "at": 1.5,
        },
    ],
    "answering": True,
}
REPLY_TURN = {
    "messages": [{"role": "assistant", "content": "It is open."}],
    "items": [{"type": "message", "role": "assistant", "text": "It is open."}],
    "answering": False,
}


def start(client, headers, turn=USER_TURN):
    answer = client.post("/api/threads", json=turn, headers=headers)
    assert answer.status_code == 201, answer.text
    return answer.json()


def append(client, headers, thread, version, turn, tab="tab-a", **extra):
    return client.post(
        f"/api/threads/{thread}/turns",
        json={**turn, "version": version, "tab": tab, **extra},
        headers=headers,
    )


def test_a_conversation_is_kept_turn_by_turn_and_read_back_whole(app_server):
    ada = bearer(app_server, "ada")
    with app_server.client() as client:
        made = start(client, ada)
        assert made["version"] == 1 and made["answering"] is True
        assert made["title"] == "Open the onboarding deck at slide four, please"
        second = append(client, ada, made["id"], 1, TOOL_TURN)
        assert second.status_code == 200, second.text
        assert second.json()["version"] == 2
        assert append(client, ada, made["id"], 2, REPLY_TURN).json()["version"] == 3
        thread = client.get(f"/api/threads/{made['id']}", headers=ada).json()
    assert thread["messages"] == (
        USER_TURN["messages"] + TOOL_TURN["messages"] + REPLY_TURN["messages"]
    )
    assert thread["items"] == USER_TURN["items"] + TOOL_TURN["items"] + REPLY_TURN["items"]
    assert thread["version"] == 3 and thread["messages"] and thread["answering"] is None
    assert thread["title"] == made["title"]


def test_the_list_is_the_persons_own_newest_first_a_page_at_a_time(app_server):
    ada, bob = bearer(app_server, "ada"), bearer(app_server, "bob")
    with app_server.client() as client:
        made = [
            start(client, ada, {**USER_TURN, "messages": [{"role": "user", "content": f"n{i}"}]})
            for i in range(5)
        ]
        start(client, bob)
        append(client, ada, made[0]["id"], 1, REPLY_TURN)  # the oldest is the latest added to
        first = client.get("/api/threads?limit=2", headers=ada).json()
        assert [t["title"] for t in first["threads"]] == ["n0", "n4"]
        assert first["count"] == 5 and first["limits"]["threads"] == ThreadLimits().threads
        rest = client.get(f"/api/threads?limit=10&before={first['next']}", headers=ada).json()
        assert [t["title"] for t in rest["threads"]] == ["n3", "n2", "n1"]
        assert rest["next"] is None
        refused = client.get("/api/threads?before=not-a-cursor", headers=ada)
        assert refused.status_code == 422 and refused.json()["field"] == "before"


def test_another_persons_thread_is_404_in_the_words_of_an_unknown_one_and_stays_as_it_was(
    app_server,
):
    ada, bob = bearer(app_server, "ada"), bearer(app_server, "bob")
    with app_server.client() as client:
        made = start(client, ada)
        before = client.get(f"/api/threads/{made['id']}", headers=ada).json()
        unknown = "A" * 22
        for thread in (made["id"], unknown):
            answers = [
                client.get(f"/api/threads/{thread}", headers=bob),
                client.patch(f"/api/threads/{thread}", json={"title": "Mine"}, headers=bob),
                client.delete(f"/api/threads/{thread}", headers=bob),
                append(client, bob, thread, 1, REPLY_TURN),
            ]
            assert [a.status_code for a in answers] == [404] * 4
            said = {a.json()["error"].replace(thread, "ID") for a in answers}
            assert said == {
                "There is no conversation 'ID' of yours here; it may have been deleted."
            }
        assert client.get(f"/api/threads/{made['id']}", headers=ada).json() == before
        assert client.get("/api/threads", headers=bob).json()["threads"] == []


def test_a_thread_id_is_unguessable_and_a_malformed_one_is_a_404(app_server):
    ada = bearer(app_server, "ada")
    with app_server.client() as client:
        ids = {start(client, ada)["id"] for _ in range(3)}
        assert len(ids) == 3
        assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", i) for i in ids)  # 128 random bits
        assert client.get("/api/threads/1", headers=ada).status_code == 404


def test_signed_out_reads_and_writes_are_refused_and_so_are_writes_from_another_site(
    app_server,
):
    with app_server.client() as client:
        assert client.get("/api/threads").status_code == 401
        refused = client.post("/api/threads", json=USER_TURN)
        assert refused.status_code == 401
        assert refused.json()["error"] == "Sign in to keep your conversations on this site."
        signed_in = client.post("/auth/sign-in", json={"username": "ada", "password": "ada-demo"})
        assert signed_in.status_code == 200  # the cookie is kept by the client
        forged = client.post(
            "/api/threads", json=USER_TURN, headers={"origin": "http://evil.example"}
        )
        assert forged.status_code == 403
        assert client.get("/api/threads").json()["count"] == 0


def test_an_agent_token_writes_and_reads_no_chat_threads(app_server):
    ada = bearer(app_server, "ada")
    with app_server.client() as client:
        token = client.post("/api/agent-tokens", json={"name": "agent"}, headers=ada).json()
        agent = {"authorization": f"Bearer {token['token']}"}
        assert client.post("/api/threads", json=USER_TURN, headers=agent).status_code == 401
        assert client.get("/api/threads", headers=agent).status_code == 401
        assert client.get("/api/threads", headers=ada).json()["count"] == 0


def test_a_stale_version_is_refused_with_the_thread_as_it_is_and_nothing_is_added(app_server):
    ada = bearer(app_server, "ada")
    with app_server.client() as client:
        made = start(client, ada)
        assert append(client, ada, made["id"], 1, REPLY_TURN).status_code == 200
        stale = append(client, ada, made["id"], 1, USER_TURN, tab="tab-b", start=True)
        assert stale.status_code == 409
        body = stale.json()
        assert body["error"] == (
            "This conversation changed in another tab or window; it is shown here as it is "
            "now. Send your message again."
        )
        assert body["version"] == 2 and body["current"]["version"] == 2
        assert len(client.get(f"/api/threads/{made['id']}", headers=ada).json()["messages"]) == 2


def test_a_version_no_thread_can_have_is_a_422_naming_it_and_nothing_is_added(app_server):
    ada = bearer(app_server, "ada")
    with app_server.client() as client:
        made = start(client, ada)
        refused = append(client, ada, made["id"], 2**63, REPLY_TURN)
        assert refused.status_code == 422, refused.text
        assert refused.json()["field"] == "version"
        assert len(client.get(f"/api/threads/{made['id']}", headers=ada).json()["messages"]) == 1


def test_a_new_turn_waits_while_another_tab_answers_but_the_answering_tab_goes_on(app_server):
    ada = bearer(app_server, "ada")
    with app_server.client() as client:
        made = start(client, ada)  # tab-a is answering
        busy = append(client, ada, made["id"], 1, USER_TURN, tab="tab-b", start=True)
        assert busy.status_code == 409 and busy.json()["answering"] is True
        assert busy.json()["error"].startswith("The assistant is still answering in another tab")
        assert append(client, ada, made["id"], 1, TOOL_TURN).status_code == 200
        # A tab reloaded while it answered (the same tab) may start anew.
        assert append(client, ada, made["id"], 2, USER_TURN, start=True).status_code == 200
        # An answer left unfinished for longer than the server waits holds the thread no more.
        database = app_server.app.state.context.database
        with database.transaction() as db:
            db.execute("UPDATE threads SET answering_at = ?", (time.time() - 3600,))
        listed = client.get("/api/threads", headers=ada).json()["threads"]
        assert listed[0]["answering"] is False
        assert append(client, ada, made["id"], 3, USER_TURN, tab="tab-b", start=True).is_success
        assert append(client, ada, made["id"], 4, REPLY_TURN, tab="tab-b").is_success
        assert client.get(f"/api/threads/{made['id']}", headers=ada).json()["answering"] is None


def test_rename_and_delete_change_only_that_thread(app_server):
    ada = bearer(app_server, "ada")
    with app_server.client() as client:
        one, two = start(client, ada), start(client, ada)
        renamed = client.patch(
            f"/api/threads/{one['id']}", json={"title": "  Decks  "}, headers=ada
        )
        assert renamed.status_code == 200 and renamed.json()["title"] == "Decks"
        blank = client.patch(f"/api/threads/{one['id']}", json={"title": " "}, headers=ada)
        assert blank.status_code == 422
        assert blank.json()["error"] == (
            "A title is 1 to 120 characters of text, not blank, no control characters."
        )
        assert client.delete(f"/api/threads/{two['id']}", headers=ada).json() == {
            "deleted": two["id"]
        }
        assert client.get(f"/api/threads/{two['id']}", headers=ada).status_code == 404
        listed = client.get("/api/threads", headers=ada).json()["threads"]
        assert [(t["id"], t["title"]) for t in listed] == [(one["id"], "Decks")]


@pytest.mark.parametrize(
    ("body", "field", "sentence"),
    [
        ({**USER_TURN, "messages": [{"role": "robot", "content": "x"}]}, "messages", "messages"),
        ({**USER_TURN, "messages": [{"role": "user"}]}, "messages[0].content", "messages"),
        ({**USER_TURN, "items": [{"type": "model", "apiKey": "sk-1"}]}, "items", "items"),
        ({**USER_TURN, "settings": {"apiKey": "sk-1"}}, "settings", "not 'settings'"),
        ({**USER_TURN, "tab": "../x"}, "tab", "tab is the page's own name"),
        ({"messages": [], "items": []}, "tab", "tab is the page's own name"),
    ],
)
def test_a_malformed_thread_body_is_a_422_naming_the_field_and_stores_nothing(
    app_server, body, field, sentence
):
    ada = bearer(app_server, "ada")
    with app_server.client() as client:
        refused = client.post("/api/threads", json=body, headers=ada)
        assert refused.status_code == 422, refused.text
        assert refused.json()["field"].startswith(field.split("[")[0])
        assert sentence in refused.json()["error"]
        assert client.get("/api/threads", headers=ada).json()["count"] == 0


@pytest.fixture
def limited(tmp_path, database_target):
    """The app with small limits: two threads a person, 2,000 bytes a thread, 1,500 a turn."""
    limits = ThreadLimits(threads=2, thread_bytes=2000, turn_bytes=1500)
    return app_server_over(
        tmp_path / "data", seed_demo=True, database=database_target, threads=limits
    )


def test_past_a_threads_size_the_person_is_told_to_start_a_new_one_and_nothing_is_half_written(
    limited,
):
    ada = bearer(limited, "ada")
    with limited.client() as client:
        made = start(client, ada)
        big = {**REPLY_TURN, "messages": [{"role": "assistant", "content": "x" * 900}]}
        assert append(client, ada, made["id"], 1, big).status_code == 200
        full = append(client, ada, made["id"], 2, big)
        assert full.status_code == 409 and full.json()["limit"] == "threadBytes"
        assert full.json()["error"] == (
            "This conversation has reached this site's limit of 0.002 MB, so nothing more can "
            "be added to it: start a new conversation (this one stays as it is)."
        )
        kept = client.get(f"/api/threads/{made['id']}", headers=ada).json()
        assert kept["version"] == 2 and len(kept["messages"]) == 2
        huge = {**REPLY_TURN, "messages": [{"role": "assistant", "content": "x" * 2000}]}
        too_large = append(client, ada, made["id"], 2, huge)
        assert too_large.status_code == 413
        assert too_large.json()["error"].startswith("One turn may add at most 0.0015 MB")
        assert client.get(f"/api/threads/{made['id']}", headers=ada).json()["version"] == 2


def test_past_the_number_of_threads_the_person_is_told_to_delete_old_ones(limited):
    ada = bearer(limited, "ada")
    with limited.client() as client:
        first = start(client, ada)
        start(client, ada)
        refused = client.post("/api/threads", json=USER_TURN, headers=ada)
        assert refused.status_code == 409 and refused.json()["limit"] == "threads"
        assert refused.json()["error"] == (
            "You have 2 conversations, the most this site keeps for one person: delete old "
            "ones (under Conversations) to start a new one."
        )
        assert client.get("/api/threads", headers=ada).json()["count"] == 2
        client.delete(f"/api/threads/{first['id']}", headers=ada)
        assert client.post("/api/threads", json=USER_TURN, headers=ada).status_code == 201


def test_threads_untouched_for_the_days_kept_are_deleted_and_the_others_stay(
    tmp_path, database_target
):
    data = tmp_path / "data"
    server = app_server_over(data, seed_demo=True, database=database_target)
    ada = bearer(server, "ada")
    with server.client() as client:
        old, recent = start(client, ada), start(client, ada)
    database = server.app.state.context.database
    with database.transaction() as db:
        db.execute(
            "UPDATE threads SET updated = ? WHERE id = ?", (time.time() - 8 * 86400, old["id"])
        )
    server.app.state.context.database.close()
    # Started again with --threads-keep-days 7: the old one goes at the start.
    again = app_server_over(
        data, seed_demo=True, database=database_target, threads=ThreadLimits(keep_days=7)
    )
    with again.client() as client:
        listed = client.get("/api/threads", headers=bearer(again, "ada")).json()
    assert [t["id"] for t in listed["threads"]] == [recent["id"]]
    assert listed["limits"]["keepDays"] == 7
    with database.transaction() as db:
        left = db.execute("SELECT COUNT(*) FROM thread_turns WHERE thread_id = ?", (old["id"],))
        assert left.fetchone()[0] == 0, "its turns went with it"
