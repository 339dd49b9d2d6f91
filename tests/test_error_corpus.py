"""The error corpus: malformed filters each raise `FilterSyntaxError` with a caret under the position and a message
that says what was expected there. (Malformed bytes for `loads` are in test_binary.py.)"""

from __future__ import annotations

import pytest

import sargable as sg
from sargable.expr import parse

CORPUS = [
    # empty input
    ("   \n\t ", "empty filter", 0),
    # parentheses
    ("(", "expected a predicate after '(', found end of filter", 1),
    (")", "unbalanced parenthesis: this ')' has no matching '('", 0),
    ("(a = 1", "unbalanced parenthesis: this '(' is never closed", 0),
    ("a = 1)", "unbalanced parenthesis: this ')' has no matching '('", 5),
    ("((a = 1) or b = 2", "unbalanced parenthesis: this '(' is never closed", 0),
    ("a = 1))", "unbalanced parenthesis", 5),
    ("()", "empty parentheses", 0),
    ("a = 1 and ()", "empty parentheses", 10),
    ("x = cast(1 as int) )", "unbalanced parenthesis", 19),
    # unterminated strings and names
    ("a = 'abc", "unterminated string", 4),
    ('a = "abc', "unterminated string", 4),
    ("a = 'it''s", "unterminated string", 8),
    ("`abc = 1", "unterminated quoted identifier", 0),
    ("a = 1 and `x", "unterminated quoted identifier", 10),
    ("`` = 1", "empty quoted identifier", 0),
    # dates and timestamps
    ("a = DATE '2024-02-30'", "bad DATE literal: '2024-02-30' is not a valid date", 9),
    ("a = DATE '2024-13-01'", "month must be in 1..12", 9),
    ("a = DATE 'yesterday'", "expected YYYY-MM-DD", 9),
    ("a = TIMESTAMP '2024-01-01 25:00:00'", "bad TIMESTAMP literal", 14),
    ("a = TIMESTAMP '2024-01-01 10:00:00.1234567'", "more precision than microseconds", 14),
    ("x = TIMESTAMP 5", "expected AND, OR, ')' or end of filter after 'TIMESTAMP', found '5'", 14),
    # operators
    ("p2 !< 'dd'", "'!<' is not an operator", 3),
    ("x >== 1", "'>==' is not an operator", 2),
    ("x => 1", "'=>' is not an operator", 2),
    ("x =< 1", "'=<' is not an operator", 2),
    ("x ! = 1", "'!' is not an operator", 2),
    ("p1 >=", "expected a value after '>=', found end of filter", 5),
    ("x <=>", "expected a value after '<=>'", 5),
    ("x = = 1", "expected a value after '=', found '='", 4),
    ("x = 1 = 2", "expected AND, OR, ')' or end of filter after '1', found '='", 6),
    ("=", "expected a predicate at start of filter, found '='", 0),
    ("x not = 1", "expected IN, BETWEEN, LIKE or RLIKE after 'not'", 6),
    ("x not", "expected IN, BETWEEN, LIKE or RLIKE after 'not', found end of filter", 5),
    ("x is 1", "expected NULL or NOT NULL after 'is'", 5),
    ("x is not", "expected NULL or NOT NULL after 'not', found end of filter", 8),
    ("x is null null", "found 'null'", 10),
    # AND / OR / NOT in the wrong place
    ("p1 = 1 and", "unexpected 'and' at end of filter", 7),
    ("p1 = 1 or", "unexpected 'or' at end of filter", 7),
    ("not", "unexpected 'not' at end of filter", 0),
    ("not not", "unexpected 'not' at end of filter", 4),
    ("p1 = 1 and not", "unexpected 'not' at end of filter", 11),
    ("and", "found 'and' ('and' is a keyword: write `and` to use it as a name)", 0),
    ("or a = 1", "expected a predicate at start of filter, found 'or'", 0),
    ("a = 1 and or b = 2", "expected a predicate after 'and', found 'or'", 10),
    ("x = 1 and and y = 2", "expected a predicate after 'and', found 'and'", 10),
    ("a = 1 b = 2", "expected AND, OR, ')' or end of filter after '1', found 'b'", 6),
    ("a b", "found 'b'", 2),
    ("in = 1", "'in' is a keyword: write `in` to use it as a name", 0),
    ("a = 1 and in", "'in' is a keyword", 10),
    # IN lists
    ("p in ()", "IN needs at least one value", 6),
    ("p in 1, 2", "expected '(' and a list of values after 'in'", 5),
    ("p in (1, 2", "expected ',' or ')' in the IN list after '2', found end of filter", 10),
    ("p in (1 2)", "expected ',' or ')' in the IN list after '1', found '2'", 8),
    ("p in (1,)", "expected a value in the IN list after ',', found ')'", 8),
    # BETWEEN
    ("p between 1", "expected AND and an upper bound after '1', found end of filter", 11),
    ("p between 1 and", "expected an upper bound after 'and', found end of filter", 15),
    ("p between and 2", "expected a lower bound after 'between', found 'and'", 10),
    ("p between 1 or 2", "expected AND and an upper bound after '1', found 'or'", 12),
    # LIKE, ESCAPE, RLIKE
    ("x like 'a%' escape 'ab'", "ESCAPE must be exactly one character, got 'ab'", 19),
    ("x like 'a%' escape ''", "ESCAPE must be exactly one character, got ''", 19),
    ("x like 'a!' escape '!'", "ends with the escape character '!'", 7),
    ("x like 'a!b' escape '!'", "may only precede '%', '_' or itself", 7),
    ("x like 'a' escape '!' escape '!'", "found 'escape'", 22),
    ("x like", "expected a quoted LIKE pattern after 'like', found end of filter", 6),
    ("x like y", "expected a quoted LIKE pattern after 'like', found 'y'", 7),
    ("x like 'a' escape", "expected a quoted escape character after 'escape'", 17),
    ("x rlike '('", "invalid regular expression '('", 8),
    ("x regexp '[a'", "invalid regular expression '[a'", 9),
    ("x rlike 5", "expected a quoted regular expression after 'rlike', found '5'", 8),
    # CAST
    ("x = CAST(1 AS foo)", "bad CAST type: unknown type 'foo'", 14),
    ("x = CAST(1 AS varchar)", "needs one positive length", 14),
    ("x = CAST(1 AS decimal(50,2))", "invalid decimal type decimal(50,2)", 14),
    ("x = CAST(1 AS int(3))", "type int takes no parameters", 14),
    ("x = CAST('abc' AS INT)", "bad CAST to int: 'abc' is not a number", 4),
    ("x = CAST(1.5 AS INT)", "is not an integer", 4),
    ("x = CAST(300 AS TINYINT)", "outside the range of tinyint", 4),
    ("x = CAST('2024-02-30' AS DATE)", "is not a valid date", 4),
    ("x = CAST(y AS INT)", "expected a literal (CAST applies to literals only) after '(', found 'y'", 9),
    ("x = CAST(1 INT)", "expected AS and a type after '1', found 'INT'", 11),
    ("x = CAST(1 AS INT", "expected ')' to close the CAST( at position 4", 17),
    ("x = CAST(1 AS)", "expected a type name such as INT", 13),
    ("x = CAST(1 AS array<int>)", "bad CAST type: a literal can't be cast to array", 14),
    ("x = CAST(1 AS binary)", "bad CAST type: a literal can't be cast to binary", 14),
    # IS TRUE / IS FALSE
    ("a = 1 is maybe", "expected TRUE or FALSE after 'is', found 'maybe'", 9),
    ("a = 1 is not", "expected TRUE or FALSE after 'not', found end of filter", 12),
    # numbers
    ("x = 1e999", "number 1e999 is out of range for a double", 4),
    ("x = " + "9" * 39, "integer literal has more than 38 digits", 4),
    ("x = -" + "1" * 20 + "." + "1" * 20, "more than 38 digits", 4),
    ("x = 1.2.3", "found '.3'", 7),
    ("x = --1", "expected a number after '-', found '-'", 5),
    ("x = - a", "expected a number after '-', found 'a'", 6),
    ("x = 0x1F", "found 'x1F'", 5),
    ("x = .", "unexpected character '.'", 4),
    # stray characters and other languages' syntax
    ("a = 1; drop table t", "unexpected character ';'", 5),
    ("a = $1", "unexpected character '$'", 4),
    ("a = 1 # comment", "unexpected character '#'", 6),
    ("x = 'a' || 'b'", "unexpected character '|'", 8),
    ("x = 'a' 'b'", "found \"'b'\"", 8),
    ("x = TRUE FALSE", "found 'FALSE'", 9),
    # function calls
    ("f(a, ) = 1", "expected an argument of f() after ',', found ')'", 5),
    ("f(a = 1", "expected ',' or ')' after an argument of f()", 4),
    ("f(,) = 1", "expected an argument of f() after '('", 2),
    # multi-line input: the caret goes under the right line
    ("a = 1\nand b = 'x", "unterminated string", 14),
    ("a = 1\n  and\n  b >", "expected a value after '>'", 17),
]


def test_corpus_is_large() -> None:
    assert len(CORPUS) >= 50


@pytest.mark.parametrize(("text", "fragment", "position"), CORPUS)
def test_malformed_filter(text: str, fragment: str, position: int) -> None:
    with pytest.raises(sg.FilterSyntaxError) as info:
        parse(text)
    error = info.value
    assert isinstance(error, sg.SargableError)
    assert fragment in error.reason
    assert error.position == position
    lines = str(error).splitlines()
    assert lines[0] == f"{error.reason} at position {position}"
    line_start = text.rfind("\n", 0, position) + 1
    line_end = text.find("\n", position)
    assert lines[1] == "  " + text[line_start : line_end if line_end >= 0 else len(text)]
    assert lines[2] == "  " + " " * (position - line_start) + "^"


def test_caret_on_a_long_line_stays_near_the_position() -> None:
    text = "a = 1 and " * 30 + "b !< 2" + " and c = 3" * 30
    with pytest.raises(sg.FilterSyntaxError) as info:
        parse(text)
    shown, caret = str(info.value).splitlines()[1:]
    assert len(shown) <= 122
    assert shown[caret.index("^") : caret.index("^") + 2] == "!<"


HIVE_CORPUS = [
    ("p1 like 'a('", "invalid regular expression 'a('", 8),
    ("p1 like 'a' escape '!'", "ESCAPE does not apply to the hive dialect's LIKE", 12),
    ("p1 like 'a)|(b'", "unbalanced parenthesis", 8),
    ("p1 like 'x{,3}'", "illegal repetition", 8),
    # Java regular expressions without an exact Python translation
    ("p1 like '(?u)a'", "the (?u) flag (Unicode case and classes), at position 0, has no exact equivalent", 8),
    ("p1 like '\\p{L}+'", "\\p{L}, at position 0, has no exact equivalent; only the POSIX classes", 8),
    ("p1 like '[^a[b]]'", "a negated class holding a nested class or && (Java 8 and 9+ differ)", 8),
    ("p1 rlike '\\bx'", "write a look-around such as (?<![A-Za-z0-9_])", 9),
    ("p1 like '(?<=a+)b'", "Python's re rejects it (look-behind requires fixed-width pattern)", 8),
    # Hive's own forms, wrongly used
    ("'x' like p1", "expected a quoted LIKE pattern (the column goes on the left of LIKE) after 'like'", 9),
    ("p1 like 5", "expected a quoted LIKE pattern after 'like', found '5'", 8),
    ("(a, b) in ((1), (2, 3))", "this row has 1 value but the IN at position 0 names 2 columns", 11),
    ("(struct(a, b)) in (const struct(1, 2, 3))", "this row has 3 values but the IN at position 0 names 2", 19),
    ("(a, b) in (1, 2)", "expected a row of values such as (1, 'x') or struct(1, 'x') after '(', found '1'", 11),
    ("a = 'abc\\'", "unterminated string: no closing ' after this one (in the hive dialect a backslash", 4),
    ("a = 2024-13-01", "bad DATE literal: '2024-13-01' is not a valid date: month must be in 1..12", 4),
    ("a = 2024-01-01 25:00:00", "bad TIMESTAMP literal", 4),
    ("a = 1 b = 2", "expected AND, OR, ')' or end of filter after '1', found 'b'", 6),
    ("(a = 1) is null", "expected TRUE or FALSE (IS NULL tests a value, not a predicate) after 'is'", 11),
]


@pytest.mark.parametrize(("text", "fragment", "position"), HIVE_CORPUS)
def test_malformed_hive_filter(text: str, fragment: str, position: int) -> None:
    with pytest.raises(sg.FilterSyntaxError) as info:
        parse(text, dialect="hive")
    assert fragment in info.value.reason
    assert info.value.position == position
    assert str(info.value).endswith("^")


def test_empty_text_and_wrong_input_types() -> None:
    with pytest.raises(sg.FilterSyntaxError, match="empty filter"):
        parse("")
    with pytest.raises(sg.SargableError, match="a filter must be a str, got bytes"):
        parse(b"a = 1")  # type: ignore[arg-type]
    with pytest.raises(sg.SargableError, match="a filter must be a str, got NoneType"):
        parse(None)  # type: ignore[arg-type]
    with pytest.raises(sg.SargableError, match="unknown filter dialect 'presto'"):
        parse("a = 1", "presto")


@pytest.mark.parametrize(
    "build",
    [
        lambda: sg.col(""),
        lambda: sg.expr.Comparison("~=", sg.col("a"), sg.lit(1)),
        lambda: sg.expr.In(sg.col("a"), ()),
        lambda: sg.expr.Like(sg.col("a"), sg.lit("x%"), escape="ab"),
        lambda: sg.expr.And((sg.col("a") == 1,)),
        lambda: sg.expr.Or((sg.col("a") == 1,)),
    ],
    ids=["empty column name", "unknown operator", "empty IN", "two-character ESCAPE", "one-child AND", "one-child OR"],
)
def test_invalid_nodes_raise_a_sargable_error(build) -> None:
    """Building a node with arguments it can't take is a SargableError (and a ValueError, as Python's own are)."""
    with pytest.raises(sg.InvalidExpressionError) as info:
        build()
    assert isinstance(info.value, sg.SargableError) and isinstance(info.value, ValueError)
