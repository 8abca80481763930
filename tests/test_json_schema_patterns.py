"""`pattern` and `patternProperties` are ECMA-262 regular expressions: reactor's validator reads
them as ECMA-262 does, not as Python's re (which jsonschema uses) would. Where the two read a
pattern differently, the answer here is ECMA-262's; a pattern Python cannot honour is refused
when declared. The last test compares the verdicts with Node's RegExp (the `u` flag, which
JSON Schema recommends) on generated patterns and strings."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from reactor.agent_tools import load_agent_tools
from reactor.arguments import parse_tool_arguments
from reactor.errors import ToolError
from reactor.json_schema import SchemaError, Validator, check_schema, ecma_regex

ROOT = Path(__file__).resolve().parent.parent


def matches(pattern: str, text: str) -> bool:
    return Validator({"type": "string", "pattern": pattern}).is_valid(text)


def refusal(declared) -> str:
    with pytest.raises(SchemaError) as info:
        check_schema(declared)
    return f"{info.value.message} at {list(info.value.path)}"


def test_dollar_is_the_very_end_of_the_input_not_before_a_final_newline() -> None:
    validator = Validator({"type": "string", "pattern": "^[a-z0-9-]+$"})
    assert validator.problems("abc") == []
    assert validator.problems("abc\n") == [((), "'abc\\n' does not match '^[a-z0-9-]+$'")]
    assert validator.problems("abc\n\n") == [((), "'abc\\n\\n' does not match '^[a-z0-9-]+$'")]
    assert Validator({"pattern": "^[a-z]+$"}).problems("abc\n") == [
        ((), "'abc\\n' does not match '^[a-z]+$'")
    ]
    assert (
        not matches("a$", "a\n")
        and matches("a$", "ba")
        and matches("^a", "ab")
        and not matches("^a", "\na")
    )
    assert matches("(?=$)", "") and not matches("a(?=$)", "a\n")


def test_dot_stops_at_every_ecma_line_terminator() -> None:
    for terminator in "\n\r\u2028\u2029":
        assert not matches("^.$", terminator), repr(terminator)
    for other in "a\u0085\x0b\t😀":
        assert matches("^.$", other), repr(other)


@pytest.mark.parametrize(
    ("pattern", "accepted", "refused"),
    [
        ("^\\d+$", ["3", "0123456789"], ["٣", "३", "３", "3\n"]),
        ("^\\D$", ["٣", "a"], ["3"]),
        ("^\\w+$", ["a_Z9"], ["é", "ß", "٣", "\u212a"]),  # the last is the Kelvin sign
        ("^\\W$", ["é", "-"], ["a", "_"]),
        ("\\bé", ["aé"], ["é", " é"]),
        ("a\\b", ["a", "aé", "a-"], ["ab"]),
        ("^\\B$", [""], []),  # Python's re before 3.14 finds no \B in an empty string
        ("é\\B", ["é", "éé", "é-"], ["éa"]),
        ("^[\\d]+$", ["12"], ["٣"]),
        ("^[^\\w]$", ["é"], ["a"]),
        ("^[\\W\\d]+$", ["é3"], ["a"]),
    ],
)
def test_digits_words_and_boundaries_are_ascii(
    pattern: str, accepted: list[str], refused: list[str]
) -> None:
    for text in accepted:
        assert matches(pattern, text), (pattern, text)
    for text in refused:
        assert not matches(pattern, text), (pattern, text)


ECMA_SPACES = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2005\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
NOT_SPACES = "\x1c\x1d\x1e\x1f\u0085\u180e\u200b\x00a"


@pytest.mark.parametrize(
    ("pattern", "spaces", "others"),
    [
        ("^\\s$", True, False),
        ("^\\S$", False, True),
        ("^[\\s]$", True, False),
        ("^[^\\s]$", False, True),
        ("^[\\S]$", False, True),
        ("^[^\\S]$", True, False),
        ("^[\\s\\S]$", True, True),
        ("^[^\\s\\S]$", False, False),
    ],
)
def test_s_is_ecma_whitespace_inside_and_outside_a_class(
    pattern: str, spaces: bool, others: bool
) -> None:
    for char in ECMA_SPACES:
        assert matches(pattern, char) == spaces, (pattern, char)
    for char in NOT_SPACES:
        assert matches(pattern, char) == others, (pattern, char)


def test_s_in_the_brief_examples_and_in_classes_with_other_members() -> None:
    assert matches("\\s", "\u00a0") and matches("\\s", "\ufeff") and not matches("\\s", "\x1c")
    assert [matches("^[a\\S]$", c) for c in ("a", "b", " ", "\ufeff")] == [True, True, False, False]
    assert [matches("^[^a\\S]$", c) for c in ("a", "b", " ", "\ufeff")] == [
        False,
        False,
        True,
        True,
    ]
    assert [matches("^[^\\S\\n]$", c) for c in ("\n", " ", "\u3000", "x")] == [
        False,
        True,
        True,
        False,
    ]
    assert [matches("^[\\S\\d]+$", c) for c in ("x1", " ", "1")] == [True, False, True]


def test_dollar_and_other_syntax_characters_in_a_class_or_escaped_are_literal() -> None:
    assert matches("^[$]$", "$") and not matches("^[$]$", "") and not matches("^a[$]", "a\n")
    assert matches("^a\\$$", "a$") and not matches("^a\\$", "a")
    assert matches("^[.^|*+?(){}-]+$", ".^|*+?(){}-") and not matches("^[.]$", "a")
    assert matches("^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\/\\\\$", ".*+?()[]{}|/\\")
    assert (
        matches("^[--0]+$", "-./0")
        and matches("^[a-c-]+$", "a-c")
        and not matches("^[a-c-]$", "b-")
    )
    assert matches("^[\\]]$", "]") and matches("^[\\b]$", "\b")
    assert matches("^\\cJ$", "\n") and matches("^[\\cI]$", "\t") and matches("^\\cj$", "\n")
    # not a quantifier: literal, as in ECMA-262
    assert matches("^x{$", "x{") and matches("^}]$", "}]")


def test_unicode_escapes_and_surrogate_pairs_mean_code_points() -> None:
    assert matches("^\\u00e9\\x41\\0$", "éA\0")
    assert matches("^\\uD83D\\uDE00$", "😀") and not matches("^\\uD83D\\uDE00$", "\ud83d\ude00x")
    emoticons = "^[\\uD83D\\uDE00-\\uD83D\\uDE4F]$"
    assert matches(emoticons, "🙂") and not matches(emoticons, "🚀")


def test_named_groups_and_back_references_work() -> None:
    quoted = Validator({"type": "string", "pattern": "^(?<q>['\"]).*\\k<q>$"})
    assert quoted.problems("'it'") == [] and quoted.problems('"it"') == []
    assert quoted.problems("'it\"") == [
        ((), "'\\'it\"' does not match '^(?<q>[\\'\"]).*\\\\k<q>$'")
    ]
    assert matches("^(a|b)\\1$", "aa") and not matches("^(a|b)\\1$", "ab")
    assert matches("^(?<x>\\d)-\\k<x>-\\1$", "7-7-7") and not matches(
        "^(?<x>\\d)-\\k<x>-\\1$", "7-7-8"
    )
    # A group that took no part matches the empty string in ECMA-262 (Python's re would fail).
    assert (
        matches("^(?:(a)|b)\\1$", "b")
        and matches("^(?:(a)|b)\\1$", "aa")
        and not matches("^(?:(a)|b)\\1$", "a")
    )
    assert matches("^(a)?b\\1$", "b") and matches("(?<=(a))b\\1", "aba")


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("\\p{L}+", "the Unicode property escape \\p{L}, which Python's re does not have"),
        ("^\\P{Lu}$", "the Unicode property escape \\P{Lu}"),
        ("\\u{1F600}", "the code point escape \\u{...}"),
        ("(?P<id>a)", "Python's named-group syntax (?P...)"),
        ("(?P=id)", "Python's named-group syntax (?P...)"),
        ("(?i)abc", "the inline flags (?i)"),
        ("(?i:abc)", "the inline flags (?i:"),
        ("(?#note)a", "a comment group (?#...)"),
        ("(?>a+)b", "an atomic group (?>...)"),
        ("(a)?(?(1)b|c)", "a conditional group"),
        ("\\Aabc", "the anchor \\A, which is Python's syntax"),
        ("abc\\Z", "the anchor \\Z, which is Python's syntax"),
        ("abc\\z", "the anchor \\z"),
        ("a*+", "a possessive quantifier (*+)"),
        ("a++b", "a possessive quantifier (++)"),
        ("a{2}+", "a possessive quantifier ({2}+)"),
        ("a{,3}", "the quantifier {,3}, which is Python's syntax"),
        ("[^]", "the class [^], which matches any character in ECMA-262"),
        ("a[]", "the empty class [], which matches nothing in ECMA-262"),
        ("\\c1", "\\c without a letter"),
        ("\\a", "the escape \\a, which ECMA-262 does not define"),
        ("\\N{BULLET}", "the escape \\N"),
        ("\\01", "the octal escape \\01"),
        ("[\\1]", "the octal escape \\1"),
        ("[\\B]", "\\B inside a character class"),
        ("[\\d-z]", "a range with a class escape at one end"),
        ("(?<a$>x)", "the group name 'a$'"),
        ("(?=a)*", "a quantifier on a look-around ((?=a)*)"),
        ("(?<=a+)b", "a look-behind that matches texts of different lengths"),
        ("\\2(a)(b)", "the back-reference \\2 before its group closes"),
        ("(a)\\2", "the back-reference \\2 to a group the pattern does not have"),
        ("\\k<x>", "the back-reference \\k<x> to a group the pattern does not have"),
        ("(?:(a)|b)+\\1", "the back-reference \\1 to a group inside a repeated group"),
        ("(?!(a))b\\1", "the back-reference \\1 to a group inside a negative look-around"),
        ("(?<=(a)\\1)", "the back-reference \\1 inside a look-behind"),
        ("(" * 101 + ")" * 101, "groups nested more than 100 deep"),
    ],
)
def test_a_pattern_python_cannot_honour_is_refused_with_a_sentence_naming_it(
    pattern: str, words: str
) -> None:
    message = refusal(
        {"type": "object", "properties": {"a": {"type": "string", "pattern": pattern}}}
    )
    assert message.startswith(f"{pattern!r} is not supported by reactor's validator: it uses "), (
        message
    )
    assert words in message, message
    assert message.endswith(" at ['properties', 'a', 'pattern']"), message


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("[a-", "unterminated character set"),
        ("(", "missing ), unterminated subpattern"),
        ("a)", "unbalanced parenthesis"),
        ("*a", "nothing to repeat"),
        ("^*", "nothing to repeat"),
        ("a$+", "nothing to repeat"),
        ("\\b?", "nothing to repeat"),
        ("a**", "a quantifier right after another (**)"),
        ("a{2,1}", "min repeat greater than max repeat"),
        ("[z-a]", "bad character range z-a"),
        ("\\x4", "incomplete escape \\x4"),
        ("\\u12", "incomplete escape \\u12"),
        ("a\\", "bad escape (end of pattern)"),
        ("(?<a>x)(?<a>y)", "redefinition of group name 'a'"),
        ("a{99999999999}", "the repetition number is too large"),
    ],
)
def test_an_invalid_pattern_is_refused_as_before(pattern: str, words: str) -> None:
    message = refusal({"pattern": pattern})
    assert pattern in message or repr(pattern) in message
    assert words in message, message


def test_pattern_properties_and_additional_properties_follow_the_same_rules() -> None:
    validator = Validator(
        {
            "type": "object",
            "patternProperties": {"^[a-z]+$": {"type": "integer"}, "^\\d+$": {}},
            "additionalProperties": False,
        }
    )
    assert validator.problems({"abc": 1, "12": "x"}) == []
    assert validator.problems({"abc": "x"}) == [(("abc",), "'x' is not of type 'integer'")]
    assert validator.problems({"abc\n": 1}) == [
        ((), "'abc\\n' does not match any of the regexes: '^[a-z]+$', '^\\\\d+$'")
    ]
    assert validator.problems({"٣": 1, "é": 2}) == [
        ((), "'é', '٣' do not match any of the regexes: '^[a-z]+$', '^\\\\d+$'")
    ]
    typed = Validator({"patternProperties": {"^\\w+$": {"type": "string"}}})
    assert typed.problems({"é": 1, "\u00a0": 2}) == []
    assert typed.problems({"a_1": 1}) == [(("a_1",), "1 is not of type 'string'")]
    assert "'\\\\p{L}' is not supported by reactor's validator" in refusal(
        {"patternProperties": {"\\p{L}": {}}}
    )
    assert refusal({"properties": {"m": {"patternProperties": {"(?i)x": {}}}}}).endswith(
        "at ['properties', 'm', 'patternProperties', '(?i)x']"
    )
    names = Validator({"propertyNames": {"pattern": "^[a-z]+$"}})
    assert names.problems({"ok": 1, "no\n": 2}) == [((), "'no\\n' does not match '^[a-z]+$'")]


def test_a_translation_is_made_once_and_shared() -> None:
    assert ecma_regex("^[a-z0-9]+(-[a-z0-9]+)*$") is ecma_regex("^[a-z0-9]+(-[a-z0-9]+)*$")
    with pytest.raises(SchemaError, match="the Unicode property escape"):
        ecma_regex("\\p{L}")


def test_cms_slug_parameters_refuse_a_trailing_newline_through_the_tool_argument_check() -> None:
    bundle = load_agent_tools(ROOT / "plugins" / "cms" / "agent-tools.json")
    slugged = [
        tool
        for tool in bundle["commands"]
        if "pattern" in (tool.get("parameters") or {}).get("properties", {}).get("slug", {})
    ]
    assert len(slugged) == 7
    for tool in slugged:
        assert tool["parameters"]["properties"]["slug"]["pattern"] == "^[a-z0-9]+(-[a-z0-9]+)*$"
        for raw in ({"slug": "hello-world\n"}, json.dumps({"slug": "hello-world\n"})):
            with pytest.raises(ToolError) as info:
                parse_tool_arguments(tool["name"], raw, tool["parameters"])
            assert info.value.code == "invalid_arguments"
            assert {
                "path": "$.slug",
                "message": "'hello-world\\n' does not match '^[a-z0-9]+(-[a-z0-9]+)*$'",
            } in (info.value.details["problems"]), tool["name"]
        for bad in ("Hello-World", "hello--world", "héllo", "hello-world\r", "\nhello-world"):
            with pytest.raises(ToolError):
                parse_tool_arguments(tool["name"], {"slug": bad}, tool["parameters"])
        try:
            parse_tool_arguments(tool["name"], {"slug": "hello-world-2"}, tool["parameters"])
        except ToolError as error:  # another required argument may be missing, but not the slug's
            assert all(problem["path"] != "$.slug" for problem in error.details["problems"]), tool[
                "name"
            ]


# --- against ECMA-262 itself: Node's RegExp ---

ATOMS = [
    "a",
    "b",
    "1",
    "é",
    "-",
    ".",
    "^",
    "$",
    "\\d",
    "\\D",
    "\\w",
    "\\W",
    "\\s",
    "\\S",
    "\\b",
    "\\B",
    "\\n",
    "\\t",
    "\\v",
    "\\f",
    "\\0",
    "\\cJ",
    "\\x41",
    "\\u00e9",
    "\\u2028",
    "\\uD83D\\uDE00",
    "\\$",
    "\\.",
    "\\^",
    "\\*",
    "\\/",
    "\\{",
    "\\}",
    "\\|",
    "[a-c]",
    "[^a]",
    "[\\s\\S]",
    "[^\\S]",
    "[a\\S]",
    "[^a\\S]",
    "[\\d.]",
    "[^\\d\\s]",
    "[$^]",
    "[-a]",
    "[\\w-]",
    "[\\b]",
    "[\\]]",
    "[\\s]",
    "[^\\d]",
    "[\\W]",
    "[\\D]",
    "[\\cJ]",
    "[\\x41-\\x5a]",
    "[\\u00e0-\\u00ff]",
    "[.$]",
    "[--0]",
    "[a-c-0]",
    "[\\t-\\r]",
    "[^\\W\\d]",
    "[\\S\\d]",
    "[^\\S\\n]",
    "[٣]",
    "[\\u0660-\\u0669]",
    "[\\-]",
    "(a|b)",
    "(?:ab)",
    "(.)",
    "(?=a)",
    "(?!b)",
    "(?<=a)",
    "(?<!b)",
    "(?<=\\w)",
    "(?<!\\s)",
    "(?=$)",
    "(?=.$)",
    "(?<n>[ab])",
    "(?<m>\\w)\\k<m>",
    "(?:(?<o>a)|b)\\k<o>",
    "\u00a0",
]
QUANTIFIERS = ["", "", "", "*", "+", "?", "{2}", "{1,2}", "{0,}", "*?", "+?", "??"]
# No astral characters in the strings: V8 tries \B between the halves of a surrogate pair, even
# with the u flag; ECMA-262 and Python's re look only between code points.
CHARS = [
    "a",
    "b",
    "c",
    "1",
    "A",
    "Z",
    "_",
    "-",
    ".",
    "$",
    "^",
    "é",
    "ß",
    "٣",
    "K",
    "\u212a",
    "\n",
    "\r",
    "\t",
    "\x0b",
    "\x0c",
    " ",
    "\u00a0",
    "\ufeff",
    "\u3000",
    "\u2028",
    "\u2029",
    "\u205f",
    "\x1c",
    "\x1f",
    "\u0085",
    "\u180e",
    "\u200b",
    "\x00",
    "\x08",
    "ab",
    "aa",
]


def generated_pattern(rng: random.Random) -> str:
    pattern = "".join(rng.choice(ATOMS) + rng.choice(QUANTIFIERS) for _ in range(rng.randint(1, 4)))
    roll = rng.random()
    if roll < 0.15:
        pattern = f"{pattern}|{rng.choice(ATOMS)}"
    elif roll < 0.25:
        pattern = f"({pattern})\\1"
    elif roll < 0.35:
        pattern = f"^(?:{pattern})$"
    return pattern


@pytest.mark.skipif(
    shutil.which("node") is None, reason="needs Node.js, the reference ECMA-262 engine"
)
def test_every_verdict_matches_nodes_regexp_on_generated_patterns_and_strings() -> None:
    rng = random.Random(20262)
    cases = [
        (
            generated_pattern(rng),
            ["".join(rng.choice(CHARS) for _ in range(rng.randint(0, 4))) for _ in range(10)],
        )
        for _ in range(2500)
    ]
    script = """
        const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
        process.stdout.write(JSON.stringify(cases.map(([pattern, texts]) => {
            let regexp;
            try {
                regexp = new RegExp(pattern, "u");
            } catch (error) {
                return String(error.message);
            }
            return texts.map((text) => regexp.test(text));
        })));
    """
    node = subprocess.run(
        ["node", "-e", script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
        timeout=120,
    )
    compared = refused = 0
    for (pattern, texts), expected in zip(cases, json.loads(node.stdout)):
        try:
            regex = ecma_regex(pattern)
        except SchemaError as error:
            refused += 1
            # Refused: ECMA-262 refuses it too, or ECMA-262 and Python's re would disagree on it.
            assert isinstance(expected, str) or "the back-reference" in error.message, (
                pattern,
                error.message,
            )
            continue
        assert not isinstance(expected, str), (pattern, expected)
        assert [regex.search(text) is not None for text in texts] == expected, pattern
        compared += len(texts)
    assert compared > 15_000 and refused < len(cases) / 3
