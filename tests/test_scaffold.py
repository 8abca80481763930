"""`reactor new plugin NAME`: the package it writes installs into a fresh virtual environment
beside reactor installed as an author installs it (a wheel, not this checkout), and its generated
tests pass there, in real Chromium, against a real `reactor serve`."""

import site
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_reactor

CHECKOUT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def authors_python(tmp_path_factory):
    """A new venv with `pip install 'reactor[testing] @ file://…'` of this checkout: a wheel, built
    now, that carries the page and its runtime. Its dependencies are this venv's, seen through a
    .pth line that adds its site-packages as a plain folder (so not its editable reactor), and not
    downloaded; what is installed into it stays its own."""
    folder = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=120)
    packages = next(folder.glob("lib/python3*/site-packages"))
    outer = next(p for p in site.getsitepackages() if p.endswith("site-packages"))
    (packages / "reactor-env.pth").write_text(outer + "\n")
    python = folder / "bin" / "python"
    install = [
        str(python),
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        f"reactor[testing] @ {CHECKOUT.as_uri()}",
    ]
    installed = subprocess.run(install, capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-3000:]
    where = subprocess.run(
        [str(python), "-c", "import reactor.server.runtime.files as f; print(f.ROOT)"],
        capture_output=True,
        text=True,
    )
    assert where.stdout.strip() == str(packages / "reactor" / "server" / "static"), (
        "the page's files are the wheel's"
    )
    return python


@pytest.mark.browser
@pytest.mark.parametrize("server", [False, True], ids=["page-only", "with-server"])
def test_a_new_plugin_installs_and_its_own_tests_pass(tmp_path, authors_python, server):
    made = run_reactor(
        "new", "plugin", "team-notes", "--dir", str(tmp_path), *(["--server"] if server else [])
    )
    assert made.returncode == 0, made.stderr
    assert "team-notes/reactor_team_notes/agent-tools.json" in made.stdout
    assert ("server.py" in made.stdout) is server
    install = [
        str(authors_python),
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "-e",
        str(tmp_path / "team-notes"),
    ]
    installed = subprocess.run(install, capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    listed = subprocess.run(
        [
            str(authors_python),
            "-m",
            "reactor",
            "tools",
            "--format",
            "openai",
            "--plugin",
            "team-notes",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert "team_notes_add_item" in listed.stdout, "the next `reactor serve` serves it"
    tests = subprocess.run(
        [
            str(authors_python),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(tmp_path / "team-notes"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path / "team-notes",
    )
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert "5 passed" in tests.stdout
    demo = tmp_path / "team-notes" / "demo-output"
    assert sorted(p.name for p in demo.iterdir()) == [
        "01-an-agent-adds-an-item.png", "02-the-chat-lists-the-items.png", "demo.json", "demo.mp4",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("Team_Notes", "cannot name a plugin: use lowercase letters, digits and single hyphens"),
        ("9lives", "starting with a letter"),
        ("a" * 41, "at most 40 characters"),
    ],
)
def test_a_name_that_cannot_be_a_plugin_is_refused_in_one_line(tmp_path, name, said):
    result = run_reactor("new", "plugin", name, "--dir", str(tmp_path))
    assert (
        result.returncode == 2
        and said in result.stderr
        and len(result.stderr.strip().splitlines()) == 1
    )
    assert list(tmp_path.iterdir()) == [], "nothing was written"


def test_an_existing_folder_is_never_overwritten(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    result = run_reactor("new", "plugin", "notes", "--dir", str(tmp_path))
    assert result.returncode == 2 and "already exists" in result.stderr
    assert [p.name for p in (tmp_path / "notes").iterdir()] == ["mine.txt"]
