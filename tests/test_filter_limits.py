"""Filter size (issue 26 row 6): the tokenizer is linear in time and memory in both dialects, and the hive dialect,
the one a metastore server takes from its clients, refuses filters and IN lists over its documented limits before
any parsing. Memory is measured with tracemalloc (Python's allocations, `re`'s backtracking stack included).

Before: the hive dialect's string token regex kept about 250 bytes of backtracking state per character (a 90 MB
filter grew the server to 23 GB), which `test_a_long_string_literal_costs_memory_linear_in_its_length` catches.
"""

from __future__ import annotations

import contextlib
import re
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.errors import FilterSyntaxError, LimitExceededError
from sargable.expr import parser
from sargable.expr.parser import MAX_HIVE_FILTER_CHARS, MAX_HIVE_IN_VALUES
from sargable.expr.tokens import string_value, tokenize

MIB = 2**20


def peak_bytes(fn: Callable[[], Any]) -> int:
    """The peak of Python allocations while `fn` runs (its result and exceptions dropped)."""
    tracemalloc.start()
    try:
        with contextlib.suppress(sg.SargableError):
            fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_90_mb_hive_filter_is_refused_before_parsing() -> None:
    text = "ds = '" + "x" * (90 * 10**6) + "'"
    with pytest.raises(LimitExceededError, match="over the hive dialect's limit of 1,048,576"):
        sg.parse(text, dialect="hive")
    assert peak_bytes(lambda: sg.parse(text, dialect="hive")) < MIB


def test_a_4_mb_hive_filter_of_valid_text_is_refused_within_bounded_memory() -> None:
    text = " or ".join(f"ds = '2024-01-{i % 28 + 1:02d}'" for i in range(4 * 10**6 // 20))
    assert len(text) > 4 * 10**6
    with pytest.raises(LimitExceededError):
        sg.parse(text, dialect="hive")
    assert peak_bytes(lambda: sg.parse(text, dialect="hive")) < MIB


@pytest.mark.parametrize("dialect", ["hive", "sql"])
@pytest.mark.parametrize("body", ["x" * 10**6, "a\\b" * 300_000, "a''" * 300_000, "\\'''" * 200_000])
def test_a_long_string_literal_costs_memory_linear_in_its_length(dialect: str, body: str) -> None:
    text = f"ds = '{body}'"
    if dialect == "hive" and len(text) > MAX_HIVE_FILTER_CHARS:
        text = text[: MAX_HIVE_FILTER_CHARS - 1] + "'"
    try:
        tokens = tokenize(text, dialect)
    except FilterSyntaxError:
        return  # (a quote left alone by the cut): refused at once
    peak = peak_bytes(lambda: string_value(tokenize(text, dialect).raws[2], dialect))
    assert tokens.kinds[:3] == ["name", "op", "str"]
    assert peak < 8 * len(text), f"{peak / len(text):.1f} bytes per character"


def test_filters_at_the_limits_parse() -> None:
    text = "ds = '" + "x" * (MAX_HIVE_FILTER_CHARS - 7) + "'"
    assert len(text) == MAX_HIVE_FILTER_CHARS
    assert len(sg.parse(text, dialect="hive").right.value) == MAX_HIVE_FILTER_CHARS - 7
    assert len(sg.parse(text + " ", dialect="sql").right.value) == MAX_HIVE_FILTER_CHARS - 7  # no limit there


def test_in_lists_over_the_limit_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert MAX_HIVE_IN_VALUES == 100_000
    monkeypatch.setattr(parser, "MAX_HIVE_IN_VALUES", 5)
    assert len(sg.parse("hr in (1, 2, 3, 4, 5)", dialect="hive").values) == 5
    assert len(sg.parse("hr in (1, 2, 3, 4, 5, 6)").values) == 6  # the sql dialect has no limit
    with pytest.raises(LimitExceededError, match="an IN list of more than 5 values"):
        sg.parse("hr in (1, 2, 3, 4, 5, 6)", dialect="hive")
    with pytest.raises(LimitExceededError, match="an IN list of more than 5 values"):
        sg.parse("(a, b) in ((1, 2), (1, 2), (1, 2), (1, 2), (1, 2), (1, 2))", dialect="hive")


_OLD_COMMON_TAIL = r"""
    | (?P<quoted>`[^`]*(?:``[^`]*)*`)
    | (?P<op>[<>=!]+)
    | (?P<punct>[(),-])
    | (?P<open>['"`])
    | (?P<end>\Z)
    | (?P<other>.)
    )"""
_OLD_HIVE_STRING = r"""'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*\""""
_OLD_TOKENS = {
    "sql": re.compile(
        r"""\s*(?:
      (?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<str>'[^']*(?:''[^']*)*'|"[^"]*(?:""[^"]*)*\")"""
        + _OLD_COMMON_TAIL,
        re.VERBOSE | re.DOTALL,
    ),
    "hive": re.compile(
        r"""\s*(?:
      (?P<word>[0-9]*[A-Za-z_][A-Za-z0-9_]*)
    | (?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    | (?P<str>(?:"""
        + _OLD_HIVE_STRING
        + r")(?:\s*(?:"
        + _OLD_HIVE_STRING
        + "))*)"
        + _OLD_COMMON_TAIL,
        re.VERBOSE | re.DOTALL,
    ),
}


def old_tokens(text: str, dialect: str) -> list[tuple[str, str, int]] | int:
    """What the token regexes the tokenizer had before (the oracle, on small texts) read: (group, raw, start) of
    each string, name or number token, or the position of the first lexical error."""
    out = []
    for match in _OLD_TOKENS[dialect].finditer(text):
        group = match.lastgroup
        assert group is not None
        if group in ("open", "other"):
            return match.start(group)
        if group in ("str", "quoted", "word", "num"):
            out.append(("name" if group == "word" else group, match.group(group), match.start(group)))
    return out


def old_string_value(raw: str) -> str:
    """The hive dialect's string value as the old regexes made it."""
    pieces = re.findall(_OLD_HIVE_STRING, raw, re.DOTALL)
    return "".join(re.sub(r"\\.|" + p[0] * 2, lambda m: m[0] if m[0][0] == "\\" else m[0][0], p[1:-1]) for p in pieces)


@settings(max_examples=500, deadline=None)
@given(st.text("ab'\"`\\ ,", max_size=14), st.sampled_from(["sql", "hive"]))
def test_strings_tokenize_as_the_old_regexes_did(text: str, dialect: str) -> None:
    expected = old_tokens(text, dialect)
    try:
        tokens = tokenize(text, dialect)
    except FilterSyntaxError as exc:
        assert exc.position == expected, (text, expected)
        return
    kept = {"str", "quoted", "name", "num"}
    found = [(k, r, s) for k, r, s in zip(tokens.kinds, tokens.raws, tokens.starts, strict=True) if k in kept]
    assert found == expected, text
    for kind, raw, _ in found:
        if kind == "str" and dialect == "hive":
            assert string_value(raw, dialect) == old_string_value(raw)
