"""The server's side of embedding: CORS headers for the origins it allows, and for no one else."""

import subprocess
import sys

import httpx
import pytest
from conftest import app_server_over, run_reactor

from reactor import ReactorError
from reactor.server.app import create_app
from reactor.server.auth.cors import check_origins
from reactor.server.auth.protection import check_hosts

EMBEDDER = "http://127.0.0.1:5500"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    return app_server_over(
        tmp_path_factory.mktemp("data"),
        plugins=[],
        seed_demo=False,
        allow_origins=[EMBEDDER, "https://shop.example/"],
    ).client()


def cors_headers(response):
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


def test_an_allowed_origin_gets_its_origin_back_with_credentials_and_vary(server):
    answer = server.get("/app/boot.json", headers={"origin": EMBEDDER})
    assert answer.status_code == 200
    assert cors_headers(answer) == {
        "access-control-allow-origin": EMBEDDER,
        "access-control-allow-credentials": "true",
    }
    assert "Origin" in answer.headers["vary"]


def test_files_keep_their_own_vary_and_gain_origin(server):
    answer = server.get(
        "/web/reactor.js", headers={"origin": "https://shop.example", "accept-encoding": "gzip"}
    )
    assert answer.headers["access-control-allow-origin"] == "https://shop.example"
    assert {v.strip() for v in answer.headers["vary"].split(",")} == {"Accept-Encoding", "Origin"}


def test_a_preflight_from_an_allowed_origin_is_answered(server):
    answer = server.options(
        "/auth/sign-in",
        headers={
            "origin": EMBEDDER,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, authorization",
        },
    )
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-origin"] == EMBEDDER
    assert "POST" in answer.headers["access-control-allow-methods"]
    assert answer.headers["access-control-allow-headers"] == "content-type, authorization"
    assert answer.headers["access-control-allow-credentials"] == "true"
    assert "Origin" in answer.headers["vary"]


def test_a_preflight_for_a_private_network_or_an_unlisted_method_is_answered_as_such(server):
    private = server.options(
        "/auth/sign-in",
        headers={
            "origin": EMBEDDER,
            "access-control-request-method": "GET",
            "access-control-request-private-network": "true",
        },
    )
    assert (
        private.status_code == 204
        and private.headers["access-control-allow-private-network"] == "true"
    )
    trace = server.options(
        "/auth/sign-in", headers={"origin": EMBEDDER, "access-control-request-method": "TRACE"}
    )
    assert trace.status_code == 400 and trace.text == "Disallowed CORS method"


def test_another_origin_gets_no_cors_header_at_all(server):
    answer = server.get("/web/reactor.js", headers={"origin": "http://127.0.0.1:5501"})
    assert answer.status_code == 200 and cors_headers(answer) == {}
    preflight = server.options(
        "/auth/sign-in",
        headers={"origin": "http://evil.example", "access-control-request-method": "POST"},
    )
    assert preflight.status_code == 403 and cors_headers(preflight) == {}
    assert "reactor serve --allow-origin http://evil.example" in preflight.text


def test_a_same_origin_request_gets_no_cors_header(server):
    answer = server.get("/app/boot.json")
    assert cors_headers(answer) == {} and "Origin" in answer.headers["vary"]


def test_without_allowed_origins_the_server_sends_no_cors_header(tmp_path):
    answer = (
        app_server_over(tmp_path, plugins=[], seed_demo=False)
        .client()
        .get("/app/boot.json", headers={"origin": EMBEDDER})
    )
    assert cors_headers(answer) == {}


@pytest.mark.parametrize(
    "origin",
    [
        "*",
        "http://127.0.0.1:5500/app",
        "127.0.0.1:5500",
        "ftp://x.example",
        "",
        "http://@shop.example",
        "http://shop.example:99999",
        "http://[::1",
    ],
)
def test_what_is_not_an_origin_is_refused_with_the_form_to_use(tmp_path, origin):
    with pytest.raises(
        ValueError, match="write scheme, host and port only, like http://127.0.0.1:5500"
    ):
        create_app(tmp_path, plugins=[], seed_demo=False, allow_origins=[origin])


def test_origins_are_written_as_browsers_send_them():
    assert check_origins(["http://Shop.Example:8080/", "http://shop.example:8080"]) == (
        "http://shop.example:8080",
    )
    with pytest.raises(ReactorError, match="is not an origin to allow") as refused:
        check_origins(["*"])
    assert isinstance(refused.value, ValueError) and refused.value.value == "*"
    with pytest.raises(ReactorError, match="is not a host name to serve"):
        check_hosts(["reactor.example.org:8000"])


def test_serve_refuses_a_bad_allow_origin_before_starting(tmp_path):
    done = run_reactor("serve", "--data", str(tmp_path), "--allow-origin", "*")
    assert done.returncode == 2 and "'*' is not an origin to allow" in done.stderr


def test_serve_allows_the_origins_of_the_option_and_the_environment(tmp_path):
    command = [
        sys.executable,
        "-m",
        "reactor",
        "serve",
        "--port",
        "0",
        "--data",
        str(tmp_path),
        "--allow-origin",
        EMBEDDER,
    ]
    env = {
        **__import__("os").environ,
        "REACTOR_ALLOW_ORIGINS": "https://a.example, https://b.example",
    }
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as server:
        try:
            url = server.stdout.readline().split()[3]
            assert (
                server.stdout.readline().strip()
                == f"pages of {EMBEDDER}, https://a.example, https://b.example may embed it"
            )
            for origin in (EMBEDDER, "https://b.example"):
                answer = httpx.get(f"{url}app/boot.json", headers={"origin": origin})
                assert answer.headers["access-control-allow-origin"] == origin
        finally:
            server.terminate()


def test_two_apps_served_by_the_same_page_handlers_each_hand_out_their_own_page(tmp_path):
    # the page's handlers are module-level: each app serves them with its own settings
    def page_of(name, origins):
        agent = {"name": name, "instructions": "Help.", "plugins": []}
        data = tmp_path / name
        return app_server_over(
            data, plugins=[], seed_demo=False, allow_origins=origins, agent_spec=agent
        ).client()

    embeddable, own = page_of("first", [EMBEDDER]), page_of("second", [])
    assert embeddable.get("/app/boot.json").json()["agent"]["name"] == "first"
    assert own.get("/app/boot.json").json()["agent"]["name"] == "second"
    assert EMBEDDER in embeddable.get("/").headers["content-security-policy"]
    assert EMBEDDER not in own.get("/").headers["content-security-policy"]
