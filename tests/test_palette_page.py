"""The palette of a page with many commands, in real Chromium: it draws what a person can read,
says how many more there are, and the filter finds any of them."""

import pytest

pytestmark = pytest.mark.browser

DEFINE = """async ([first, count]) => {
  for (let i = first; i < first + count; i++) {
    const name = `many_${String(i).padStart(2, "0")}`;
    await window.reactor.definePlugin({ name, commands: Array.from({ length: 10 }, (_, t) =>
      ({ id: `${name}.c${t}`, label: `Many ${i}: command ${t}`, execute: () => t })),
      agentTools: { id: name, name, commands: [
        { name: `${name}_c0`, command: `${name}.c0`, description: "Zero." }] } });
  }
}"""
TOOLS = "window.reactor.agentToolBundles().then((bs) => bs.flatMap((b) => b.commands).length)"


def test_a_palette_of_hundreds_draws_a_hundred_and_the_filter_finds_the_rest(reactor_page):
    page = reactor_page.page
    page.evaluate(DEFINE, [0, 40])
    total = len(page.evaluate("window.reactor.listCommands()"))
    assert total > 400
    palette = page.locator("#palette")
    palette.get_by_text(
        f"…and {total - 100} more commands: type in the filter to find one."
    ).wait_for()
    assert palette.locator("button").count() == 100
    page.fill("#palette-filter", "Many 39: command 9")
    palette.get_by_role("button", name="Many 39: command 9").click()
    page.locator("#palette-status").get_by_text("Many 39: command 9: done.").wait_for()
    assert palette.locator("button").count() == 1


def test_the_agent_tools_list_draws_a_hundred_and_its_count_follows_each_definition(reactor_page):
    page = reactor_page.page
    tools = page.locator("#agent-tools")
    page.evaluate(DEFINE, [0, 120])
    total = page.evaluate(TOOLS)
    tools.get_by_text(f"…and {total - 100} more tools.").wait_for()
    first = tools.locator("li").first.text_content()
    page.evaluate(DEFINE, [120, 1])
    tools.get_by_text(f"…and {total - 99} more tools.").wait_for()
    assert tools.locator("li").count() == 101 and tools.locator("li").first.text_content() == first
    page.evaluate("window.reactor.unloadPlugin('decks')")
    tools.get_by_text(f"…and {page.evaluate(TOOLS) - 100} more tools.").wait_for()
    assert "decks_" not in tools.text_content()
