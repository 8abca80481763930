"""What the page's Python reads from the server: answers fetched early are taken once, by the
request they answer."""

from __future__ import annotations

from reactor.http import Preloaded, answer_json


def test_a_preloaded_answer_serves_the_first_plain_get_of_its_path_once():
    early = Preloaded([["/plugins", 200, '[{"id": "a"}]'], ["/missing", 404, '{"error": "no"}']])
    assert early.take("GET", "/plugins") == (200, '[{"id": "a"}]')
    assert early.take("GET", "/plugins") is None, "the next GET asks the server"
    # An error answer is taken the same way: the caller reads it as it would the server's.
    status, text = early.take("GET", "/missing") or (0, "")
    assert status == 404 and text == '{"error": "no"}'
    assert answer_json(200, '[{"id": "a"}]') == [{"id": "a"}]


def test_a_request_that_is_not_a_plain_get_goes_to_the_server():
    answers = [["/plugins", 200, "[]"]]
    for request in [
        {"method": "POST"},
        {"body": {"x": 1}},
        {"headers": {"x-version": "3"}},
        {"signal": object()},
    ]:
        early = Preloaded(answers)
        method = request.pop("method", "GET")
        assert early.take(method, "/plugins", **request) is None
        assert early.take("GET", "/plugins") == (200, "[]"), "still there for the plain GET"
    assert Preloaded(answers).take("GET", "/plugins?all=1") is None, "another path"


def test_what_is_not_a_list_of_answers_preloads_nothing():
    for answers in [None, "[]", {"/plugins": [200, "[]"]}, [["/plugins", "200", "[]"]], [[1, 2]]]:
        assert Preloaded(answers).take("GET", "/plugins") is None
    first = Preloaded([["/a", 200, "1"], ["/a", 200, "2"]])
    assert first.take("GET", "/a") == (200, "1")
