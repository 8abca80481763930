"""The PyScript example (examples/pyscript/) in real Chromium: PyScript's Python defines a reactor
plugin through window.reactor; the chat's tools then change the list PyScript draws."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from reactor.server.loopback import LoopbackServer

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pyscript" / "serve.py"


@pytest.fixture
def example(tmp_path):
    spec = importlib.util.spec_from_file_location("pyscript_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with LoopbackServer(module.make_app(tmp_path / "data")) as url:
        yield url


def test_serve_py_with_port_0_prints_the_address_it_serves_at(tmp_path):
    served = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--port", "0", "--data", str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        said = served.stdout.readline()
        found = re.fullmatch(
            r"the PyScript example is at (http://127\.0\.0\.1:(\d+)/pyscript/)\n", said
        )
        assert found and found[2] != "0", said
        page = httpx.get(found[1], timeout=30)
        assert page.status_code == 200 and "<title>A shopping list in PyScript" in page.text
    finally:
        served.terminate()
        served.wait(timeout=20)
        served.stdout.close()


@pytest.mark.browser
def test_a_pyscript_plugin_is_a_tool_the_chat_calls_and_its_page_shows_the_change(page, example):
    origin = urlsplit(example)
    strays, errors = [], []
    page.on(
        "request",
        lambda r: urlsplit(r.url).netloc not in (origin.netloc, "") and strays.append(r.url),
    )
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{example}/pyscript/")
    # PyScript's Python ran
    page.get_by_text("Ready: the assistant can list and add items").wait_for(timeout=120_000)
    # reactor's status counts the page's own plugin, defined after reactor was ready
    status = page.locator("[data-reactor-progress]").inner_text()
    assert re.fullmatch(r"Ready in \d+\.\d s: shopping\.", status), status
    added = page.evaluate("window.reactor.callTool('shopping_add_item', {text: 'Milk'})")
    assert added["ok"] and added["result"] == {"count": 1, "items": ["Milk"]}
    # drawn by PyScript
    assert page.get_by_role("list", name="Shopping list").inner_text() == "Milk"
    refused = page.evaluate("window.reactor.callTool('shopping_add_item', {text: ''})")
    assert refused["error"]["code"] == "invalid_arguments", (
        "reactor validated PyScript's tool before it ran"
    )
    chat = page.locator("reactor-chat")
    chat.locator("textarea").fill("list items")
    chat.get_by_role("button", name="Send").click()
    page.locator("reactor-chat[data-running=false]").wait_for()
    card = chat.locator("[data-testid=tool-card][data-tool=shopping_list_items]")
    assert "1 items." in card.inner_text()
    assert strays == [] and errors == []
