"""The demo driven by a desktop agent: the official MCP SDK's client lists the decks, opens one at
slide 4 and presents it, through /mcp and the person's open page, which is recorded
(reactor.testing's Demo: captions, a screenshot per step, demo.mp4 and demo.json in
demo-output/mcp/)."""

import json
import os
from pathlib import Path

import pytest

from reactor.testing import Demo, ReactorPage
from test_mcp_page import Agent, connect_page, make_token_in_panel

pytestmark = [pytest.mark.browser, pytest.mark.demo]

OUT = (
    Path(os.environ.get("REACTOR_DEMO_DIR", Path(__file__).resolve().parents[1] / "demo-output"))
    / "mcp"
)


def test_a_desktop_agent_drives_the_demo_page(browser, live_server):
    demo = Demo(browser, OUT)
    screen = demo.page
    agent = None
    try:
        demo.chapter("A desktop agent, through the person's open page")
        with demo.step("Ada signs in and lets her agents use this page"):
            connect_page(ReactorPage(screen, live_server).open(), "ada")
        with demo.step("She makes a token for Claude Code"):
            token = make_token_in_panel(screen, "Claude Code")
        agent = Agent(live_server.url, token)
        with demo.step("The agent lists the decks"):
            listed = agent.call("decks_list_decks", {}).result(30)
        assert not listed.is_error and "onboarding" in [
            d["id"] for d in listed.structured_content["decks"]
        ]
        with demo.step("The agent opens the onboarding deck at slide 4"):
            opened = agent.call("decks_open", {"id": "onboarding", "slide": 4}).result(30)
            screen.get_by_test_id("slide-number").get_by_text("Slide 4 of 5").wait_for()
        assert not opened.is_error, opened.content
        presenting = agent.call("decks_present", {})
        with demo.step("It presents: the slide fills the screen"):
            result = presenting.result(30)
        assert not result.is_error, result.content
        assert screen.evaluate("document.fullscreenElement !== null")
        screen.evaluate("document.exitFullscreen()")
        with demo.step("The agent asks to add a deck; Ada allows it in the page"):
            made = agent.call("decks_create_deck", {"title": "Made by my agent"})
            screen.locator("[data-testid=approval]:not([data-decision])").get_by_role(
                "button", name="Allow", exact=True
            ).click()
            assert not made.result(30).is_error
        demo.finish()
    finally:
        if agent is not None:
            agent.close()
        if not screen.is_closed():
            demo.recorder.stop()
    steps = json.loads((OUT / "demo.json").read_text())["steps"]
    assert len(steps) == 6 and all((OUT / step["screenshot"]).is_file() for step in steps)
