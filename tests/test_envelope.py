"""The envelope every tool call answers with: success, failure with a known code, never a crash."""

import json
import math

import pytest

from reactor import ReactorError
from reactor.envelope import (
    RAN_WITHOUT_VALUE,
    envelope_text,
    is_failure,
    tool_failure,
    tool_success,
)
from reactor.errors import FAILURE_CODES


def test_a_value_is_wrapped_and_none_says_the_command_ran():
    assert tool_success({"decks": []}) == {"ok": True, "result": {"decks": []}}
    assert tool_success("text") == {"ok": True, "result": "text"}
    assert tool_success(None) == {"ok": True, "result": None, "note": RAN_WITHOUT_VALUE}


@pytest.mark.parametrize("value", [{1, 2}, {"when": object()}, [math.nan], float("inf")])
def test_a_value_that_is_not_json_data_is_a_failed_answer_naming_why(value):
    answer = tool_success(value)
    assert is_failure(answer) and answer["error"]["code"] == "failed"
    assert answer["error"]["message"].startswith(
        "The tool answered with a value that is not JSON data:"
    )


def test_a_failure_carries_its_code_sentence_and_details_and_an_unknown_code_is_refused():
    answer = tool_failure(
        "invalid_arguments", "Fix the title.", problems=[{"path": "$.title", "message": "too long"}]
    )
    assert answer == {
        "ok": False,
        "error": {
            "code": "invalid_arguments",
            "message": "Fix the title.",
            "problems": [{"path": "$.title", "message": "too long"}],
        },
    }
    assert "denied" in FAILURE_CODES
    with pytest.raises(ReactorError, match="'oops' is not a tool failure code") as refused:
        tool_failure("oops", "No.")
    assert isinstance(refused.value, ValueError) and refused.value.field == "code"


def test_what_the_model_reads_is_the_envelope_as_json_with_its_words_readable():
    text = envelope_text(tool_success({"title": "Café ‘Ü’"}))
    assert "Café ‘Ü’" in text and json.loads(text) == {"ok": True, "result": {"title": "Café ‘Ü’"}}
    assert is_failure({"ok": "yes"}) and not is_failure({"ok": True, "result": 1})
