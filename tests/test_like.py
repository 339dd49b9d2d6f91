"""LIKE patterns: translation checked against a brute-force matcher, prefixes and ranges for planners, errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sargable.errors import PatternError, SargableError
from sargable.expr.like import (
    compile_regex,
    like_is_exact,
    like_matcher,
    like_matches,
    like_prefix,
    prefix_successor,
    validate_like,
)
from strategies import STRING_ALPHABET, like_patterns

ESCAPES = st.sampled_from([None, "!", "\\"])
texts = st.text(alphabet=STRING_ALPHABET, max_size=8)


def brute_force_like(value: str, pattern: str, escape: str | None) -> bool:
    """SQL LIKE by dynamic programming over (pattern token, value position): an independent oracle."""
    tokens: list[tuple[str, str]] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if escape is not None and char == escape:
            tokens.append(("lit", pattern[index + 1]))
            index += 2
            continue
        tokens.append(("any", "") if char == "%" else ("one", "") if char == "_" else ("lit", char))
        index += 1
    reachable = {0}
    for kind, char in tokens:
        following: set[int] = set()
        for position in reachable:
            if kind == "any":
                following.update(range(position, len(value) + 1))
            elif position < len(value) and (kind == "one" or value[position] == char):
                following.add(position + 1)
        reachable = following
    return len(value) in reachable


@settings(max_examples=300)
@given(st.data())
def test_like_matches_brute_force(data: st.DataObject) -> None:
    escape = data.draw(ESCAPES)
    value = data.draw(texts)
    pattern = data.draw(like_patterns(escape, [value]))
    assert like_matches(value, pattern, escape) == brute_force_like(value, pattern, escape)
    assert like_matcher(pattern, escape)(value) == brute_force_like(value, pattern, escape)


@settings(max_examples=300)
@given(st.data())
def test_prefix_and_rest_describe_the_pattern(data: st.DataObject) -> None:
    escape = data.draw(ESCAPES)
    value = data.draw(texts)
    pattern = data.draw(like_patterns(escape, [value]))
    prefix, rest = like_prefix(pattern, escape)
    matches = like_matches(value, pattern, escape)
    if matches:
        assert value.startswith(prefix)
        assert like_matches(value[len(prefix) :], rest, escape)
    if value.startswith(prefix):
        assert matches == like_matches(value[len(prefix) :], rest, escape)
    if like_is_exact(pattern, escape):
        assert rest == ""
        assert matches == (value == prefix)


@given(st.text(max_size=4), st.text(max_size=6))
def test_prefix_successor_bounds_the_strings_with_that_prefix(prefix: str, value: str) -> None:
    upper = prefix_successor(prefix)
    in_range = prefix <= value and (upper is None or value < upper)
    assert in_range == value.startswith(prefix)


def test_examples() -> None:
    assert like_prefix("abc%") == ("abc", "%")
    assert like_prefix("abc") == ("abc", "")
    assert like_prefix("%abc") == ("", "%abc")
    assert like_prefix("ab_c%") == ("ab", "_c%")
    assert like_prefix("a!%b%c!_", "!") == ("a%b", "%c!_")
    assert like_prefix("a\\%", None) == ("a\\", "%")
    assert like_is_exact("a!%", "!")
    assert not like_is_exact("a%")
    assert prefix_successor("abc") == "abd"
    assert prefix_successor("a\U0010ffff") == "b"
    assert prefix_successor("\U0010ffff") is None
    assert prefix_successor("") is None
    assert prefix_successor("\ud7ff") == "\ue000"
    assert like_matches("a\nb", "a_b")
    assert like_matches("a\nb\n", "a%")
    assert not like_matches("A", "a")
    assert like_matches("😀", "_")
    assert like_matches("a.c", "a.c") and not like_matches("abc", "a.c")
    assert like_matches("a[b]", "a[b]")


@pytest.mark.parametrize(
    ("pattern", "escape", "message"),
    [
        ("abc!", "!", "ends with the escape character"),
        ("a!bc", "!", "precedes 'b'"),
        ("a\\x", "\\", "precedes 'x'"),
        ("x", "ab", "single character"),
        (5, None, "must be a string"),
    ],
)
def test_invalid_escape_usage(pattern: object, escape: str | None, message: str) -> None:
    with pytest.raises(PatternError, match=message):
        validate_like(pattern, escape)  # type: ignore[arg-type]
    with pytest.raises(SargableError):
        like_matcher(pattern, escape)  # type: ignore[arg-type]


def test_escape_may_precede_wildcards_and_itself() -> None:
    validate_like("a!%!_!!", "!")
    assert like_matches("a%_!", "a!%!_!!", "!")


def test_invalid_regular_expressions() -> None:
    assert compile_regex("a+b").search("xaab")
    for bad in ("(", "[a-", "a{2,1}", "*"):
        with pytest.raises(PatternError, match="invalid regular expression"):
            compile_regex(bad)
    with pytest.raises(PatternError):
        compile_regex(["x"])  # type: ignore[arg-type]
