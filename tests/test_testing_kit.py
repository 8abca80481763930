"""reactor.testing as a plugin author meets it: a test file with no conftest of its own, run by
pytest in a process of its own, against this checkout's installed plugins and real Chromium."""

import shutil

import pytest

from reactor.scaffold import new_plugin

pytestmark = pytest.mark.browser
pytest_plugins = ["pytester"]

PASSING = """
def test_tools_commands_and_the_chat(reactor_server, reactor_page):
    bob = reactor_server.user("bob2", groups=["staff"])
    assert "decks_list_decks" in reactor_page.tools()
    reactor_page.wait_for_tool("decks_open")
    listed = reactor_page.call_tool("decks_list_decks", {})
    assert listed["ok"] and "onboarding" in {d["id"] for d in listed["result"]["decks"]}
    assert reactor_page.execute("decks.open", {"id": "onboarding", "slide": 2})["slide"] == 2
    reactor_page.sign_in(bob)
    said = reactor_page.chat(["list decks", "open deck onboarding at slide 4"], approve=True)
    assert "Onboarding: your first week" in said[0].reply
    assert said[1].cards and "slide 4 of 5" in said[1].cards[0]
    assert bob.headers()["authorization"].startswith("Bearer ")
"""

WITH_A_MODEL = """
from reactor.testing import call, text


def test_the_chat_with_a_model_the_test_scripts(reactor_page, reactor_model):
    reactor_model.answers = [
        call("decks_open", {"id": "onboarding", "slide": 3}),
        text("It is open at slide 3."),
    ]
    said = reactor_page.use_model(reactor_model).chat("open onboarding at slide 3")
    assert said[0].reply == "It is open at slide 3."
    assert "slide 3 of 5" in said[0].cards[0]
    assert reactor_model.requests[-1]["stream"] is True


def test_the_page_goes_on_while_the_test_waits_outside_playwright(reactor_page, reactor_model):
    reactor_model.hold.clear()  # the answer stops after its first word
    page = reactor_page.use_model(reactor_model).page
    page.evaluate("() => { window.reactor.chat.send('hello'); }")  # not awaited: it runs on
    assert reactor_model.first_text_sent.wait(10), "the page's request reached the model meanwhile"
    reactor_model.hold.set()
"""

MORE_PAGES = """
def test_pages_made_before_they_open(new_reactor_page):
    asked = []

    def boot_list(route):
        asked.append(route.request.url)
        route.fallback()

    first = new_reactor_page()
    first.page.route("**/app/boot.json", boot_list)
    assert first.open().ready["failures"] == [] and asked, "the route saw the page's first requests"
    first.wait_for_bundle("decks")
    second = new_reactor_page().open("/#/decks/onboarding/2")
    assert second.page.context is not first.page.context, "a browser context of its own"
    second.page.get_by_text("Slide 2 of 5").wait_for()


def test_commands_run_at_load_without_a_gesture(new_reactor_page):
    reactor = new_reactor_page()
    calls = [("decks.open", {"id": "onboarding", "slide": 2}), ("decks.present", {})]
    opened, present = reactor.execute_at_load(calls)
    assert reactor.ready["failures"] == [] and opened["slide"] == 2
    assert present["presenting"] is False, "full screen needs a click, and there was none"
"""

FAILING = """
import math

def test_a_deck_that_is_not_there(reactor_page):
    envelope = reactor_page.call_tool("decks_open", {"id": "no-such-deck"})
    assert envelope["ok"], envelope["error"]["message"]

def test_arguments_that_are_not_json(reactor_page):
    reactor_page.call_tool("decks_open", {"id": "onboarding", "slide": math.nan})

def test_a_request_off_the_origin(reactor_page):
    assert reactor_page.page.evaluate(
        "fetch('http://203.0.113.9/x').then(() => 'answered', () => 'refused')"
    ) == "refused"

def test_a_command_refused(reactor_page):
    reactor_page.execute("decks.open", {"slide": "four"})
"""


def run(pytester, source, *options):
    pytester.makepyfile(test_authors=source)
    return pytester.runpytest_subprocess(
        "--reactor-seed", "-p", "no:cacheprovider", *options, timeout=600
    )


def test_an_authors_tests_pass_with_the_fixtures_alone(pytester):
    result = run(pytester, PASSING)
    result.assert_outcomes(passed=1)


def test_an_authors_chat_runs_against_a_model_the_test_scripts(pytester):
    result = run(pytester, WITH_A_MODEL)
    result.assert_outcomes(passed=2)


def test_an_author_makes_more_pages_and_routes_their_first_requests(pytester):
    result = run(pytester, MORE_PAGES)
    result.assert_outcomes(passed=2)


def test_the_same_tests_pass_on_postgresql(pytester, postgres_cluster):
    result = run(pytester, PASSING, "--reactor-database", postgres_cluster.database())
    result.assert_outcomes(passed=1)


def test_an_authors_failing_tests_say_what_to_fix(pytester):
    result = run(pytester, FAILING)
    result.assert_outcomes(failed=3, passed=1, errors=1)
    out = result.stdout.str()
    # the tool's own sentence, as the model reads it
    assert "There is no deck 'no-such-deck'" in out
    assert "call_tool('decks_open'): the arguments must be JSON" in out and "nan" in out
    assert "a request outside the server's origin: http://203.0.113.9/x" in out
    assert "execute('decks.open') failed: InvalidArgumentsError" in out


USERS = """
import pytest
from reactor.testing import UserExistsError


def test_one_asks_for_ann(reactor_server):
    ann = reactor_server.user("ann", groups=["staff"])
    assert ann.headers()["authorization"].startswith("Bearer ")


def test_another_asks_for_ann_again_and_gets_the_same(reactor_server):
    ann = reactor_server.user("ann")
    assert ann.groups == ("staff",) and ann.headers()


def test_other_groups_for_ann_say_how_to_get_a_new_user(reactor_server):
    with pytest.raises(UserExistsError) as refused:
        reactor_server.user("ann", groups=["operators"])
    print("SAID:", refused.value)


def test_a_demo_user_is_the_demos(reactor_server):
    bob = reactor_server.user("bob")
    assert bob.password == "bob-demo" and bob.groups == ("staff",) and bob.headers()
"""

BROKEN_PLUGIN = """
def test_the_page_offers_the_tool(reactor_page):
    reactor_page.wait_for_tool("notes_list_items")


def test_a_test_that_expects_the_failure_goes_on(new_reactor_page):
    reactor = new_reactor_page().expect_load_failure("Plugin 'notes' failed to load")
    assert "notes" not in reactor.open().ready["loaded"]
"""


def test_a_user_asked_for_twice_is_the_same_user_and_other_groups_say_what_to_do(pytester):
    result = run(pytester, USERS, "-s")
    result.assert_outcomes(passed=4)
    said = result.stdout.str()
    assert "'ann' exists already with the groups ['staff']" in said
    assert "Ask for another name for a new user (reactor_server.user('ann2'" in said


def test_a_plugin_that_failed_to_load_fails_the_test_at_once_with_its_own_sentence(pytester):
    """An installed plugin (the scaffold's, a handler left out) whose page half cannot load."""
    new_plugin("notes", pytester.path)
    page_half = pytester.path / "notes" / "reactor_notes" / "__init__.py"
    code = page_half.read_text()
    page_half.write_text(code.replace('"notes.listItems": list_items, ', ""))
    # installed as pip would: the package and its entry point, where `reactor serve` looks
    (pytester.path / "notes" / "reactor_notes").rename(pytester.path / "reactor_notes")
    shutil.rmtree(pytester.path / "notes")
    installed = pytester.path / "reactor_notes-0.1.0.dist-info"
    installed.mkdir()
    (installed / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: reactor-notes\nVersion: 0.1.0\n"
    )
    (installed / "entry_points.txt").write_text(
        "[reactor.plugins]\nnotes = reactor_notes.spec:PLUGIN\n"
    )
    result = run(pytester, BROKEN_PLUGIN)
    result.assert_outcomes(errors=1, passed=1)  # reactor_page's set-up failed
    said = result.stdout.str()
    assert (
        "Plugin 'notes' failed to load and was rolled back: AgentTools bundle 'notes' declares "
        "the command 'notes.listItems', but no handler was given for it." in said
    )
    assert "within 30000 ms" not in said, "the test failed at once, not after waiting"
