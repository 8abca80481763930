"""Every command the README and docs/ show is one that works as written: `reactor` lines parse
with reactor's own command line (each option exists, each value is one it takes), `./dev` lines
name one of its commands, the benchmarks' and examples' options are ones their `--help` lists,
and `pip install` names extras pyproject.toml has. Running them is other tests' work (the demo,
the scaffold, the deployment); this one fails when a page names an option that is gone."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path

import pytest

from reactor.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
STARTS = (
    "./dev ",
    "reactor ",
    ".venv/bin/reactor ",
    ".venv/bin/python ",
    "python -m ",
    "bench/run",
)
STARTS += ("pip install ",)


def shown_commands() -> list[tuple[str, str, bool]]:
    """(page, command, whole) for each line of a ```sh block (whole: run as written) and each
    `inline` command of the pages (a mention: its options must exist)."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for block in re.findall(r"```sh\n(.*?)```", text, re.S):
            found += [(page.name, line, True) for line in block.splitlines()]
        found += [(page.name, span, False) for span in re.findall(r"`([^`\n]+)`", text)]
    commands = []
    for page, line, whole in found:
        line = re.sub(r"\s+#.*$", "", line).strip()  # the comment after a command
        line = re.sub(r"\[([^\]]*)\]", r"\1", line)  # [--rounds 10]: an option it may take
        if line.startswith(STARTS) and "…" not in line:
            commands.append((page, line, whole))
    return sorted(set(commands))


def options_of(words: list[str]) -> set[str]:
    """The options reactor's (sub)command named by `words` takes."""
    parser = build_parser()
    for word in words:
        choices = next(
            (a.choices for a in parser._actions if isinstance(a.choices, dict)), None
        )  # argparse keeps its subcommands there
        if choices is None or word not in choices:
            break
        parser = choices[word]
    return {option for action in parser._actions for option in action.option_strings}


@cache
def help_text(*command: str) -> str:
    return subprocess.run(
        [*command, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=120
    ).stdout


@pytest.mark.parametrize(("page", "line", "whole"), shown_commands())
def test_each_command_a_page_shows_is_one_that_exists(page, line, whole):
    words = shlex.split(line)
    if words[0] == "./dev":
        assert words[1] in ("demo", "test", "lint"), f"{page}: ./dev has no {words[1]!r}"
        if words[1] == "demo" and whole:
            build_parser().parse_args(["serve", *words[2:]])
        return
    if words[0] == "pip":
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
            "optional-dependencies"
        ]
        for wanted in re.findall(r"\[([\w,]+)\]", line):
            assert set(wanted.split(",")) <= {*extras, "test"}, f"{page}: {line}"
        return
    if words[0] in ("reactor", ".venv/bin/reactor"):
        words = ["reactor", *words[1:]]
    if words[:3] == ["python", "-m", "reactor"]:
        words = ["reactor", *words[3:]]
    if words[0] == "reactor":
        if not whole:  # a mention in a sentence: its options exist
            unknown = {w for w in words if w.startswith("--")} - options_of(words[1:])
            assert not unknown, f"{page}: `{line}`: reactor takes no {sorted(unknown)}"
            return
        try:
            build_parser().parse_args(words[1:])
        except SystemExit:
            pytest.fail(f"{page}: `{line}` is not a command reactor takes")
        return
    if words[0] == "bench/run":
        program = (sys.executable, "-m", "bench")
        options = words[1:]
    elif words[1] == "-m":
        program, options = (sys.executable, "-m", words[2]), words[3:]
    else:
        assert (ROOT / words[1]).is_file(), f"{page}: there is no {words[1]}"
        program, options = (sys.executable, words[1]), words[2:]
    listed = help_text(*program)
    for option in [w.split("=")[0] for w in options if w.startswith("--")]:
        assert option in listed, f"{page}: `{line}`: {option} is not an option of {program[-1]}"
