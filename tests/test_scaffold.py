"""`reactor new plugin NAME`: the package it writes installs into a fresh virtual environment,
and its generated tests pass there, in real Chromium, against a real `reactor serve`."""

import site
import subprocess
import sys

import pytest
from conftest import run_reactor


def fresh_venv(folder):
    """A new venv that sees this one's packages (reactor and its dependencies) through a .pth file,
    so nothing is downloaded; what is installed into it stays its own."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=120)
    packages = next(folder.glob("lib/python3*/site-packages"))
    outer = next(p for p in site.getsitepackages() if p.endswith("site-packages"))
    (packages / "reactor-env.pth").write_text(f"import site; site.addsitedir({outer!r})\n")
    return folder / "bin" / "python"


@pytest.mark.browser
@pytest.mark.parametrize("server", [False, True], ids=["page-only", "with-server"])
def test_a_new_plugin_installs_and_its_own_tests_pass(tmp_path, server):
    made = run_reactor("new", "plugin", "team-notes", "--dir", str(tmp_path), *(["--server"] if server else []))
    assert made.returncode == 0, made.stderr
    assert "team-notes/reactor_team_notes/agent-tools.json" in made.stdout
    assert ("server.py" in made.stdout) is server
    python = fresh_venv(tmp_path / "venv")
    install = [str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(tmp_path / "team-notes")]
    installed = subprocess.run(install, capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    listed = subprocess.run(
        [str(python), "-m", "reactor", "tools", "--format", "openai", "--plugin", "team-notes"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert "team_notes_add_item" in listed.stdout, "the next `reactor serve` serves it"
    tests = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "team-notes")],
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
    assert result.returncode == 2 and said in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == [], "nothing was written"


def test_an_existing_folder_is_never_overwritten(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    result = run_reactor("new", "plugin", "notes", "--dir", str(tmp_path))
    assert result.returncode == 2 and "already exists" in result.stderr
    assert [p.name for p in (tmp_path / "notes").iterdir()] == ["mine.txt"]
