import json
import re
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from conftest import bearer, start_server, stop_server

import reactor.commands
from reactor import define_agent_tools
from reactor.plugin_spec import PluginSpec
from reactor.server.runtime.assets import read_bundle
from reactor.server.runtime.page import WEB, WORKER_SCRIPTS

BUNDLE = define_agent_tools(
    id="notes",
    name="Notes",
    plugin="notes",
    commands=[{"name": "notes_list", "command": "notes.list", "description": "List the notes."}],
)


def notes_plugin(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent-tools.json").write_text(json.dumps(BUNDLE))
    return PluginSpec(
        name="notes", description="Notes", folder=folder, agent_tools="agent-tools.json"
    )


@contextmanager
def serving(data, username="ada", database=""):
    """A client of a server with the notes plugin, signed in as `username` (ada is an operator)."""
    live = start_server(
        data, plugins=[notes_plugin(data / "notes")], seed_demo=True, database=database
    )
    try:
        with httpx.Client(
            base_url=live.url, headers=bearer(live, username) if username else {}
        ) as client:
            yield client
    finally:
        stop_server(live)


@pytest.fixture
def client(tmp_path, database_target):
    with serving(tmp_path, database=database_target) as client:
        yield client


def test_the_agent_tools_listing_has_the_seed_shape(client):
    assert client.get("/plugins/agent-tools").json() == [BUNDLE]


def test_disabling_a_plugin_removes_its_tools_and_survives_a_restart(
    client, tmp_path, database_target
):
    answer = client.patch("/plugins/notes", json={"enabled": False})
    assert answer.json() == {"name": "notes", "description": "Notes", "enabled": False}
    assert client.get("/plugins/agent-tools").json() == []
    with serving(tmp_path, database=database_target) as again:
        assert again.get("/plugins").json()[0]["enabled"] is False
        again.patch("/plugins/notes", json={"enabled": True})
        assert again.get("/plugins/agent-tools").json() == [BUNDLE]


@pytest.mark.parametrize(
    "body, status, words",
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[true]", 400, "must be a JSON object"),
        (json.dumps({"enabled": "yes"}).encode(), 422, '{"enabled": true}'),
        (json.dumps({"enabled": True, "extra": 1}).encode(), 422, '{"enabled": true}'),
        (b'{"enabled": true, "pad": "' + b"x" * 5000 + b'"}', 413, "larger than 1024 bytes"),
    ],
)
def test_bad_enable_requests_are_refused_and_change_nothing(client, body, status, words):
    answer = client.patch(
        "/plugins/notes", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == status
    assert words in answer.json()["error"]
    assert client.get("/plugins").json()[0]["enabled"] is True


@pytest.mark.parametrize("username, status", [(None, 401), ("bob", 403)])
def test_only_operators_enable_or_disable_plugins(tmp_path, username, status):
    with serving(tmp_path, username) as client:
        answer = client.patch("/plugins/notes", json={"enabled": False})
        assert answer.status_code == status and "Only operators" in answer.json()["error"]
        assert client.get("/plugins/agent-tools").json() == [BUNDLE]


def test_enabling_an_unknown_plugin_is_a_404_naming_it(client):
    answer = client.patch("/plugins/cms", json={"enabled": True})
    assert answer.status_code == 404 and "'cms'" in answer.json()["error"]


def test_the_page_is_served_with_revalidation_and_answers_304_when_unchanged(client):
    first = client.get("/")
    assert first.headers["content-type"].startswith("text/html")
    assert first.headers["cache-control"] == "no-cache"
    again = client.get("/", headers={"if-none-match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


# Accept-Encoding headers, and the coding each one's answers come in (None: the bytes as they are).
ACCEPTED_CODINGS = [
    ("gzip, deflate, br, zstd", "zstd"),  # what Chromium sends
    ("zstd;q=0, gzip", "gzip"),  # a weight of 0 refuses a coding
    ("gzip;q=0", None),
    ("*", "zstd"),
    ("*, zstd;q=0", "gzip"),
    ("GZIP;Q=0.5", "gzip"),
    ("x-gzip", "gzip"),
    ("zstd;q=high, gzip;q=1.5, identity", None),  # weights that are no weight refuse
    ("zstdx, agzip", None),  # no coding is a part of another's name
    ("", None),
    (",;=;q," * 2000, None),
]


def test_a_body_goes_out_in_a_coding_the_request_accepts_or_as_it_is(client):
    boot = client.get("/app/boot.json").json()
    wasm = boot["runtime"]["interpreter"].replace("pyodide.mjs", "pyodide.asm.wasm")
    urls = (boot["runtime"]["snapshot"], wasm, *boot["python"]["bundles"], "/web/reactor.js")
    for accepted, coding in ACCEPTED_CODINGS:
        for url in urls:
            answer = client.get(url, headers={"accept-encoding": accepted})
            assert answer.status_code == 200, (accepted[:40], url)
            assert answer.headers.get("content-encoding") == coding, (accepted[:40], url)


def test_the_runtime_is_served_compressed_immutable_and_with_wasm_mime(client):
    boot = client.get("/app/boot.json").json()
    assert boot["runtime"]["ready"], boot["runtime"]["error"]
    interpreter = boot["runtime"]["interpreter"]
    wasm = interpreter.replace("pyodide.mjs", "pyodide.asm.wasm")
    answer = client.get(wasm, headers={"accept-encoding": "gzip"})
    assert answer.headers["content-type"] == "application/wasm"
    assert answer.headers["content-encoding"] == "gzip"
    assert "immutable" in answer.headers["cache-control"]
    assert answer.content[:4] == b"\0asm"  # httpx decoded the gzip body
    assert client.get(interpreter).headers["content-type"].startswith("text/javascript")
    snapshot = client.get(boot["runtime"]["snapshot"], headers={"accept-encoding": "gzip"})
    assert snapshot.status_code == 200 and snapshot.headers["content-encoding"] == "gzip"
    assert "immutable" in snapshot.headers["cache-control"] and len(snapshot.content) > 1_000_000


def test_browsers_that_take_zstd_get_the_smaller_twin_and_the_same_bytes(client):
    boot = client.get("/app/boot.json").json()
    wasm = boot["runtime"]["interpreter"].replace("pyodide.mjs", "pyodide.asm.wasm")
    for url in (boot["runtime"]["snapshot"], wasm, *boot["python"]["bundles"]):
        plain = client.get(url, headers={"accept-encoding": "identity"})
        gzipped = client.get(url, headers={"accept-encoding": "gzip"})
        # what Chromium sends
        squeezed = client.get(url, headers={"accept-encoding": "gzip, deflate, br, zstd"})
        assert (
            squeezed.headers["content-encoding"] == "zstd"
            and squeezed.headers["vary"] == "Accept-Encoding"
        )
        assert int(squeezed.headers["content-length"]) < int(gzipped.headers["content-length"])
        # httpx decoded the zstd body (with zstandard installed)
        assert squeezed.content == plain.content


def test_the_page_starts_its_worker_from_its_head_with_the_served_runtime(client):
    page = client.get("/")
    runtime = client.get("/app/boot.json").json()["runtime"]
    head = page.text.split("</head>")[0]
    assert runtime["snapshot"].startswith(
        runtime["interpreter"].split("/pyodide/")[0] + "/snapshot/"
    )
    start = head.index("performance.mark('reactor:pyodide-start')")
    assert start < head.index("/web/reactor.js") and start < head.index("/web/reactor.css")
    for url in (runtime["interpreter"], runtime["snapshot"], *WORKER_SCRIPTS):
        assert json.dumps(url) in head, url
        assert client.get(url).status_code == 200, url
    assert "reactor:early-boot" not in page.text
    # the page's head starts the worker as web/early-worker.js would, from the same scripts
    early_worker = (WEB / "early-worker.js").read_text()
    named = re.search(r"const WORKER_SCRIPTS = \[(.*?)\]", early_worker)[1]
    assert [f"/web/{name}" for name in re.findall(r'"\./([^"]+)"', named)] == list(WORKER_SCRIPTS)
    again = client.get("/", headers={"if-none-match": page.headers["etag"]})
    assert again.status_code == 304 and again.headers["cache-control"] == "no-cache"


def test_without_a_vendored_runtime_the_page_has_no_early_start(tmp_path, monkeypatch):
    from reactor.server.runtime import vendored as runtime

    monkeypatch.setattr(runtime, "VENDOR", tmp_path / "missing")
    with serving(tmp_path) as bare:
        page = bare.get("/").text
    assert "startPyodide" not in page and "/web/reactor.js" in page


def test_an_old_runtime_stamp_is_not_served(client):
    assert client.get("/vendor/0000/pyodide/pyodide.mjs").status_code == 404


@pytest.mark.parametrize(
    "path", ["/web/../pyproject.toml", "/web/%2e%2e/pyproject.toml", "/web/nothing.js"]
)
def test_files_outside_the_web_folder_are_never_served(client, path):
    assert client.get(path).status_code == 404


def test_the_python_archive_holds_the_page_code_and_no_server_code(client):
    boot = client.get("/app/boot.json").json()
    [bundle_url] = boot["python"]["bundles"]
    answer = client.get(bundle_url, headers={"accept-encoding": "gzip"})
    assert (
        "immutable" in answer.headers["cache-control"]
        and answer.headers["content-encoding"] == "gzip"
    )
    files = read_bundle(answer.content)  # httpx undid the gzip
    assert "reactor/commands.py" in files and "reactor/browser/__init__.py" in files
    assert files["reactor/commands.py"] == Path(reactor.commands.__file__).read_bytes()
    server_code = {"server", "server.py", "backend"}  # reactor/server/, plugins' server halves
    assert not [
        n for n in files if server_code & set(n.split("/")) or n.endswith(("cli.py", "__main__.py"))
    ]
    assert client.get("/app/python-0000.bundle").status_code == 404


def test_our_own_scripts_are_compressed_with_a_javascript_mime(client):
    answer = client.get("/web/reactor.js", headers={"accept-encoding": "gzip"})
    assert answer.headers.get("content-encoding") == "gzip"
    assert answer.headers["content-type"].startswith("text/javascript")
    assert "window.reactor" in answer.text
    plain = client.get("/web/reactor.js", headers={"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.content == answer.content
    squeezed = client.get("/web/reactor.js", headers={"accept-encoding": "gzip, deflate, br, zstd"})
    assert squeezed.headers["content-encoding"] == "zstd"
    assert int(squeezed.headers["content-length"]) < int(answer.headers["content-length"])
    assert squeezed.content == plain.content  # httpx decoded the zstd body


def test_a_file_edited_on_disk_is_served_as_it_is_now(tmp_path):
    """Small files are answered from memory: an edit (a new size or modification time) is seen."""
    import os

    from starlette.applications import Starlette
    from starlette.routing import Route

    from reactor.server.loopback import LoopbackServer
    from reactor.server.runtime.assets import REVALIDATE, serve_file

    page = tmp_path / "view.js"
    app = Starlette(
        routes=[Route("/view.js", lambda r: serve_file(r, tmp_path, "view.js", cache=REVALIDATE))]
    )
    with LoopbackServer(app) as url, httpx.Client(base_url=url) as client:
        for text in ("export const a = 1;\n" * 100, "export const a = 2;\n" * 100):
            page.write_text(text)
            os.utime(page, ns=(1, len(text) + int(text[17])))  # same size: only the time differs
            for accepted in ("identity", "gzip", "gzip, zstd"):
                answer = client.get("/view.js", headers={"accept-encoding": accepted})
                assert answer.text == text, accepted


def test_a_large_files_twin_is_answered_from_memory_and_an_edit_is_seen(tmp_path):
    """The runtime's large files go out whole from memory as their precompressed twin; a twin
    written again (a new size or modification time) is what goes out next."""
    import gzip
    import os

    from starlette.applications import Starlette
    from starlette.routing import Route

    from reactor.server.loopback import LoopbackServer
    from reactor.server.runtime.assets import IMMUTABLE, SMALL_FILE, serve_file

    file, twin = tmp_path / "memory.bin", tmp_path / "memory.bin.gz"
    app = Starlette(
        routes=[
            Route("/memory.bin", lambda r: serve_file(r, tmp_path, "memory.bin", cache=IMMUTABLE))
        ]
    )
    with LoopbackServer(app) as url, httpx.Client(base_url=url) as client:
        for n in (1, 2):
            data = os.urandom(SMALL_FILE + 1000 * n)
            file.write_bytes(data)
            twin.write_bytes(gzip.compress(data, 1))
            answer = client.get("/memory.bin", headers={"accept-encoding": "gzip"})
            assert answer.headers["content-encoding"] == "gzip" and answer.content == data
            assert (
                client.get("/memory.bin", headers={"accept-encoding": "identity"}).content == data
            )


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        # records and the plugin switch share the path
        ("OPTIONS", "/plugins/x", "DELETE, GET, HEAD, PATCH, PUT"),
        ("PUT", "/openapi.json", "GET, HEAD"),
        ("DELETE", "/", "GET, HEAD"),
    ],
)
def test_a_method_not_allowed_names_every_method_the_path_takes(client, method, path, allowed):
    answer = client.request(method, path, json={}) if method != "OPTIONS" else client.options(path)
    assert answer.status_code == 405 and answer.headers["allow"] == allowed
    assert answer.json()["error"].endswith(f"use {allowed}.")
