from urllib.parse import quote, unquote, urljoin

import pytest

from reactor import ReactorError
from reactor.urls import on_origin_of, query_string, quote_segment


@pytest.mark.parametrize("text", ["plain", "a b/c?d#e&f=g", "été ☃", "100%", "", "~._-", "../x"])
def test_a_segment_is_quoted_as_urllib_does_with_nothing_safe(text: str) -> None:
    assert quote_segment(text) == quote(text, safe="")
    assert unquote(quote_segment(text)) == text


def test_a_query_string_quotes_keys_and_values() -> None:
    assert (
        query_string({"status": "draft", "q": "a&b=c d", "n": 3})
        == "status=draft&q=a%26b%3Dc%20d&n=3"
    )


@pytest.mark.parametrize(
    "base", ["/api/cms", "http://127.0.0.1:8000/api/cms", "https://cms.example", "api"]
)
def test_an_absolute_path_lands_on_the_origin_of_the_base_as_urljoin_puts_it(base: str) -> None:
    for path in ("/blog/hello", "https://elsewhere.example/x"):
        assert on_origin_of(base, path) == urljoin(base, path)


@pytest.mark.parametrize("path", ["blog", "//evil.example/x", ""])
def test_anything_but_an_absolute_path_is_refused(path: str) -> None:
    with pytest.raises(ReactorError, match="is not an absolute path"):
        on_origin_of("http://127.0.0.1:8000/api", path)
