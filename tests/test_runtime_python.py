"""The runtime's own Python the server ships compiled: PyScript's package and the stdlib modules
imported after Pyodide's boot, found in the vendored files and placed where the page imports them."""

from __future__ import annotations

import json
import logging
import zipfile
from pathlib import Path

from reactor.server.assets import SourceArchive, read_bundle
from reactor.server.runtime_python import COMPILED_STDLIB, pyscript_sources, stdlib_sources

VENDOR = Path(__file__).resolve().parents[1] / "web" / "vendor"


def core_chunk(folder: Path, text: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "core-abc123.js").write_text(text)
    return folder


def test_pyscripts_package_is_read_from_its_core_chunk_with_js_escapes_undone(tmp_path) -> None:
    sources = {"__init__.py": "from pyscript.util import x\n", "util.py": 'def x():\n\treturn "a\\\\b"\n'}
    literal = ",".join(f"{json.dumps(name)}:{json.dumps(text)}" for name, text in sources.items())
    folder = core_chunk(tmp_path / "pyscript", f'const a=1;wo(".",{{pyscript:{{{literal}}}}}),ho.push("x");')
    assert pyscript_sources(folder) == {f"/home/pyodide/pyscript/{n}": t.encode() for n, t in sources.items()}


def test_the_vendored_pyscript_yields_the_package_its_set_up_imports() -> None:
    sources = pyscript_sources(VENDOR / "pyscript")
    assert {"/home/pyodide/pyscript/__init__.py", "/home/pyodide/pyscript/display.py"} <= set(sources)
    assert b"from pyscript.display import" in sources["/home/pyodide/pyscript/__init__.py"]


def test_a_pyscript_built_another_way_gives_nothing_and_says_so(tmp_path, caplog) -> None:
    for index, text in enumerate(['no package here', 'wo(".",{pyscript:{"a.py":"unterminated', 'x{pyscript:{"a.py":"\\x41"}}']):
        folder = core_chunk(tmp_path / f"p{index}", text)
        with caplog.at_level(logging.WARNING, logger="reactor.server"):
            assert pyscript_sources(folder) == {}
        assert "will compile it itself" in caplog.text
        caplog.clear()


def test_stdlib_packages_are_read_whole_from_the_zip_and_modules_alone(tmp_path) -> None:
    stdlib = tmp_path / "python_stdlib.zip"
    with zipfile.ZipFile(stdlib, "w") as archive:
        for name in ("html/__init__.py", "html/entities.py", "html/README.txt", "htmlx/a.py", "json/__init__.py",
                     "difflib.py", "difflibx.py"):
            archive.writestr(name, f"# {name}\n")
    assert set(stdlib_sources(stdlib, ("html", "difflib"))) == {
        f"{COMPILED_STDLIB}/html/__init__.py", f"{COMPILED_STDLIB}/html/entities.py", f"{COMPILED_STDLIB}/difflib.py"}


def test_the_bundle_places_absolute_files_and_pycs_only_where_asked(tmp_path) -> None:
    package = tmp_path / "mine"
    package.mkdir()
    (package / "__init__.py").write_text("X = 1\n")
    archive = SourceArchive(
        {"mine": package}, set(), bytecode=lambda sources: {name: b"pyc:" + name.encode() for name in sources},
        cache_tag="tag", extra={"/lib/extra/e.py": b"E = 1\n"}, compiled_only={"/home/p/w.py": b"W = 1\n"},
        path=["/lib/extra"],
    )
    files = read_bundle(archive.data)
    assert files == {
        "mine/__init__.py": b"X = 1\n", "mine/__pycache__/__init__.tag.pyc": b"pyc:mine/__init__.py",
        "/lib/extra/e.py": b"E = 1\n", "/lib/extra/__pycache__/e.tag.pyc": b"pyc:/lib/extra/e.py",
        "/home/p/__pycache__/w.tag.pyc": b"pyc:/home/p/w.py",
    }
    assert json.loads(archive.data.partition(b"\n")[0])["path"] == ["/lib/extra"]
