"""Pyodide's memory snapshot, made by the server under Node: once per runtime, whole or not at
all."""

from __future__ import annotations

import gzip
import logging
import os
from pathlib import Path

import pytest

from reactor.server.runtime.assets import SourceArchive
from reactor.server.runtime.snapshot import (
    KEPT,
    PAGE,
    memory_of,
    memory_snapshot,
    module_memory,
    pyodide_base,
    without_zeros,
)
from reactor.server.runtime.stdlib import STDLIB_AFTER_BOOT

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
    base = pyodide_base(PYODIDE)
    memory = memory_of(data, base)
    assert len(memory) > 1_000_000, "a memory snapshot holds Python's whole heap"
    assert len(data) < len(memory) * 0.8, "its zeros are not in the file"
    at = int.from_bytes(memory[4:8], "little")
    assert memory[at + 1024 : at + 1024 + 4096] == base[1024 : 1024 + 4096], (
        "the module's first data segment, where its memory starts"
    )
    assert data.count(base[1024 : 1024 + 4096]) == 0, "what pyodide.asm.wasm brings is not sent"
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


def test_a_snapshot_file_sends_the_modules_memory_as_its_difference_from_it() -> None:
    header = b"\0snp" + (16).to_bytes(4, "little") + bytes(8)
    base = bytes(range(1, 256)) * 600 + bytes(-255 * 600 % 4)  # what instantiation writes
    changed = bytearray(base)
    changed[5000:5004] = b"new!"
    memory = header + bytes(changed) + bytes(PAGE * 2) + b"heap"
    file = without_zeros(memory, base)
    assert memory_of(file, base) == memory
    index = file[: file.index(b"\n")]
    assert index.startswith(b'{"size":%d,"base":[16,%d],' % (len(memory), len(base)))
    assert base[:4000] not in file and len(file) < PAGE * 2 + 200, "one page of differences"
    with pytest.raises(ValueError, match="needs a base of"):
        memory_of(file)
    with pytest.raises(ValueError, match="needs a base of"):
        memory_of(file, base[:-4])
    # Not Pyodide's snapshot: sent as it is.
    assert b'"base"' not in without_zeros(b"other" + bytes(changed), base)


def test_a_modules_memory_is_known_only_when_nothing_but_its_data_segments_write_it() -> None:
    def module(*sections: tuple[int, bytes]) -> bytes:
        return b"\0asm\x01\0\0\0" + b"".join(
            bytes([kind, len(body)]) + body for kind, body in sections
        )

    def active(offset: bytes, data: bytes) -> bytes:
        return b"\0\x41" + offset + b"\x0b" + bytes([len(data)]) + data

    two = b"\x02" + active(b"\x08", b"abc") + active(b"\x02", b"xy")  # the second one lower
    assert module_memory(module((11, two))) == b"\0\0xy\0\0\0\0abc\0"
    assert module_memory(module((8, b"\x00"), (11, two))) == b"", "a start function"
    passive = b"\x01\x01\x03abc"
    assert module_memory(module((11, passive))) == b""
    assert module_memory(module((11, b"\x01" + active(b"\x7f", b"a")))) == b"", "offset -1"
    assert module_memory(module((11, two))[:-3]) == b"", "cut short"
    assert module_memory(b"not wasm") == b""
