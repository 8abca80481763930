"""The stdlib modules the page imports after Pyodide's boot, shipped compiled where it imports
them."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from reactor.server.runtime.assets import KEPT_BUNDLES, SourceArchive, read_bundle
from reactor.server.runtime.stdlib import COMPILED_STDLIB, stdlib_sources

VENDOR = Path(__file__).resolve().parents[1] / "web" / "vendor"


def test_stdlib_packages_are_read_whole_from_the_zip_and_modules_alone(tmp_path) -> None:
    stdlib = tmp_path / "python_stdlib.zip"
    with zipfile.ZipFile(stdlib, "w") as archive:
        for name in (
            "html/__init__.py",
            "html/entities.py",
            "html/README.txt",
            "htmlx/a.py",
            "json/__init__.py",
            "difflib.py",
            "difflibx.py",
        ):
            archive.writestr(name, f"# {name}\n")
    assert set(stdlib_sources(stdlib, ("html", "difflib"))) == {
        f"{COMPILED_STDLIB}/html/__init__.py",
        f"{COMPILED_STDLIB}/html/entities.py",
        f"{COMPILED_STDLIB}/difflib.py",
    }


def test_the_bundle_places_absolute_files_and_pycs_only_where_asked(tmp_path) -> None:
    package = tmp_path / "mine"
    package.mkdir()
    (package / "__init__.py").write_text("X = 1\n")
    archive = SourceArchive(
        {"mine": package},
        set(),
        bytecode=lambda sources: {name: b"pyc:" + name.encode() for name in sources},
        cache_tag="tag",
        extra={"/lib/extra/e.py": b"E = 1\n"},
        path=["/lib/extra"],
    )
    files = read_bundle(archive.data)
    assert files == {
        "mine/__init__.py": b"X = 1\n",
        "mine/__pycache__/__init__.tag.pyc": b"pyc:mine/__init__.py",
        "/lib/extra/e.py": b"E = 1\n",
        "/lib/extra/__pycache__/e.tag.pyc": b"pyc:/lib/extra/e.py",
    }
    assert json.loads(archive.data.partition(b"\n")[0])["path"] == ["/lib/extra"]


def test_a_bundles_zstd_twin_is_made_once_per_bundle_and_kept(tmp_path):
    """Level 19 takes most of a second: a server started again with the same Python reads it."""
    import zstandard

    package, cache = tmp_path / "mine", tmp_path / "cache"
    package.mkdir()
    (package / "__init__.py").write_text("WORDS = 'a page plugin'\n" * 200)
    first = SourceArchive({"mine": package}, set(), cache=cache)
    kept = cache / f"python-{first.digest}.zst"
    assert zstandard.ZstdDecompressor().decompress(kept.read_bytes()) == first.data
    kept.write_bytes(b"kept")  # what the next server with the same Python serves
    assert SourceArchive({"mine": package}, set(), cache=cache).squeezed["zstd"] == b"kept"
    for n in range(KEPT_BUNDLES + 2):  # other bundles: the least recently used go
        (package / "__init__.py").write_text(f"N = {n}\n")
        SourceArchive({"mine": package}, set(), cache=cache)
    assert len(list(cache.glob("python-*.zst"))) == KEPT_BUNDLES and not kept.exists()
