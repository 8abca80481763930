import pytest
from conftest import app_server_over


@pytest.fixture
def server(tmp_path, database_target):
    return app_server_over(tmp_path, plugins=[], seed_demo=True, database=database_target)


def test_signing_in_gives_a_cookie_and_a_token_that_both_identify_the_user(server):
    with server.client() as browser:
        signed_out = browser.get("/auth/session")
        # no error for a visitor
        assert (signed_out.status_code, signed_out.json()) == (200, {"user": None})
        answer = browser.post("/auth/sign-in", json={"username": "bob", "password": "bob-demo"})
        assert answer.json()["user"] == {"username": "bob", "groups": ["staff"]}
        assert "httponly" in answer.headers["set-cookie"].lower()
        assert browser.get("/auth/me").json()["username"] == "bob"
        assert browser.get("/auth/session").json() == {
            "user": {"username": "bob", "groups": ["staff"]}
        }
        token = answer.json()["token"]
    with server.client({"authorization": f"Bearer {token}"}) as client:
        assert client.get("/auth/me").json()["username"] == "bob"


@pytest.mark.parametrize(
    "username, password", [("bob", "wrong"), ("nobody", "bob-demo"), ("bob", "")]
)
def test_a_wrong_name_or_password_is_refused_with_the_same_sentence(server, username, password):
    answer = server.client().post(
        "/auth/sign-in", json={"username": username, "password": password}
    )
    assert answer.status_code == 401 and answer.json() == {"error": "Wrong user name or password."}
    assert "set-cookie" not in answer.headers


@pytest.mark.parametrize(
    "body, status",
    [
        (b"{", 400),
        (b'{"username": 1, "password": []}', 422),
        (b'{"username": "bob"}', 422),
        (b"x" * 10_000, 413),
    ],
)
def test_malformed_sign_ins_are_refused(server, body, status):
    answer = server.client().post(
        "/auth/sign-in", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == status and answer.json()["error"]


def test_signing_out_ends_the_session_everywhere(server):
    token = (
        server.client()
        .post("/auth/sign-in", json={"username": "ada", "password": "ada-demo"})
        .json()["token"]
    )
    headers = {"authorization": f"Bearer {token}"}
    assert server.client().post("/auth/sign-out", headers=headers).json() == {"signedOut": True}
    assert server.client().get("/auth/me", headers=headers).status_code == 401


@pytest.mark.parametrize("header", ["Bearer", "Bearer forged-token", "Basic YWRhOmFkYS1kZW1v"])
def test_no_or_forged_credentials_are_nobody(server, header):
    assert server.client().get("/auth/me", headers={"authorization": header}).status_code == 401


def test_passwords_are_stored_salted_and_hashed(server):
    with server.app.state.context.database.transaction() as db:
        rows = db.execute("SELECT salt, password_hash FROM users").fetchall()
    assert len({bytes(r["salt"]) for r in rows}) == len(rows)
    assert not any(b"demo" in bytes(r["password_hash"]) for r in rows)
