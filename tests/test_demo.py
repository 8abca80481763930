"""The demo, driven through the chat as a person would, recorded for people to watch.

`./dev test -m demo` runs just this. It records with reactor.testing's demo recorder: a title
for each chapter and a caption for each step drawn over the page, a screenshot after each step,
`demo.mp4` (Chromium's screencast, encoded by the imageio-ffmpeg wheel's ffmpeg) and `demo.json`
(the steps and their timings), in demo-output/ (or `--reactor-demo-dir DIR`): the kit's
reactor_demo fixture, over this repository's seeded app. It runs with the scripted model, clearly
labelled in the widget; every step is asserted.
"""

import json

import pytest

from reactor.testing.recording import duration_s

pytestmark = [pytest.mark.browser, pytest.mark.demo]


def test_the_demo_through_the_chat(reactor_demo):
    demo, out = reactor_demo, reactor_demo.out
    page = demo.reactor.open()
    screen = demo.page
    demo.chapter("reactor: a page's plugins, as an assistant's tools")
    with demo.step("Sign in as ada, an operator"):
        page.sign_in("ada")
        # The label appears once the chat has configured its model, a moment after the widget.
        screen.get_by_test_id("chat-model").get_by_text(
            "Scripted model (no AI)", exact=True
        ).wait_for()

    demo.chapter("Decks")
    with demo.step("“list decks”"):
        said = page.chat("list decks")
    assert "‘Onboarding: your first week’" in said[0].cards[0]
    with demo.step("“open deck onboarding at slide 4”"):
        page.chat("open deck onboarding at slide 4")
    assert screen.get_by_test_id("slide-number").inner_text() == "Slide 4 of 5"
    with demo.step("“present”: the slide fills the screen"):
        page.chat("present")
    assert screen.evaluate("document.fullscreenElement !== null")
    screen.evaluate("document.exitFullscreen()")
    screen.locator("#decks:not(.decks--presenting)").wait_for()

    demo.chapter("The CMS")
    with demo.step("“import 1 post from the blog at /demo-sources/blog/”, allowed by the person"):
        said = page.chat("import 1 post from the blog at /demo-sources/blog/", approve=True)
    imported = screen.locator("reactor-chat [data-testid=tool-card][data-tool=cms_crawl_blog]").last
    assert imported.get_attribute("data-status") == "finished" and "draft" in said[0].cards[-1]
    with demo.step("“publish the post about hello from the demo blog”, allowed"):
        page.chat("publish the post about hello from the demo blog", approve=True)
    published = screen.locator(
        "reactor-chat [data-testid=tool-card][data-tool=cms_publish_site_page]"
    ).last
    assert published.get_attribute("data-status") == "finished"
    with (
        screen.context.expect_page() as shown,
        demo.step("“show the post about hello from the demo blog”"),
    ):
        page.chat("show the post about hello from the demo blog")
    public = shown.value
    public.wait_for_load_state()
    assert "Hello from the demo blog" in public.locator("h1").first.inner_text()
    public.screenshot(path=out / "08-public-page.png")

    assert page.problems() == [], "no request left the server's origin, nothing failed in the page"
    video = demo.finish()
    # A video a person can watch: it decodes, and lasts at least as long as the session did.
    steps = json.loads((out / "demo.json").read_text())["steps"]
    assert [s["chapter"] for s in steps].count("Decks") == 3 and all(
        (out / s["screenshot"]).is_file() for s in steps
    )
    assert video.stat().st_size > 10_000
    assert duration_s(video) >= steps[-1]["started_s"] + steps[-1]["seconds"]
