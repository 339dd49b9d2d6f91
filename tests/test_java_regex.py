"""Java regular expressions translated to Python's `re`: java.util.regex itself (in a JVM) is the oracle.

Hypothesis draws Java patterns from a model of Pattern's syntax (nested groups, flags, classes with nesting and
intersections, quantifiers of every kind, anchors, escapes) and values rich in what the two engines read
differently (line terminators, non-ASCII letters and digits, case); the translated pattern must match exactly the
values Java matches, both for `String.matches` (the hive dialect's LIKE) and for `find` (its RLIKE). A pattern Java
rejects must be rejected; a pattern refused as untranslatable must be one of the documented kinds.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sargable.errors import PatternError
from sargable.expr.java_regex import translate_java_regex
from sargable.expr.like import compile_regex

if TYPE_CHECKING:
    from hive_oracle import HiveOracle

pytest_plugins = ["hive_oracle"]


LITERALS = [
    "a",
    "b",
    "A",
    "B",
    "x",
    "1",
    "_",
    " ",
    "-",
    "é",
    "É",
    "\u0661",
    "\\.",
    "\\$",
    "\\\\",
    "\\[",
    "\\{",
    "\\x41",
    "\\u00e9",
    "\\0101",
    "\\cA",
    "\\e",
    "\\t",
    "\\n",
    "\\r",
    "\\x{1F600}",
    "\\uD83D\\uDE00",
    "}",
    "]",
    "#",
    "&",
    "\\Qa.|\\E",
]
ESCAPED_CLASSES = [
    "\\d",
    "\\D",
    "\\s",
    "\\S",
    "\\w",
    "\\W",
    "\\h",
    "\\H",
    "\\v",
    "\\V",
    "\\p{Lower}",
    "\\P{Alpha}",
    "\\p{Punct}",
    "\\p{XDigit}",
    "\\p{Space}",
    "\\p{ASCII}",
    "\\p{Cntrl}",
]
ANCHORS = ["^", "$", "\\A", "\\Z", "\\z", "\\G"]
QUANTIFIERS = ["*", "+", "?", "{2}", "{0,1}", "{1,}", "{0}"]
FLAGS = ["i", "s", "m", "d", "x", "-i", "i-s", "-x"]
VALUES_ALPHABET = "aAbBx1_ é\n\r\u0085\u2028\u2029\t.$\\{}[]-\u0661\U0001f600"


def class_items() -> st.SearchStrategy[str]:
    single = st.sampled_from(
        ["a", "b", "z", "A", "Z", "0", "9", "-", "é", "\\]", "\\[", "\\-", "^", " ", "\\\\", "\\n", "\\x{85}", "_", "&"]
    )
    ranges = st.sampled_from(["a-c", "A-Z", "0-9", "x-z", "\\x00-\\x1f", "à-ÿ"])
    return st.one_of(single, ranges, st.sampled_from(ESCAPED_CLASSES), st.just("\\Qa-]\\E"))


def char_classes() -> st.SearchStrategy[str]:
    items = st.lists(class_items(), min_size=1, max_size=4).map("".join)
    plain = st.tuples(st.sampled_from(["", "^"]), items).map(lambda p: f"[{p[0]}{p[1]}]")
    nested = st.tuples(items, items).map(lambda p: f"[{p[0]}[{p[1]}]]")
    intersected = st.tuples(items, items, st.sampled_from(["", "^"])).map(lambda p: f"[{p[0]}&&[{p[2]}{p[1]}]]")
    return st.one_of(plain, plain, nested, intersected, st.just("[]a]"), st.just("[^]a]"))


def atoms() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(LITERALS),
        st.sampled_from(ESCAPED_CLASSES),
        st.just("."),
        char_classes(),
        st.sampled_from(ANCHORS),
    )


def quantified(atom: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    suffix = st.tuples(st.sampled_from(QUANTIFIERS), st.sampled_from(["", "", "?", "+"])).map("".join)
    return st.tuples(atom, st.one_of(st.just(""), st.just(""), suffix)).map("".join)


def _group(body: str, kind: str) -> str:
    if kind.startswith("flags"):
        return f"(?{kind[5:]}){body}"
    return f"({kind}{body})"


def patterns() -> st.SearchStrategy[str]:
    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        sequence = st.lists(children, min_size=1, max_size=4).map("".join)
        alternation = st.lists(sequence, min_size=2, max_size=3).map("|".join)
        kinds = st.sampled_from(
            ["", "?:", "?=", "?!", "?>", "?<n>", "?i:", "?-i:", "?s:"] + [f"flags{f}" for f in FLAGS]
        )
        grouped = st.tuples(st.one_of(sequence, alternation), kinds).map(lambda p: _group(*p))
        behind = st.tuples(st.sampled_from(["a", "[ab]", "\\d", "é"]), st.sampled_from(["?<=", "?<!"])).map(
            lambda p: f"({p[1]}{p[0]})"
        )
        return st.one_of(sequence, alternation, quantified(grouped), behind)

    base = quantified(atoms())
    return st.recursive(base, extend, max_leaves=8).map(
        lambda p: p + ("\\1" if p.startswith("(") and not p.startswith("(?") and p.count("(") == 1 else "")
    )


def values(pattern: str) -> st.SearchStrategy[list[str]]:
    pieces = [c for c in re.findall(r"[A-Za-z0-9 .é]", pattern)] or ["a"]
    alphabet = st.sampled_from(sorted(set(VALUES_ALPHABET) | set(pieces)))
    return st.lists(st.lists(alphabet, max_size=6).map("".join), min_size=4, max_size=8)


REFUSED = (
    "the (?u) flag",
    "the (?U) flag",
    "\\p{",
    "\\b",
    "\\B",
    "\\X",
    "\\N{",
    "\\R (Java 8",
    "negated class holding",
    "a class with && other than",
    "case-insensitive back-reference",
    "before that group closes",
    "Python's re rejects it",
    "in time linear in the value",
)


def check(java: HiveOracle, pattern: str, samples: list[str]) -> None:
    for whole in (True, False):
        try:
            translated = translate_java_regex(pattern, whole)
        except PatternError as exc:
            message = str(exc)
            verdict = java.matches(pattern, "", whole)
            if isinstance(verdict, bool):
                assert "cannot translate" in message and any(kind in message for kind in REFUSED), (pattern, message)
            continue
        compiled = re.compile(translated)
        for value in samples:
            expected = java.matches(pattern, value, whole)
            assert isinstance(expected, bool), f"Java rejects {pattern!r} ({expected}) but it was translated"
            found = compiled.match(value) if whole else compiled.search(value)
            assert (found is not None) == expected, (pattern, value, whole, translated)
            assert compile_regex(translated).search(value) == expected, (pattern, value, whole, "linear")


@settings(max_examples=400)
@given(st.data())
def test_translation_matches_what_java_matches(hive_oracle: HiveOracle, data: st.DataObject) -> None:
    pattern = data.draw(patterns(), label="pattern")
    check(hive_oracle, pattern, data.draw(values(pattern), label="values"))


@settings(max_examples=150)
@given(
    st.lists(
        st.sampled_from(
            [
                *LITERALS,
                *ESCAPED_CLASSES,
                *ANCHORS,
                *QUANTIFIERS,
                "(",
                ")",
                "|",
                "[",
                "]",
                "(?",
                "(?i)",
                "(?x)",
                "{",
                ",",
                "\\",
                "\\k<n>",
                "(?<n>",
                "&&",
                "\\1",
                "\\2",
            ]
        ),
        max_size=8,
    ).map("".join),
    st.lists(st.text(VALUES_ALPHABET, max_size=5), min_size=3, max_size=5),
)
def test_token_soup_is_rejected_exactly_when_java_rejects_it(
    hive_oracle: HiveOracle, pattern: str, samples: list[str]
) -> None:
    check(hive_oracle, pattern, samples)


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("a.c", "a\rc", False),  # Java's . stops at every line terminator, Python's only at \n
        ("a.c", "a\u2028c", False),
        ("(?s)a.c", "a\u2028c", True),
        ("(?d)a.c", "a\rc", True),
        ("\\d", "\u0661", False),  # Java's \d, \w, \s are ASCII
        ("\\w+", "é", False),
        ("\\s", "\xa0", False),
        ("(?i)é", "É", False),  # (?i) folds ASCII only
        ("(?i)k", "\u212a", False),
        ("a(?i)b|c", "aB", True),  # inline flags hold to the end of the group, across |
        ("a(?i)b|c", "C", True),
        ("(?:a(?i)b)c", "aBC", False),
        ("a$", "a\n", False),  # String.matches covers the whole value
        ("a$\\n", "a\n", True),
        ("(?m)a$\\r\\nb", "a\r\nb", True),
        ("[a-z&&[^aeiou]]+", "bcd", True),
        ("[a-z&&[^aeiou]]+", "bad", False),
        ("[a-z&&def[x]]+", "dx", True),
        ("[a-[b]]+", "a-b", True),
        ("(?i)\\P{Lower}", "A", False),
        ("\\p{Alpha}+", "abcXYZ", True),
        ("\\Qa.b\\E", "a.b", True),
        ("\\Qa.b\\E", "axb", False),
        ("\\x{1F600}", "\U0001f600", True),
        ("{2}a", "a", True),  # Java repeats the empty string
        ("(?x) a b # comment", "ab", True),
        ("(?x)[ a]", " ", False),
    ],
)
def test_known_differences_are_translated(hive_oracle: HiveOracle, pattern: str, value: str, expected: bool) -> None:
    assert hive_oracle.matches(pattern, value) is expected
    translated = translate_java_regex(pattern, whole=True)
    assert (re.match(translated, value) is not None) is expected
    assert compile_regex(translated).search(value) is expected


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        ("\\p{L}", "\\p{L}, at position 0, has no exact equivalent; only the POSIX classes"),
        ("\\p{IsLatin}", "\\p{IsLatin}"),
        ("(?u)a", "the (?u) flag"),
        ("(?U)\\w", "the (?U) flag"),
        ("\\bword\\b", "\\b (its word characters changed in Java 19)"),
        ("\\X", "\\X (grapheme clusters)"),
        ("x\\R{2}", "\\R (Java 8 and 9+ backtrack into it differently)"),
        ("\\N{LATIN SMALL LETTER A}", "\\N{...}"),
        ("[^a[b]]", "a negated class holding a nested class or && (Java 8 and 9+ differ)"),
        ("[a&&[b]&c]", "a class with && other than [X&&Y]"),
        ("[a-c&&b-d&&c]", "a class with && other than [X&&Y]"),
        ("[&&a]", "a class with && other than [X&&Y]"),
        ("(?i)(a)\\1", "a case-insensitive back-reference"),
        ("(a\\1)", "a back-reference to group 1 before that group closes"),
        ("(?<=a+)b", "look-behind requires fixed-width pattern"),
        ("(?<year>\\d{4})-\\k<year>", "a back-reference, which can't be matched in time linear in the value"),
        ("(a)\\1", "a back-reference"),
        ("a*+a", "a possessive quantifier"),
        ("(?>a|ab)c", "an atomic group"),
        ("(?=.*x).*", "a look-ahead that can match more than 1,000 characters"),
        ("(?:a{200}){200}", "counted repetitions that expand to more than 20,000 states"),
    ],
)
def test_untranslatable_patterns_are_refused_clearly(hive_oracle: HiveOracle, pattern: str, fragment: str) -> None:
    assert isinstance(hive_oracle.matches(pattern, "a"), bool), "Java accepts it: the refusal is sargable's"
    with pytest.raises(PatternError, match="cannot translate the Java regular expression") as info:
        translate_java_regex(pattern, whole=True)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "pattern",
    [
        "a(",
        "a)",
        "[a",
        "a{",
        "x{,3}",
        "*a",
        "a**",
        "\\",
        "\\E",
        "\\0",
        "(?#c)",
        "[b-a]",
        "(?<n>a)(?<n>b)",
        "\\k<m>",
        "\\q",
    ],
)
def test_patterns_java_rejects_are_rejected(hive_oracle: HiveOracle, pattern: str) -> None:
    assert isinstance(hive_oracle.matches(pattern, "a"), str), "Java accepts it"
    with pytest.raises(PatternError, match="invalid regular expression"):
        translate_java_regex(pattern, whole=True)


def test_deep_nesting_is_translated_without_recursion() -> None:
    """The translator walks with its own stack; past what Python's `re` compiles, the refusal is a PatternError."""
    assert translate_java_regex("(" * 200 + "a" + ")" * 200, whole=True).count("(") > 200
    with pytest.raises(PatternError, match="Python's re rejects it"):
        translate_java_regex("(" * 5_000 + "a" + ")" * 5_000, whole=True)
    with pytest.raises(PatternError, match="missing \\)"):
        translate_java_regex("(" * 5_000, whole=True)
