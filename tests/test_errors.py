"""One error tree: every error reactor raises is a ReactorError, and the envelope codes mean what they say."""

import pytest

from reactor import DeclarationError, HttpError, NotFoundError, ReactorError, ToolError
from reactor.errors import PageScriptError
from reactor.json_schema import SchemaError


@pytest.mark.parametrize(
    "error",
    [
        HttpError(404, "gone"),
        PageScriptError("TypeError", "x is undefined"),
        SchemaError("bad schema"),
        NotFoundError("There is no deck 'x'."),
        DeclarationError("bad", owner="p", field="f"),
    ],
)
def test_every_error_belongs_to_the_one_tree(error):
    assert isinstance(error, ReactorError)


def test_not_found_is_a_tool_error_with_its_code_and_still_a_lookup_error():
    error = NotFoundError("There is no deck 'x'. Decks: a, b.", decks=["a", "b"])
    assert isinstance(error, ToolError) and isinstance(error, LookupError)
    assert (error.code, str(error), error.details) == ("not_found", "There is no deck 'x'. Decks: a, b.", {"decks": ["a", "b"]})


def test_a_refused_http_answer_becomes_not_permitted_and_others_stay_http_errors():
    assert HttpError(401, "Sign in to read plugins.").refusal().code == "not_permitted"
    assert HttpError(403, "Operators only.").refusal().code == "not_permitted"
    assert HttpError(500, "boom").refusal() is None
