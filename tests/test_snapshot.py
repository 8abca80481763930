"""Pyodide's memory snapshot, made by the server under Node: once per runtime, whole or not at
all."""

from __future__ import annotations

import gzip
import logging
import os
from pathlib import Path

import pytest

from reactor.server.assets import SourceArchive
from reactor.server.runtime_python import STDLIB_AFTER_BOOT
from reactor.server.snapshot import KEPT, PAGE, memory_of, memory_snapshot, without_zeros

PYODIDE = Path(__file__).resolve().parents[1] / "web" / "vendor" / "pyodide"

needs_pyodide = pytest.mark.skipif(
    not (PYODIDE / "pyodide.mjs").is_file(), reason="run web/vendor.py first"
)


@needs_pyodide
def test_a_snapshot_is_made_once_and_served_with_its_gzip_and_zstd_twins(tmp_path) -> None:
    import zstandard

    # Snapshots made before for other runtimes or bundles, the oldest first: only the latest are
    # kept.
    made_before = [f"snapshot-{n:016x}.bin" for n in range(KEPT)]
    for when, made in enumerate(made_before, start=1_000_000):
        for suffix in ("", ".gz", ".zst"):
            (tmp_path / f"{made}{suffix}").write_bytes(b"another runtime's")
            os.utime(tmp_path / f"{made}{suffix}", (when, when))
    name = memory_snapshot(PYODIDE, tmp_path, "stamp-1", STDLIB_AFTER_BOOT)
    assert name is not None and name.startswith("snapshot-")
    data = (tmp_path / name).read_bytes()
    memory = memory_of(data)
    assert len(memory) > 1_000_000, "a memory snapshot holds Python's whole heap"
    assert len(data) < len(memory) * 0.8, "its zeros are not in the file"
    assert gzip.decompress((tmp_path / f"{name}.gz").read_bytes()) == data
    assert (
        zstandard.ZstdDecompressor()
        .decompressobj()
        .decompress((tmp_path / f"{name}.zst").read_bytes())
        == data
    )
    kept = [name, *made_before[1:]]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{k}{s}" for k in kept for s in ("", ".gz", ".zst")
    ), "no work files, the oldest gone"
    # Made before: found without Node.
    assert (
        memory_snapshot(PYODIDE, tmp_path, "stamp-1", STDLIB_AFTER_BOOT, node="no-such-node")
        == name
    )
    # Another runtime, module list or bundle is another snapshot.
    assert (
        memory_snapshot(PYODIDE, tmp_path, "stamp-2", STDLIB_AFTER_BOOT, node="no-such-node")
        is None
    )
    assert (
        memory_snapshot(
            PYODIDE, tmp_path, "stamp-1", STDLIB_AFTER_BOOT, bundle=b"x", node="no-such-node"
        )
        is None
    )


@needs_pyodide
def test_the_pages_bundle_is_installed_and_its_modules_imported_but_none_that_keeps_a_js_object(
    tmp_path, caplog
) -> None:
    package = tmp_path / "mine"
    package.mkdir()
    # looked up again by name
    (package / "__init__.py").write_text("import statistics\nimport js\nLOG = js.console.log\n")
    (package / "page.py").write_text("import js\nMADE = js.Object.new()\n")
    bundle = SourceArchive({"mine": package}, set()).data
    site = "/lib/python3.14/site-packages"
    assert (
        memory_snapshot(PYODIDE, tmp_path / "a", "stamp", ("mine",), bundle=bundle, site=site)
        is not None
    )
    with caplog.at_level(logging.WARNING, logger="reactor.server"):
        assert (
            memory_snapshot(
                PYODIDE, tmp_path / "b", "stamp", ("mine.page",), bundle=bundle, site=site
            )
            is None
        )
    assert "serialize" in caplog.text


def test_without_node_there_is_no_snapshot_and_the_log_says_why(tmp_path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="reactor.server"):
        assert (
            memory_snapshot(
                PYODIDE, tmp_path / "snapshots", "stamp", ("difflib",), node="no-such-node"
            )
            is None
        )
    assert "Node is not on PATH" in caplog.text
    assert not (tmp_path / "snapshots").exists()


@needs_pyodide
def test_a_failing_maker_leaves_nothing_half_written(tmp_path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="reactor.server"):
        assert memory_snapshot(PYODIDE, tmp_path, "stamp", ("no_such_module_here",)) is None
    assert "memory snapshot failed" in caplog.text and "no_such_module_here" in caplog.text
    assert list(tmp_path.iterdir()) == []


def test_a_snapshot_file_holds_its_memory_without_its_zeros() -> None:
    zeros, some = bytes(PAGE), bytes(range(256)) * (PAGE // 256)
    for memory in [
        b"",
        zeros * 3,
        some + zeros * 2 + some + some[:100],  # the last page is short
        zeros + some[:1] + bytes(PAGE - 1) + zeros,  # one byte keeps a page
        some * 3,
    ]:
        file = without_zeros(memory)
        assert memory_of(file) == memory
        assert len(file) < len(memory.rstrip(b"\0")) + 200 + PAGE * memory.count(zeros)

    file = without_zeros(some + zeros + some)
    index = file[: file.index(b"\n")]
    assert index == b'{"size":%d,"runs":[[0,%d],[%d,%d]]}' % (3 * PAGE, PAGE, 2 * PAGE, PAGE)
    for broken, says in [
        (b"not json\n", "not a memory snapshot's file"),
        (b"[1]\n", "not a memory snapshot's file"),
        (b'{"size":10,"runs":[[8,4]]}\nabcd', "outside the memory"),
        (b'{"size":10,"runs":[[0,-4]]}\n', "outside the memory"),
        (b'{"size":10,"runs":[[0,4]]}\nab', "outside the memory"),
        (b'{"size":10,"runs":[[0,2]]}\nabcd', "bytes beyond its runs"),
        (b'{"size":1e30,"runs":[]}\n', "a memory of"),
    ]:
        with pytest.raises(ValueError, match=says):
            memory_of(broken)
