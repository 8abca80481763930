r"""JSON Schema's patterns are ECMA-262 regular expressions; this reads them with Python's re.

Python's re reads the same text differently: its `$` also matches before a final newline (so
"^[a-z]+$" would accept "abc" and a newline), its `.` matches CR, U+2028 and U+2029, its `\d`,
`\w` and `\b` know every script's digits and letters, its `\s` is another set, and it has syntax
ECMA-262 lacks (or means otherwise). Each pattern is translated once by a small tokenizer and
compiled with re.ASCII; a pattern whose meaning Python cannot keep is refused with a sentence
saying what and why. Tests compare verdicts with Node's RegExp (test_json_schema_patterns.py).
"""

from __future__ import annotations

import re
from typing import Any

from .errors import ReactorError

_ECMA_SPACE = (
    r"\t\n\v\f\r\x20\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"  # ECMA-262 \s
)
_CLASS_ESCAPES = {
    "d": r"\d",
    "D": r"\D",
    "w": r"\w",
    "W": r"\W",  # ASCII under re.ASCII, as in ECMA-262
    "s": f"[{_ECMA_SPACE}]",
    "S": f"[^{_ECMA_SPACE}]",
}
_ECMA_DOT = r"[^\n\r\u2028\u2029]"  # `.` is anything but ECMA-262's four line terminators
# \B: Python's re (before 3.14) never finds it in an empty string, where ECMA-262 does.
_ECMA_NOT_BOUNDARY = r"(?:(?<=\w)(?=\w)|(?<!\w)(?!\w))"
_MAX_NESTING = 100  # groups nested deeper are refused: Python's parser recurses once per level
_MAX_REGEXES = 4096
_REGEXES: dict[str, Any] = {}  # pattern -> its compiled translation, or the sentence refusing it


class _Refused(ReactorError):
    """The pattern uses what str(self) names, whose meaning Python's re would not keep."""


def translate(pattern: str) -> re.Pattern[str] | str:
    """The compiled translation of `pattern` (cached), or the sentence refusing it."""
    found = _REGEXES.get(pattern)
    if found is None:
        if len(_REGEXES) >= _MAX_REGEXES:
            _REGEXES.clear()
        found = _REGEXES[pattern] = _compiled(pattern)
    return found


def _compiled(pattern: str) -> re.Pattern[str] | str:
    try:
        return re.compile(_translated(pattern), re.ASCII)
    except _Refused as refused:
        return f"{pattern!r} is not supported by reactor's validator: it uses {refused}"
    except re.error as error:
        if "look-behind requires fixed-width" in error.msg:
            return (
                f"{pattern!r} is not supported by reactor's validator: it uses a look-behind that "
                "matches texts of different lengths, which Python's re cannot do"
            )
        return f"{pattern!r} is not a valid regular expression: {error.msg}"
    except (OverflowError, RecursionError) as error:
        return f"{pattern!r} is not a valid regular expression: {error}"


def _translated(pattern: str) -> str:
    """Python's re spelling of the ECMA-262 `pattern` (to compile with re.ASCII)."""
    out: list[str] = []
    end = len(pattern)
    i = 0
    groups = 0  # capturing groups opened so far; group n is the n-th "(" that captures
    names: dict[str, int] = {}
    closed: set[int] = set()
    repeated: set[int] = set()  # groups inside (or being) a group that may match more than once
    negative: set[int] = set()  # groups inside a negative look-around
    references: list[
        tuple[Any, bool, str]
    ] = []  # (number or name, its group had closed, as written)
    stack: list[
        tuple[str, int, int]
    ] = []  # open groups: (how it opened, its first capturing group, where)
    behind = negated = 0  # open look-behinds, open negative look-arounds
    last: tuple[int, int] | None = None  # the capturing groups (first, last) of a group just closed
    look: int | None = (
        None  # where a look-around just closed had opened (None: the token before was none)
    )
    anchored = False  # the token before was ^, $, \b or \B
    quantified: int | None = None  # where the token before started, when it was a quantifier
    while i < end:
        c = pattern[i]
        closing: tuple[int, int] | None = None
        closed_look: int | None = None
        anchor = False
        quantifier = _quantifier(pattern, i) if c == "{" else None
        if c in "*+?" or quantifier is not None:
            if quantified is not None:
                twice = pattern[quantified : i + 1]
                raise _Refused(
                    f"a possessive quantifier ({twice}), which is Python's syntax, not ECMA-262's"
                    if c == "+"
                    else f"a quantifier right after another ({twice})"
                )
            most, after = (None if c != "?" else 1, i + 1) if quantifier is None else quantifier
            if look is not None:
                raise _Refused(
                    f"a quantifier on a look-around ({pattern[look : i + 1]}), which "
                    "ECMA-262 refuses"
                )
            if anchored:
                raise re.error("nothing to repeat")  # after ^, $, \b or \B
            if last is not None and (most is None or most > 1):
                repeated.update(range(last[0], last[1] + 1))
            if pattern.startswith("?", after):  # lazy
                after += 1
            out.append(pattern[i:after])
            last, look, anchored, quantified = None, None, False, i
            i = after
            continue
        if c == "\\":
            kind, value, i = _escape(pattern, i, in_class=False)
            if kind == "char":
                out.append(_literal(value))
            elif kind == "class":
                out.append(_CLASS_ESCAPES[value])
            elif kind == "assert":
                anchor = True
                out.append(r"\b" if value == "b" else _ECMA_NOT_BOUNDARY)
            else:
                written = f"\\{value}" if isinstance(value, int) else f"\\k<{value}>"
                if behind:
                    raise _Refused(
                        f"the back-reference {written} inside a look-behind, which ECMA-262 "
                        "matches right to left and Python's re cannot"
                    )
                number = value if isinstance(value, int) else names.get(value, 0)
                references.append((value, number in closed, written))
                # A group that took no part matches "" in ECMA-262; in Python's re it fails the
                # match.
                out.append(
                    f"(?({number})\\{number})"
                    if isinstance(value, int) and number < 100
                    else f"(?({value})(?P={value}))"
                )
        elif c == "[":
            text, i = _class(pattern, i)
            out.append(text)
        elif c == "(":
            if len(stack) >= _MAX_NESTING:
                raise _Refused(f"groups nested more than {_MAX_NESTING} deep")
            first, start = groups + 1, i
            head = pattern[i : i + 4]
            if not head.startswith("(?"):
                kind, i = "(", i + 1
                groups += 1
                out.append("(")
            elif head.startswith(("(?:", "(?=", "(?!")):
                kind, i = head[:3], i + 3
                out.append(kind)
            elif head in ("(?<=", "(?<!"):
                kind, i = head, i + 4
                out.append(kind)
            elif head.startswith("(?<"):
                close = pattern.find(">", i + 3)
                if close < 0:
                    raise re.error("missing >, unterminated name")
                name = pattern[i + 3 : close]
                if not name.isidentifier():
                    raise _Refused(f"the group name {name!r}, which Python's re cannot use")
                if name in names:
                    raise re.error(f"redefinition of group name {name!r}")
                kind, i = "(", close + 1
                groups += 1
                names[name] = groups
                out.append(f"(?P<{name}>")
            else:
                raise _Refused(_python_group(pattern, i))
            if kind == "(" and negated:
                negative.add(groups)
            behind += kind.startswith("(?<")
            negated += kind in ("(?!", "(?<!")
            stack.append((kind, first, start))
        else:
            if c == ")":
                if stack:
                    kind, first, opened = stack.pop()
                    behind -= kind.startswith("(?<")
                    negated -= kind in ("(?!", "(?<!")
                    closing = (first, groups)
                    if kind == "(":
                        closed.add(first)
                    elif kind != "(?:":
                        closed_look = opened
                out.append(")")
            elif c == ".":
                out.append(_ECMA_DOT)
            elif c == "$":
                anchor = True
                out.append(r"\Z")  # the very end; Python's `$` would also match before a final "\n"
            elif c in "^|":
                anchor = c == "^"
                out.append(c)
            elif c == "{" and _python_quantifier(pattern, i):
                raise _Refused(
                    f"the quantifier {pattern[i : pattern.index('}', i) + 1]}, which is Python's "
                    "syntax, not ECMA-262's (write {0,n})"
                )
            else:
                # ], } and a { that starts no quantifier are literal too
                out.append(_literal(ord(c)))
            i += 1
        last, look, anchored, quantified = closing, closed_look, anchor, None
    for value, was_closed, written in references:
        found = value if isinstance(value, int) else names.get(value)
        if found is None or found > groups:
            raise _Refused(f"the back-reference {written} to a group the pattern does not have")
        number = found
        if not was_closed:
            raise _Refused(
                f"the back-reference {written} before its group closes, which ECMA-262 "
                "matches as empty and Python's re refuses"
            )
        if number in repeated:
            raise _Refused(
                f"the back-reference {written} to a group inside a repeated group, whose capture "
                "ECMA-262 forgets on each repetition and Python's re keeps"
            )
        if number in negative:
            raise _Refused(f"the back-reference {written} to a group inside a negative look-around")
        if number >= 100 and isinstance(value, int):
            raise _Refused(f"the back-reference {written}; name the group to refer to it")
    return "".join(out)


def _quantifier(pattern: str, i: int) -> tuple[int | None, int] | None:
    """For "{n}", "{n,}" or "{n,m}" at pattern[i]: (the most it repeats, None for no limit; the
    index after it). None for any other "{", which ECMA-262 reads as a literal."""
    end = len(pattern)
    j = i + 1
    while j < end and "0" <= pattern[j] <= "9":
        j += 1
    if j == i + 1 or j >= end:
        return None
    if pattern[j] == "}":
        return int(pattern[i + 1 : j]), j + 1
    if pattern[j] != ",":
        return None
    k = j + 1
    while k < end and "0" <= pattern[k] <= "9":
        k += 1
    if k >= end or pattern[k] != "}":
        return None
    return (int(pattern[j + 1 : k]) if k > j + 1 else None), k + 1


def _python_quantifier(pattern: str, i: int) -> bool:
    """Whether pattern[i:] starts with "{,n}" or "{,}", quantifiers in Python's re only."""
    j = i + 2
    while j < len(pattern) and "0" <= pattern[j] <= "9":
        j += 1
    return pattern.startswith("{,", i) and pattern.startswith("}", j)


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, Any, int]:
    """Read the escape starting with the backslash at pattern[i]: ("char", code point),
    ("class", "d" / "D" / "w" / "W" / "s" / "S"), ("assert", "b" / "B") or ("ref", group number or
    name), and the index after it."""
    if i + 1 >= len(pattern):
        raise re.error("bad escape (end of pattern)")
    c = pattern[i + 1]
    after = i + 2
    if c in "dDwWsS":
        return "class", c, after
    if c in "fnrtv":
        return "char", ord("\f\n\r\t\v"["fnrtv".index(c)]), after
    if c in "bB":
        if not in_class:
            return "assert", c, after
        if c == "b":
            return "char", 8, after  # backspace, in a class
        raise _Refused("\\B inside a character class")
    if c == "c":
        letter = pattern[after : after + 1]
        if letter.isascii() and letter.isalpha():
            return "char", ord(letter) % 32, after + 1
        raise _Refused("\\c without a letter after it (a control escape is \\cA to \\cZ)")
    if "0" <= c <= "9":
        digits = after
        while digits < len(pattern) and "0" <= pattern[digits] <= "9":
            digits += 1
        if c == "0" and digits == after:
            return "char", 0, after
        if c == "0" or in_class:
            raise _Refused(
                f"the octal escape {pattern[i:digits]}, which ECMA-262 refuses in a Unicode pattern"
            )
        return "ref", int(pattern[i + 1 : digits]), digits
    if c == "x":
        code = _hex(pattern[after : after + 2], 2)
        if code is None:
            raise re.error("incomplete escape \\x" + pattern[after : after + 2])
        return "char", code, after + 2
    if c == "u":
        if pattern.startswith("{", after):
            raise _Refused(
                "the code point escape \\u{...}, which means a code point only with ECMA-262's "
                "u flag (write \\uHHHH, a pair of them, or the character itself)"
            )
        code = _hex(pattern[after : after + 4], 4)
        if code is None:
            raise re.error("incomplete escape \\u" + pattern[after : after + 4])
        after += 4
        # a surrogate pair: one code point
        if 0xD800 <= code < 0xDC00 and pattern.startswith("\\u", after):
            low = _hex(pattern[after + 2 : after + 6], 4)
            if low is not None and 0xDC00 <= low < 0xE000:
                return "char", 0x10000 + (code - 0xD800) * 0x400 + (low - 0xDC00), after + 6
        return "char", code, after
    if c == "k":
        close = pattern.find(">", after)
        if in_class or not pattern.startswith("<", after) or close < 0:
            raise _Refused(
                "\\k without a group name (\\k<name>)"
                + (" inside a character class" if in_class else "")
            )
        return "ref", pattern[after + 1 : close], close + 1
    if c in "pP":
        close = pattern.find("}", after) if pattern.startswith("{", after) else -1
        written = pattern[i : close + 1] if close > 0 else pattern[i:after]
        raise _Refused(f"the Unicode property escape {written}, which Python's re does not have")
    if c in "AZz":
        raise _Refused(f"the anchor \\{c}, which is Python's syntax, not ECMA-262's (write ^ or $)")
    if c.isascii() and c.isalnum():
        raise _Refused(f"the escape \\{c}, which ECMA-262 does not define")
    return "char", ord(c), after  # an escaped punctuation mark (or other character) is itself


def _hex(text: str, size: int) -> int | None:
    if len(text) != size or any(c not in "0123456789abcdefABCDEF" for c in text):
        return None
    return int(text, 16)


def _literal(code: int) -> str:
    """The character as a Python pattern that matches just it, inside or outside a class."""
    char = chr(code)
    if code >= 0x80 or char.isalnum() or char == "_":
        return char
    return f"\\x{code:02x}"


def _class(pattern: str, i: int) -> tuple[str, int]:
    """The character class starting at pattern[i] == "[" in Python's re, and the index after it."""
    end = len(pattern)
    j = i + 1
    negate = pattern.startswith("^", j)
    j += negate
    if pattern.startswith("]", j):
        raise _Refused(
            "the class [^], which matches any character in ECMA-262 and opens a class in "
            "Python's re (write [\\s\\S])"
            if negate
            else "the empty class [], which matches nothing in ECMA-262 and opens a class in "
            "Python's re"
        )
    members: list[str] = []
    not_space = False  # \S: Python's re cannot name ECMA-262's non-space inside a class
    while True:
        if j >= end:
            raise re.error("unterminated character set")
        if pattern[j] == "]":
            break
        kind, value, j = _class_atom(pattern, j)
        if pattern.startswith("-", j) and j + 1 < end and pattern[j + 1] != "]":
            high_kind, high, j = _class_atom(pattern, j + 1)
            if kind != "char" or high_kind != "char":
                raise _Refused("a range with a class escape at one end (such as [\\d-z])")
            if value > high:
                raise re.error(f"bad character range {chr(value)}-{chr(high)}")
            members.append(f"{_literal(value)}-{_literal(high)}")
        elif kind == "char":
            members.append(_literal(value))
        elif value == "s":
            members.append(_ECMA_SPACE)
        elif value == "S":
            not_space = True
        else:
            members.append("\\" + value)
    body = "".join(members)
    if not not_space:
        return f"[^{body}]" if negate else f"[{body}]", j + 1
    if negate:  # neither a member nor a non-space: a space that is no member
        return f"(?:(?![{body}])[{_ECMA_SPACE}])" if body else f"[{_ECMA_SPACE}]", j + 1
    return f"(?:[{body}]|[^{_ECMA_SPACE}])" if body else f"[^{_ECMA_SPACE}]", j + 1


def _class_atom(pattern: str, j: int) -> tuple[str, Any, int]:
    if pattern[j] == "\\":
        return _escape(pattern, j, in_class=True)
    return "char", ord(pattern[j]), j + 1


def _python_group(pattern: str, i: int) -> str:
    """What the "(?" at pattern[i] opens that ECMA-262 has not."""
    mark = pattern[i + 2 : i + 3]
    if mark == "P":
        return "Python's named-group syntax (?P...) (ECMA-262 writes (?<name>...) and \\k<name>)"
    if mark == "#":
        return "a comment group (?#...), which is Python's syntax, not ECMA-262's"
    if mark == ">":
        return "an atomic group (?>...), which is Python's syntax, not ECMA-262's"
    if mark == "(":
        return "a conditional group (?(...)...), which is Python's syntax, not ECMA-262's"
    flags = i + 2
    while flags < len(pattern) and (pattern[flags].isalpha() or pattern[flags] == "-"):
        flags += 1
    if flags > i + 2:
        return f"the inline flags {pattern[i : flags + 1]} (JSON Schema's patterns take no flags)"
    return f"the group syntax {pattern[i : i + 3]}, which ECMA-262 does not have"
