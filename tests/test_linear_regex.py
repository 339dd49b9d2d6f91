"""Linear-time pattern matching (issue 26 row 4): every LIKE, RLIKE and Hive-dialect Java regex is matched without
backtracking, so no pattern can freeze a caller, and on what Python's `re` matches quickly it agrees with `re`.

The hostile cases run in a child process under a timeout (a hang detector, far above the milliseconds they take):
before the linear matcher, each of them ran for minutes to forever inside one `re` call that holds the GIL and can't
be interrupted, so the child timed out and the test failed instead of freezing the test run.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import threading
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sargable.errors import PatternError, UnsupportedPatternError
from sargable.expr.linear_regex import MAX_STATES, compile_linear

ATOMS = ["a", "b", "c", ".", "[ab]", "[^a]", "\\d", "\\w", "\\s", "\\W", "(?i:a)", "(?s:.)", "é", "\\n", "[a-c\\d]"]
POSITIONS = ["^", "$", "\\A", "\\Z", "\\b", "\\B", "(?=a)", "(?!b)", "(?<=a)", "(?<!b)", "(?=a|bc)", "(?m:^)", "(?m:$)"]
QUANTIFIERS = ["", "", "*", "+", "?", "{2}", "{1,3}", "{0,2}", "*?", "+?", "??", "{2,}"]
ALPHABET = "abc \nAé1_"


def patterns() -> st.SearchStrategy[str]:
    """Small patterns of `re` syntax: items, position tests, groups with flags, alternation and quantifiers."""

    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        sequence = st.lists(children, min_size=1, max_size=3).map("".join)
        alternation = st.lists(sequence, min_size=2, max_size=3).map("|".join)
        group = st.tuples(
            st.sampled_from(["(", "(?:", "(?i:", "(?m:", "(?s:", "(?a:"]), st.one_of(sequence, alternation)
        ).map(lambda t: f"{t[0]}{t[1]})")
        return st.one_of(sequence, alternation, st.tuples(group, st.sampled_from(QUANTIFIERS)).map("".join))

    base = st.tuples(st.sampled_from(ATOMS), st.sampled_from(QUANTIFIERS)).map("".join)
    return st.recursive(st.one_of(base, st.sampled_from(POSITIONS)), extend, max_leaves=6)


@settings(max_examples=600, deadline=None)
@given(patterns(), st.booleans(), st.lists(st.text(ALPHABET, max_size=7), min_size=1, max_size=6))
def test_search_agrees_with_re(pattern: str, whole: bool, values: list[str]) -> None:
    """`re` is the oracle: on small patterns and values it is fast, and its answer is the meaning of the syntax."""
    if whole:
        pattern = f"^(?:{pattern})\\Z"
    try:
        oracle = re.compile(pattern)
    except re.error:
        with pytest.raises(PatternError):
            compile_linear(pattern)
        return
    compiled = compile_linear(pattern)
    for value in values:
        assert compiled.search(value) == (oracle.search(value) is not None), (pattern, value)


@pytest.mark.parametrize(
    ("pattern", "what"),
    [
        ("(a)\\1", "a back-reference"),
        ("(?P<x>a)(?P=x)", "a back-reference"),
        ("(a)?(?(1)b|c)", "a conditional on a group"),
        ("a*+b", "a possessive quantifier"),
        ("(?>ab|a)b", "an atomic group"),
        ("(?=.*x)", "a look-ahead that can match more than 1,000 characters"),
        ("(?:a{150}){150}", f"counted repetitions that expand to more than {MAX_STATES:,} states"),
        ("(?<=a{12000})", "look-arounds that read more than 10,000 characters at each position"),
        ("(?=(?=a{99})b{99})", "look-arounds that read more than 10,000 characters at each position"),
    ],
)
def test_constructs_without_linear_matching_are_refused_by_name(pattern: str, what: str) -> None:
    with pytest.raises(UnsupportedPatternError) as info:
        compile_linear(pattern)
    assert info.value.what.startswith(what) and "can't be matched in linear time" in str(info.value)


def test_bounded_look_arounds_nest_and_match_as_re_does() -> None:
    pattern = "(?<=a(?=b))b(?!c{1,3}d)"
    for value in ["ab", "abc", "abcd", "abcccd", "abccccd", "b", "xab"]:
        assert compile_linear(pattern).search(value) == (re.search(pattern, value) is not None), value


HOSTILE = r"""
import sargable as sg
from sargable.expr.like import compile_regex, like_matches

java_dots = sg.parse('ds like "' + ".*" * 39 + 'x"', dialect="hive")   # 80 bytes, issue 26 row 4
nested = sg.parse('ds like "(a+)+b"', dialect="hive")
schema = [("ds", "string")]
row_a = {"ds": "a" * 5_000}
print(sg.evaluate(sg.bind(java_dots, schema), row_a), sg.evaluate(sg.bind(nested, schema), row_a))
print(compile_regex("(x+x+)+y").search("x" * 5_000), compile_regex("(.*a){20}b").search("a" * 5_000))
print(like_matches("a" * 5_000, "%a%a%a%a%a%a%a%a%b"), like_matches("a" * 5_000, "%a_a%a_a%a_a%b"))
"""


def test_hostile_patterns_finish_in_a_child_process() -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(HOSTILE)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"] * 6


def test_memory_stays_bounded_when_the_dfa_would_be_exponential() -> None:
    """`(a|b)*a(a|b){14}` has a DFA of 2^15 states: the cache of built states starts over at its bound."""
    pattern = "(?:a|b)*a(?:a|b){14}c"
    value = "".join("ab"[(i * 7919) % 13 % 2] for i in range(200_000))
    compiled = compile_linear(pattern)
    tracemalloc.start()
    try:
        assert compiled.search(value) is False
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    assert compiled.search(value[:1000] + "c") == (re.search(pattern, value[:1000] + "c") is not None)


def test_one_compiled_pattern_serves_many_threads() -> None:
    """The lazily built DFA is shared: threads building it at once must each get the answer `re` gives."""
    pattern = "^(?:[a-c]*b[a-c]{3}|c+a)\\Z"
    values = ["".join("abc"[(i * j + j) % 3] for j in range(i % 9 + 1)) for i in range(400)]
    expected = [re.search(pattern, v) is not None for v in values]
    compiled = compile_linear(pattern)
    failures: list[str] = []

    def work(offset: int) -> None:
        for index in range(len(values)):
            k = (index + offset) % len(values)
            if compiled.search(values[k]) != expected[k]:
                failures.append(values[k])

    threads = [threading.Thread(target=work, args=(n * 37,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
