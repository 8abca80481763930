import json
import signal
import sqlite3
import subprocess
import sys
import urllib.request

import pytest
from conftest import app_server_over, bearer, run_reactor

from reactor_plugins.decks import DECKS_AGENT_TOOLS


@pytest.mark.parametrize(
    "format, name_of",
    [
        ("openai", lambda t: t["function"]["name"]),
        ("responses", lambda t: t["name"]),
        ("anthropic", lambda t: t["name"]),
    ],
)
def test_tools_prints_the_decks_tools_in_each_provider_format(format, name_of):
    done = run_reactor("tools", "--format", format, "--plugin", "decks")
    assert done.returncode == 0, done.stderr
    assert [name_of(t) for t in json.loads(done.stdout)] == DECKS_AGENT_TOOLS["toolset"]


def test_tools_in_mcp_format_is_a_valid_tools_list_result():
    import mcp_types

    done = run_reactor("tools", "--format", "mcp")
    listed = mcp_types.ListToolsResult.model_validate(json.loads(done.stdout))
    names = {tool.name for tool in listed.tools}
    assert "decks_open" in names and "cms_publish_site_page" in names


def test_tools_refuses_an_unknown_plugin_naming_those_there_are():
    done = run_reactor("tools", "--format", "openai", "--plugin", "weather")
    assert (
        done.returncode == 2
        and "no plugin 'weather' provides tools; plugins: cms, decks." in done.stderr
    )


def test_serve_on_port_zero_prints_the_address_it_serves(tmp_path):
    command = [sys.executable, "-m", "reactor", "serve", "--port", "0", "--data", str(tmp_path)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as server:
        try:
            line = server.stdout.readline()
            assert line.startswith("reactor is serving http://127.0.0.1:")
            with urllib.request.urlopen(line.split()[3] + "plugins") as answer:
                assert {p["name"] for p in json.load(answer)} >= {"decks", "cms"}
            assert (tmp_path / "reactor.sqlite3").exists()
        finally:
            server.terminate()


def test_ctrl_c_stops_serve_with_one_line_not_a_traceback(tmp_path):
    command = [sys.executable, "-m", "reactor", "serve", "--port", "0", "--data", str(tmp_path)]
    # As from a terminal: SIGINT at its default (a shell's background job would ignore it).
    reset = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=reset
    ) as server:
        line = server.stdout.readline()
        assert line.startswith("reactor is serving http://127.0.0.1:")
        with urllib.request.urlopen(line.split()[3] + "plugins") as answer:
            # serving: the Ctrl-C reaches uvicorn, which re-raises it after shutting down
            assert answer.status == 200
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=30)
    assert err == "reactor stopped.\n" and out == "" and server.returncode == 130


def test_serve_on_a_taken_port_says_so_and_exits(tmp_path):
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        answer = run_reactor("serve", "--port", str(port), "--data", str(tmp_path))
    assert answer.returncode == 2
    assert (
        f"reactor serve: cannot listen on 127.0.0.1:{port}: Address already in use."
        in answer.stderr
    )


def test_serve_refuses_a_public_address_while_demo_passwords_remain_then_passwd_sets_them(tmp_path):
    refused = run_reactor("serve", "--host", "0.0.0.0", "--port", "0", "--data", str(tmp_path))
    assert refused.returncode == 2
    assert (
        "ada, bob, eve still have the demo passwords" in refused.stderr
        and "reactor passwd NAME" in refused.stderr
    )
    for name in ("ada", "bob", "eve"):
        done = run_reactor(
            "passwd", name, "--data", str(tmp_path), input=f"a-new-{name}-password\n"
        )
        assert done.returncode == 0 and f"{name}'s password is set" in done.stdout
    short = run_reactor("passwd", "ada", "--data", str(tmp_path), input="short\n")
    assert short.returncode == 1 and "at least 8 characters" in short.stderr
    command = [
        sys.executable,
        "-m",
        "reactor",
        "serve",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--data",
        str(tmp_path),
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as server:
        try:
            assert server.stdout.readline().startswith("reactor is serving http://0.0.0.0:")
        finally:
            server.terminate()


def test_passwd_creates_a_user_in_the_groups_named(tmp_path):
    done = run_reactor(
        "passwd", "olga", "--group", "operators", "--data", str(tmp_path), input="olga-password-1\n"
    )
    assert done.returncode == 0 and "created olga in operators" in done.stdout
    from reactor.server.auth.sessions import Auth
    from reactor.server.database import Database

    auth = Auth(Database(tmp_path / "reactor.sqlite3"), seed=False)
    assert auth.user_for_token(auth.sign_in("olga", "olga-password-1")).groups == ("operators",)


def test_an_empty_password_or_an_unknown_user_is_refused_as_a_reactor_error(tmp_path):
    from reactor import ReactorError
    from reactor.server.auth.sessions import Auth
    from reactor.server.database import Database

    auth = Auth(Database(tmp_path / "reactor.sqlite3"), seed=False)
    with pytest.raises(ReactorError, match="There is no user 'nobody'"):
        auth.set_password("nobody", "a-password-1")
    with pytest.raises(ReactorError, match="A password cannot be empty"):
        auth.set_password("nobody", "")
    with pytest.raises(ReactorError, match="A user needs a name and a password"):
        auth.create_user("olga", "")


def test_a_password_stored_under_an_unknown_scheme_is_a_database_error(tmp_path):
    from reactor import ReactorError
    from reactor.server.auth.sessions import Auth
    from reactor.server.database import Database

    database = Database(tmp_path / "reactor.sqlite3")
    auth = Auth(database, seed=False)
    auth.create_user("olga", "olga-password-1")
    with database.transaction() as db:
        db.execute("UPDATE users SET hash_scheme = ? WHERE username = ?", ("md5", "olga"))
    with pytest.raises(ReactorError, match="unknown hash scheme 'md5'"):
        auth.sign_in("olga", "olga-password-1")


def test_serve_refuses_a_host_name_that_is_not_one(tmp_path):
    done = run_reactor("serve", "--allow-host", "http://x.example/", "--data", str(tmp_path))
    assert done.returncode == 2 and "is not a host name to serve" in done.stderr


def test_serve_with_threads_keep_days_deletes_the_conversations_untouched_that_long(tmp_path):
    server = app_server_over(tmp_path, seed_demo=True)
    ada = bearer(server, "ada")
    turn = {"messages": [{"role": "user", "content": "hi"}], "items": [], "tab": "t"}
    with server.client() as client:
        old = client.post("/api/threads", json=turn, headers=ada).json()
        recent = client.post("/api/threads", json=turn, headers=ada).json()
    database = server.app.state.context.database
    with database.transaction() as db:
        db.execute("UPDATE threads SET updated = updated - 31 * 86400 WHERE id = ?", (old["id"],))
    database.close()
    command = [sys.executable, "-m", "reactor", "serve", "--port", "0", "--data", str(tmp_path),
               "--threads-keep-days", "30"]  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as serving:
        try:
            assert serving.stdout.readline().startswith("reactor is serving http://127.0.0.1:")
            assert serving.stdout.readline() == (
                "chat conversations untouched for 30 days are deleted\n"
            )
        finally:
            serving.terminate()
    with sqlite3.connect(tmp_path / "reactor.sqlite3") as db:
        left = [row[0] for row in db.execute("SELECT id FROM threads")]
    assert left == [recent["id"]]
    refused = run_reactor("serve", "--threads-keep-days", "soon", "--data", str(tmp_path))
    assert refused.returncode == 2 and (
        "'soon' is not a number of days: give how many days an untouched conversation is "
        "kept, such as 30." in refused.stderr
    )
