"""Hive name patterns (`get_tables`, `get_databases`; issue 26 row 5): `*` and `|`, case-insensitive, matched as
globs in linear time, the same names a regular expression built from the pattern selects.

The hostile patterns run in a child process under a timeout (a hang detector): before, each became a backtracking
regex (`**********y` is `.*` ten times) that ran for seconds to forever per name, so the child timed out.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sargable.errors import PatternError
from sargable.hms.patterns import MAX_NAME_PATTERN_CHARS, name_matcher

NAME_ALPHABET = "abAB_1*| "


def oracle(pattern: str | None, name: str) -> bool:
    """The pattern as a regular expression (what the handler built before), over the whole name."""
    if not pattern or pattern == "*":
        return True
    parts = [".*".join(re.escape(p) for p in alt.strip().split("*")) for alt in pattern.split("|")]
    return re.fullmatch("|".join(f"(?:{p})" for p in parts), name, re.IGNORECASE | re.DOTALL) is not None


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.none(), st.text(NAME_ALPHABET, max_size=10)), st.lists(st.text("abAB_1 ", max_size=8), max_size=6))
def test_name_patterns_select_what_the_regex_selects(pattern: str | None, names: list[str]) -> None:
    match = name_matcher(pattern)
    assert [n for n in names if match(n)] == [n for n in names if oracle(pattern, n)]


def test_patterns_are_globs_over_the_whole_name() -> None:
    match = name_matcher("sales_* | *_2024|Exact")
    assert [n for n in ["sales_eu", "SALES_us", "x_2024", "exact", "exactly", "sales"] if match(n)] == [
        "sales_eu",
        "SALES_us",
        "x_2024",
        "exact",
    ]
    assert name_matcher("a*b*a")("aba") and not name_matcher("a*b*a")("ab")


def test_a_pattern_over_the_limit_is_refused() -> None:
    name_matcher("*" * MAX_NAME_PATTERN_CHARS)
    with pytest.raises(PatternError, match="longer than the limit of 1,024"):
        name_matcher("*" * 100_000 + "x")


HOSTILE = r"""
from sargable.hms.patterns import name_matcher

names = ["a" * 120 + str(i) for i in range(20)]
match = name_matcher("**********y")
print(sum(match(n) for n in names), sum(name_matcher("*a*a*a*a*a*a*a*a*a*ay")(n) for n in names))
"""


def test_hostile_name_patterns_finish_in_a_child_process() -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(HOSTILE)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0"]
