"""The page's Python precompiled by Pyodide itself: used when it matches its source, never when
not."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import pytest

from reactor.server.runtime.bytecode import compiled

PYODIDE = Path(__file__).resolve().parents[1] / "web" / "vendor" / "pyodide"

# In Pyodide under Node: install m.py and a pyc, import m, and say whether its source was compiled.
IMPORT_IN_PYODIDE = """
import { loadPyodide } from "%(pyodide)s/pyodide.mjs";
const [source, pyc] = JSON.parse(process.argv[1]);
const pyodide = await loadPyodide({ indexURL: "%(pyodide)s/" });
pyodide.FS.mkdirTree("/work/__pycache__");
pyodide.FS.writeFile("/work/m.py", source);
pyodide.FS.writeFile(
  "/work/__pycache__/m.cpython-314.pyc", Uint8Array.from(atob(pyc), (c) => c.charCodeAt(0)));
process.stdout.write(pyodide.runPython(`
import importlib._bootstrap_external as external, json, sys
sys.path.insert(0, "/work")
compiled = []
original = external.SourceLoader.source_to_code
external.SourceLoader.source_to_code = lambda self, *a, **k: (
    compiled.append(1) or original(self, *a, **k)
)
import m
json.dumps({"x": m.x, "compiled_from_source": bool(compiled)})
`));
"""


def import_in_pyodide(source: bytes, pyc: bytes) -> dict:
    import base64

    script = IMPORT_IN_PYODIDE % {"pyodide": PYODIDE.as_posix()}
    answer = subprocess.run(
        [
            "node",
            "--input-type=module",
            "-e",
            script,
            json.dumps([source.decode(), base64.b64encode(pyc).decode()]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(answer.stdout)


@pytest.fixture(scope="module")
def pycs(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    cache = tmp_path_factory.mktemp("bytecode")
    return cache, compiled(
        {"m.py": b"x = 1\n", "broken.py": b"def (:\n"}, pyodide=PYODIDE, cache=cache
    )


def test_each_source_gets_a_checked_hash_pyc_and_a_broken_one_none(pycs) -> None:
    cache, found = pycs
    assert set(found) == {"m.py"}
    assert int.from_bytes(found["m.py"][4:8], "little") == 0b11, "hash-based and checked"
    assert len(list(cache.glob("*.pyc"))) == 1


def test_the_cache_answers_without_compiling_again(pycs) -> None:
    cache, found = pycs
    assert (
        compiled({"m.py": b"x = 1\n"}, pyodide=PYODIDE, cache=cache, node="no-such-node") == found
    )


def test_pyodide_imports_the_pyc_instead_of_compiling_the_source(pycs) -> None:
    assert import_in_pyodide(b"x = 1\n", pycs[1]["m.py"]) == {"x": 1, "compiled_from_source": False}


def test_a_pyc_that_no_longer_matches_its_source_is_ignored(pycs) -> None:
    assert import_in_pyodide(b"x = 2\n", pycs[1]["m.py"]) == {"x": 2, "compiled_from_source": True}


def test_without_node_the_page_gets_sources_only_and_the_log_says_why(tmp_path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="reactor.server"):
        assert (
            compiled({"m.py": b"x = 1\n"}, pyodide=PYODIDE, cache=tmp_path, node="no-such-node")
            == {}
        )
    assert "Node is not on PATH" in caplog.text
    assert not list(tmp_path.iterdir())
