"""The demo, driven through the chat as a person would, recorded as screenshots and a video.

`./dev test -m demo` runs just this; the pictures and the video (demo.webm from Playwright's
recorder where its ffmpeg is installed, else demo.mp4 from Chromium's screencast) land in
demo-output/ (or $REACTOR_DEMO_DIR). It runs with the scripted model, clearly labelled in the
widget; every step is asserted.
"""

import os
import time
from pathlib import Path

import pytest

from reactor.testing.recording import Recorder, duration_s

pytestmark = [pytest.mark.browser, pytest.mark.demo]

OUT = Path(os.environ.get("REACTOR_DEMO_DIR", Path(__file__).resolve().parents[1] / "demo-output"))


SHOT_TIMES: list[float] = []


@pytest.fixture
def recorded(browser, live_server):
    OUT.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(browser, OUT, viewport={"width": 1400, "height": 900})
    yield recorder
    if not recorder.page.is_closed():
        recorder.stop()


def step(page, name, text=None, approve=False):
    chat = page.locator("reactor-chat")
    if text:
        chat.locator("textarea").fill(text)
        chat.get_by_role("button", name="Send").click()
        if approve:
            pending = chat.locator("[data-testid=approval]:not([data-decision])")
            pending.get_by_role("button", name="Allow", exact=True).click()
        page.locator("reactor-chat[data-running=false]").wait_for()
    page.screenshot(path=OUT / f"{name}.png")
    SHOT_TIMES.append(time.monotonic())


def test_the_demo_through_the_chat(recorded, live_server):
    page = recorded.page
    SHOT_TIMES.clear()
    page.goto(live_server.url)
    page.evaluate("window.reactor.ready")
    page.fill("#session input[name=username]", "ada")
    page.fill("#session input[name=password]", "ada-demo")
    page.click("#session button[type=submit]")
    page.get_by_test_id("signed-in-as").wait_for()
    # The label appears once the chat has configured its model, a moment after the widget.
    page.get_by_test_id("chat-model").get_by_text("Scripted model (no AI)", exact=True).wait_for()
    step(page, "01-signed-in")

    step(page, "02-list-decks", "list decks")
    listed = page.locator("reactor-chat [data-testid=tool-card][data-tool=decks_list_decks]").last
    assert "‘Onboarding: your first week’" in listed.get_by_test_id("tool-summary").inner_text()
    step(page, "03-open-at-slide-4", "open deck onboarding at slide 4")
    assert page.get_by_test_id("slide-number").inner_text() == "Slide 4 of 5"
    step(page, "04-present", "present")
    assert page.evaluate("document.fullscreenElement !== null")
    page.evaluate("document.exitFullscreen()")
    page.locator("#decks:not(.decks--presenting)").wait_for()

    step(page, "05-import-draft", "import 1 post from the blog at /demo-sources/blog/", approve=True)
    imported = page.locator("reactor-chat [data-testid=tool-card][data-tool=cms_crawl_blog]").last
    assert imported.get_attribute("data-status") == "finished"
    assert "draft" in imported.inner_text()
    step(page, "06-publish-on-request", "publish the post about hello from the demo blog", approve=True)
    published = page.locator("reactor-chat [data-testid=tool-card][data-tool=cms_publish_site_page]").last
    assert published.get_attribute("data-status") == "finished"
    with page.context.expect_page() as shown:
        step(page, "07-show", "show the post about hello from the demo blog")
    public = shown.value
    public.wait_for_load_state()
    assert "Hello from the demo blog" in public.locator("h1").first.inner_text()
    public.screenshot(path=OUT / "08-public-page.png")
    SHOT_TIMES.append(time.monotonic())

    video = recorded.stop()
    # A video a person can watch: it decodes, and it lasts as long as the screenshots span.
    assert video.stat().st_size > 10_000
    assert duration_s(video) >= SHOT_TIMES[-1] - SHOT_TIMES[0]
    if recorded.frames:  # the screencast's own frames span the run, not only the padding after them
        assert recorded.frames[-1][0] - recorded.frames[0][0] >= 0.8 * (SHOT_TIMES[-2] - SHOT_TIMES[0])
