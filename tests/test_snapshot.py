"""Pyodide's memory snapshot, made by the server under Node: once per runtime, whole or not at all."""

from __future__ import annotations

import gzip
import logging
from pathlib import Path

import pytest

from reactor.server.runtime_python import STDLIB_AFTER_BOOT
from reactor.server.snapshot import memory_snapshot

PYODIDE = Path(__file__).resolve().parents[1] / "web" / "vendor" / "pyodide"

needs_pyodide = pytest.mark.skipif(not (PYODIDE / "pyodide.mjs").is_file(), reason="run web/vendor.py first")


@needs_pyodide
def test_a_snapshot_is_made_once_and_served_with_its_gzip_and_zstd_twins(tmp_path) -> None:
    import zstandard

    stale = [tmp_path / "snapshot-0123456789abcdef.bin", tmp_path / "snapshot-0123456789abcdef.bin.gz"]
    for path in stale:
        path.write_bytes(b"an older runtime's")
    name = memory_snapshot(PYODIDE, tmp_path, "stamp-1", STDLIB_AFTER_BOOT)
    assert name is not None and name.startswith("snapshot-")
    data = (tmp_path / name).read_bytes()
    assert len(data) > 1_000_000, "a memory snapshot holds Python's whole heap"
    assert gzip.decompress((tmp_path / f"{name}.gz").read_bytes()) == data
    assert zstandard.ZstdDecompressor().decompressobj().decompress((tmp_path / f"{name}.zst").read_bytes()) == data
    assert sorted(p.name for p in tmp_path.iterdir()) == [name, f"{name}.gz", f"{name}.zst"], "no work files, nothing stale"
    # Made before: found without Node.
    assert memory_snapshot(PYODIDE, tmp_path, "stamp-1", STDLIB_AFTER_BOOT, node="no-such-node") == name
    # Another runtime or module list is another snapshot.
    assert memory_snapshot(PYODIDE, tmp_path, "stamp-2", STDLIB_AFTER_BOOT, node="no-such-node") is None


def test_without_node_there_is_no_snapshot_and_the_log_says_why(tmp_path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="reactor.server"):
        assert memory_snapshot(PYODIDE, tmp_path / "snapshots", "stamp", ("difflib",), node="no-such-node") is None
    assert "Node is not on PATH" in caplog.text
    assert not (tmp_path / "snapshots").exists()


@needs_pyodide
def test_a_failing_maker_leaves_nothing_half_written(tmp_path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="reactor.server"):
        assert memory_snapshot(PYODIDE, tmp_path, "stamp", ("no_such_module_here",)) is None
    assert "memory snapshot failed" in caplog.text and "no_such_module_here" in caplog.text
    assert list(tmp_path.iterdir()) == []
