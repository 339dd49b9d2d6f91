"""The hive dialect: every form of the Hive metastore's filter grammar (`Filter.g` of Hive 2.3 and 3.x,
`PartitionFilter.g4` of Hive 4.x) and what its clients send, each checked against independent oracles:

- DuckDB evaluating the same filter written in its SQL, over the same rows (three-valued, typed);
- Hive 2.3's own parser (the metastore jar inside the pyspark package, run in a JVM): for every form it accepts,
  the tree it builds, read with its meaning, selects the same rows as sargable's parse;
- a hypothesis model of the grammar that draws filters together with their DuckDB SQL.
"""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.expr import Column, Expr, In, Regex, bind, col, evaluate, lit, parse, render
from sargable.expr.java_regex import translate_java_regex
from test_evaluate import duck

SCHEMA = [("ds", "date"), ("hr", "int"), ("country", "string"), ("ts", "timestamp")]
DUCK_COLUMNS = "ds DATE, hr INTEGER, country VARCHAR, ts TIMESTAMP"
DATES = [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 10), None]
HOURS = [0, 1, 2, 10, None]
COUNTRIES = ["US", "DE", "us", "UK", "a.b", "axb", "a\\b", 'x\\"y', "it's", "", None]
TIMES = [dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 1, 10, 0, 0, 500000), dt.datetime(2024, 1, 2), None]
ROWS = [
    {"ds": d, "hr": h, "country": c, "ts": TIMES[i % len(TIMES)]}
    for i, (d, h, c) in enumerate(itertools.product(DATES, HOURS, COUNTRIES))
]


def duck_selected(where: str) -> list[int]:
    con = duck()
    con.execute("DROP TABLE IF EXISTS hive_rows")
    con.execute(f"CREATE TABLE hive_rows (idx INTEGER, {DUCK_COLUMNS})")
    con.executemany(
        "INSERT INTO hive_rows VALUES (?, ?, ?, ?, ?)",
        [(i, r["ds"], r["hr"], r["country"], r["ts"]) for i, r in enumerate(ROWS)],
    )
    return [i for (i,) in con.execute(f"SELECT idx FROM hive_rows WHERE {where} ORDER BY idx").fetchall()]


def selected(expr: Expr) -> list[int]:
    bound = bind(expr, SCHEMA)
    return [i for i, row in enumerate(ROWS) if evaluate(bound, row) is True]


if TYPE_CHECKING:
    from hive_oracle import HiveOracle

pytest_plugins = ["hive_oracle"]


# -- every form, by hand --------------------------------------------------------------------------------------------

H23, H4 = "2.3", "4"
"""The oldest grammar that accepts a form: Hive 2.3 (and every later one) or only Hive 3.1 / 4.x (or none: None)."""

FORMS: list[tuple[str, str, str | None]] = [
    # what Spark sends (HiveShim.convertFilters)
    ('ds = "2024-01-02" and hr > 1', "ds = DATE '2024-01-02' AND hr > 1", H23),
    ('(hr) in (1, 2) and ds != "2024-01-01"', "hr IN (1, 2) AND ds <> DATE '2024-01-01'", H23),
    ('(ds = "2024-01-02" or hr = 1)', "ds = DATE '2024-01-02' OR hr = 1", H23),
    ('ds >= "2024-01-01" and ds <= "2024-01-02"', "ds BETWEEN DATE '2024-01-01' AND DATE '2024-01-02'", H23),
    ('country like "U.*"', "regexp_full_match(country, 'U.*')", H23),
    ("(hr) not in (1, 2)", "hr NOT IN (1, 2)", H23),
    # comparison operators, both spellings of not-equal, Hive 4's == and <=>
    ("hr = 1", "hr = 1", H23),
    ("hr <> 1", "hr <> 1", H23),
    ("hr != 1", "hr <> 1", H23),
    ("hr < 2", "hr < 2", H23),
    ("hr <= 2", "hr <= 2", H23),
    ("hr > 1", "hr > 1", H23),
    ("hr >= 1", "hr >= 1", H23),
    ("hr == 1", "hr = 1", H4),
    ("hr <=> 1", "hr IS NOT DISTINCT FROM 1", None),
    ("hr>-1", "hr > -1", H23),
    ("hr = 01", "hr = 1", H23),
    ('hr = "1"', "hr = 1", H23),
    # the key on the right
    ("1 < hr", "1 < hr", H23),
    ('"2024-01-02" = ds', "DATE '2024-01-02' = ds", H23),
    ("'US' <= country", "'US' <= country", H23),
    ("2024-01-02 > ds", "DATE '2024-01-02' > ds", H23),
    # strings: both quotes, backslashes kept as Hive keeps them, doubled quotes, adjacent strings (Hive 4)
    ("country = 'US'", "country = 'US'", H23),
    ('country = "DE"', "country = 'DE'", H23),
    ("country = 'a\\b'", "country = 'a\\b'", H23),
    ('country = "x\\"y"', "country = 'x\\\"y'", H23),
    ("country = 'it''s'", "country = 'it''s'", None),
    ("country = 'U' \"S\"", "country = 'US'", None),
    ("country = ''", "country = ''", H23),
    # dates and timestamps: bare (Hive 2.3+), DATE '...' (Hive 3.1+ and 4.x), TIMESTAMP (4.x)
    ("ds = 2024-01-02", "ds = DATE '2024-01-02'", H23),
    ("ds = date '2024-01-02'", "ds = DATE '2024-01-02'", H4),
    ("ds = DATE'2024-01-02'", "ds = DATE '2024-01-02'", H4),
    ('ds = DATE "2024-01-02"', "ds = DATE '2024-01-02'", H4),
    ("(ds) in (2024-01-01, 2024-01-10)", "ds IN (DATE '2024-01-01', DATE '2024-01-10')", H23),
    ("ts = timestamp '2024-01-01 10:00:00'", "ts = TIMESTAMP '2024-01-01 10:00:00'", H4),
    ("ts = TIMESTAMP'2024-01-01 10:00:00.5'", "ts = TIMESTAMP '2024-01-01 10:00:00.5'", None),
    ("ts < 2024-01-01 10:00:01", "ts < TIMESTAMP '2024-01-01 10:00:01'", H4),
    ("ts > '2024-01-01 10:00:00'", "ts > TIMESTAMP '2024-01-01 10:00:00'", H23),
    # IN: parenthesized column (Hive), bare column (SQL), strings, NOT IN
    ("(country) in ('US', \"DE\")", "country IN ('US', 'DE')", H23),
    ("hr in (1, 2)", "hr IN (1, 2)", None),
    ('(ds) not in ("2024-01-01")', "ds NOT IN (DATE '2024-01-01')", H23),
    # multi-column IN: Hive 2.3/3.x (CONST STRUCT), Hive 4 (STRUCT without CONST), SQL row values
    (
        '(struct(hr, country)) in (const struct(1, "US"), const struct(2, "DE"))',
        "(hr = 1 AND country = 'US') OR (hr = 2 AND country = 'DE')",
        H23,
    ),
    ('(struct(hr, country)) not in (const struct(1, "US"))', "NOT (hr = 1 AND country = 'US')", H23),
    ("(STRUCT(hr, country)) IN (STRUCT(1, 'US'), STRUCT(10, 'UK'))", "(hr, country) IN ((1, 'US'), (10, 'UK'))", H4),
    ("(struct(hr)) in (const struct(1), const struct(2))", "hr IN (1, 2)", H23),
    ("(hr, country) in ((1, 'US'), (2, 'DE'))", "(hr = 1 AND country = 'US') OR (hr = 2 AND country = 'DE')", None),
    # BETWEEN
    ("hr between 1 and 2", "hr BETWEEN 1 AND 2", H23),
    ("hr not between 1 and 2", "hr NOT BETWEEN 1 AND 2", H23),
    ('ds between "2024-01-01" and "2024-01-02"', "ds BETWEEN DATE '2024-01-01' AND DATE '2024-01-02'", H23),
    ("ds between 2024-01-02 and 2024-01-10", "ds BETWEEN DATE '2024-01-02' AND DATE '2024-01-10'", H23),
    ("country between 'A' and 'Z'", "country BETWEEN 'A' AND 'Z'", H23),
    # LIKE: a Java regular expression over the whole value
    ("country like 'a\\.b'", "country = 'a.b'", H23),
    ("country like 'a.b'", "country IN ('a.b', 'axb', 'a\\b')", H23),
    ('country like "[A-Z]{2}"', "regexp_full_match(country, '[A-Z]{2}')", H23),
    ("country like '(?i)us'", "lower(country) = 'us'", H23),
    ("country like '\\p{Upper}+'", "regexp_full_match(country, '[[:upper:]]+')", H23),
    ("country like 'U.|D.'", "country IN ('US', 'UK', 'DE')", H23),
    ("country like '.*'", "country IS NOT NULL", H23),
    ("country not like 'U.*'", "NOT regexp_full_match(country, 'U.*')", None),
    ("country rlike 'S'", "contains(country, 'S')", None),
    # keywords in any case, backquoted names (Hive 4), parentheses
    ("HR = 1 AnD country = 'US' oR ds = \"2024-01-01\"", "(hr = 1 AND country = 'US') OR ds = DATE '2024-01-01'", H23),
    ("(hr) NoT In (1) AND (ds) iN (2024-01-02)", "hr <> 1 AND ds = DATE '2024-01-02'", H23),
    ("`hr` = 1", "hr = 1", H4),
    ("((hr = 1) or ((country = 'DE')))", "hr = 1 OR country = 'DE'", H23),
    (
        "hr = 1 and (country = 'US' or country = 'DE') and ds > '2024-01-01'",
        "hr = 1 AND country IN ('US', 'DE') AND ds > DATE '2024-01-01'",
        H23,
    ),
    # IS [NOT] TRUE / FALSE (Hive 4.1), exact under NULLs
    ("(hr = 1 or country = 'US') is not true", "(hr = 1 OR country = 'US') IS NOT TRUE", None),
    ("(hr) in (1, 2) is false", "(hr IN (1, 2)) IS FALSE", None),
    ("hr > 1 is true", "(hr > 1) IS TRUE", None),
    ("(hr between 1 and 2) is not false", "(hr BETWEEN 1 AND 2) IS NOT FALSE", None),
    # sargable's own extensions stay available in the hive dialect
    ("not hr = 1", "NOT hr = 1", None),
    ("hr is null", "hr IS NULL", None),
    ("upper(country) = 'US'", "upper(country) = 'US'", None),
]


def test_forms_cover_the_grammar() -> None:
    assert len(FORMS) >= 60
    assert sum(version == H23 for _, _, version in FORMS) >= 40


@pytest.mark.parametrize(("text", "duck_where", "version"), FORMS, ids=[f[0] for f in FORMS])
def test_form_selects_what_duckdb_selects(text: str, duck_where: str, version: str | None) -> None:
    expr = parse(text, dialect="hive")
    assert selected(expr) == duck_selected(duck_where)
    assert parse(render(expr)) == expr


@pytest.mark.parametrize(("text", "duck_where"), [(t, d) for t, d, v in FORMS if v == H23])
def test_form_means_what_hive_23_parses(hive_oracle: HiveOracle, text: str, duck_where: str) -> None:
    """Hive 2.3's parser accepts the form, and its tree (read with Hive's meaning) selects what sargable's does."""
    answer = hive_oracle.parse(text)
    assert answer.status == "ok", answer.message
    assert answer.tree is not None
    assert selected(answer.tree) == selected(parse(text, dialect="hive"))


def test_hive_23_quirks_sargable_does_not_copy(hive_oracle: HiveOracle) -> None:
    """Where Hive 2.3's parser reads text in a way no client relies on, sargable refuses or reads it as SQL does;
    docs/filter-syntax.md lists these."""
    assert hive_oracle.parse("hr = 1 country = 'US'").status == "rest-ignored"
    with pytest.raises(sg.FilterSyntaxError, match="found 'country'"):
        parse("hr = 1 country = 'US'", dialect="hive")
    assert hive_oracle.parse("country = 'it''s'").status == "rest-ignored"
    assert parse("country = 'it''s'", dialect="hive") == col("country").eq("it's")
    assert hive_oracle.parse("(struct(hr, country)) in (const struct(1))").status == "ok"
    with pytest.raises(sg.FilterSyntaxError, match="this row has 1 value but the IN at position 0 names 2"):
        parse("(struct(hr, country)) in (const struct(1))", dialect="hive")
    assert hive_oracle.parse("hr = 99999999999999999999").status == "error"
    assert parse("hr = 99999999999999999999", dialect="hive") == col("hr").eq(99999999999999999999)


def test_hive_reads_these_words_as_names(hive_oracle: HiveOracle) -> None:
    """Hive's grammar has no IS, NULL, TRUE, FALSE, RLIKE or REGEXP: beside a constant they name a column."""
    for word in ("is", "null", "true", "false", "rlike", "regexp", "date"):
        for text, expected in [
            (f"{word} = 'x'", Column(word).eq("x")),
            (f"'x' < {word}", lit("x") < Column(word)),
            (f"({word}) in (1, 2)", In(Column(word), (lit(1), lit(2)))),
            (f"{word} between 1 and 2", Column(word).between(1, 2)),
            (f"{word} like 'a.*'", Regex(Column(word), translate_java_regex("a.*", whole=True))),
        ]:
            assert hive_oracle.parse(text).status == "ok", text
            assert parse(text, dialect="hive") == expected, text
            assert parse(render(expected)) == expected
    assert parse("x = true and y is null", dialect="hive") == (col("x").eq(True) & col("y").is_null())
    assert parse("1col = 1 and _x = 2", dialect="hive") == (Column("1col").eq(1) & Column("_x").eq(2))


def test_spark_filters_parse_in_both_dialects_where_they_mean_the_same() -> None:
    for text in ['ds = "2024-01-02" and hr > 1', '(hr) in (1, 2) and ds != "2024-01-01"', 'ds >= "a" and ds <= "b"']:
        assert parse(text) == parse(text, dialect="hive")


# -- a grammar model, drawn by hypothesis --------------------------------------------------------------------------


@dataclass(frozen=True)
class Drawn:
    """A filter in the hive dialect, the same filter in DuckDB's SQL, and whether Hive 2.3's grammar has it."""

    hive: str
    duck: str
    hive23: bool


def _keyword(word: str) -> st.SearchStrategy[str]:
    return st.sampled_from([word.lower(), word.upper(), word.capitalize()])


def _constant(key: str) -> st.SearchStrategy[tuple[str, str, str]]:
    """(hive text, DuckDB text, Hive 2.3 literal kind: I, S or D) of a constant for `key`."""
    if key == "hr":
        return st.sampled_from([-1, 0, 1, 2, 10, 11]).flatmap(
            lambda n: st.sampled_from([(str(n), str(n), "I"), (f'"{n}"', str(n), "S")])
        )
    if key == "ds":
        return st.sampled_from(["2024-01-01", "2024-01-02", "2024-01-05", "2024-01-10"]).flatmap(
            lambda d: st.sampled_from(
                [(f'"{d}"', f"DATE '{d}'", "S"), (d, f"DATE '{d}'", "D"), (f"date '{d}'", f"DATE '{d}'", "4")]
            )
        )
    return st.sampled_from(["US", "DE", "us", "UK", "a.b", "", "ZZ"]).flatmap(
        lambda c: st.sampled_from([(f"'{c}'", f"'{c}'", "S"), (f'"{c}"', f"'{c}'", "S")])
    )


def _same_kind(kinds: list[str]) -> bool:
    return "4" not in kinds and len(set(kinds)) == 1


@st.composite
def _leaf(draw: st.DrawFn) -> Drawn:
    form = draw(st.sampled_from(["cmp", "cmp", "in", "between", "like", "struct"]))
    key = draw(st.sampled_from(["ds", "hr", "country"]))
    if form == "cmp":
        op = draw(st.sampled_from(["=", "!=", "<>", "<", "<=", ">", ">="]))
        text, duck_text, kind = draw(_constant(key))
        duck_op = "<>" if op == "!=" else op
        if draw(st.booleans()):
            return Drawn(f"{text} {op} {key}", f"({duck_text} {duck_op} {key})", kind != "4")
        space = draw(st.sampled_from([" ", ""]))
        return Drawn(f"{key}{space}{op} {text}", f"({key} {duck_op} {duck_text})", kind != "4")
    if form == "in":
        values = draw(st.lists(_constant(key), min_size=1, max_size=3))
        negated = draw(st.booleans())
        not_ = draw(_keyword("not")) + " " if negated else ""
        hive = f"({key}) {not_}{draw(_keyword('in'))} ({', '.join(v[0] for v in values)})"
        duck_sql = f"({key} {'NOT IN' if negated else 'IN'} ({', '.join(v[1] for v in values)}))"
        return Drawn(hive, duck_sql, _same_kind([v[2] for v in values]))
    if form == "between":
        low, high = draw(_constant(key)), draw(_constant(key))
        negated = draw(st.booleans())
        not_ = draw(_keyword("not")) + " " if negated else ""
        hive = f"{key} {not_}{draw(_keyword('between'))} {low[0]} {draw(_keyword('and'))} {high[0]}"
        duck_sql = f"({key} {'NOT ' if negated else ''}BETWEEN {low[1]} AND {high[1]})"
        return Drawn(hive, duck_sql, _same_kind([low[2], high[2]]))
    if form == "like":
        java, duck_pattern = draw(
            st.sampled_from(
                [("U.*", "U.*"), ("a\\.b", "a\\.b"), ("[A-Z]{2}", "[A-Z]{2}"), ("u.|D.", "u.|D."), (".*b", ".*b")]
            )
        )
        return Drawn(
            f"country {draw(_keyword('like'))} '{java}'", f"regexp_full_match(country, '{duck_pattern}')", True
        )
    rows = draw(st.lists(st.tuples(_constant("hr"), _constant("country")), min_size=1, max_size=3))
    negated = draw(st.booleans())
    not_ = draw(_keyword("not")) + " " if negated else ""
    const = draw(st.sampled_from(["const struct", "CONST STRUCT", "struct"]))
    values = ", ".join(f"{const}({h[0]}, {c[0]})" for h, c in rows)
    duck_rows = " OR ".join(f"(hr = {h[1]} AND country = {c[1]})" for h, c in rows)
    hive23 = const != "struct"
    duck_sql = f"(NOT ({duck_rows}))" if negated else f"({duck_rows})"
    return Drawn(f"(struct(hr, country)) {not_}in ({values})", duck_sql, hive23)


def _combine(children: st.SearchStrategy[Drawn]) -> st.SearchStrategy[Drawn]:
    def join(items: list[Drawn], word: str, wrapped: bool) -> Drawn:
        hive = f" {word} ".join(d.hive for d in items)
        duck_sql = "(" + f" {word.upper()} ".join(d.duck for d in items) + ")"
        return Drawn(f"({hive})" if wrapped else hive, duck_sql, all(d.hive23 for d in items))

    def truth_test(item: Drawn, test: str) -> Drawn:
        return Drawn(f"({item.hive}) is {test}", f"({item.duck} IS {test.upper()})", False)

    return st.one_of(
        st.builds(join, st.lists(children, min_size=2, max_size=3), st.sampled_from(["and", "AND"]), st.just(True)),
        st.builds(join, st.lists(children, min_size=2, max_size=3), st.sampled_from(["or", "Or"]), st.just(True)),
        st.builds(truth_test, children, st.sampled_from(["true", "false", "not true", "not false"])),
    )


FILTERS = st.recursive(_leaf(), _combine, max_leaves=6)


@settings(max_examples=150)
@given(FILTERS)
def test_drawn_filters_select_what_duckdb_selects(drawn: Drawn) -> None:
    expr = parse(drawn.hive, dialect="hive")
    assert selected(expr) == duck_selected(drawn.duck), (drawn.hive, drawn.duck)
    assert parse(render(expr)) == expr


@settings(max_examples=100)
@given(FILTERS.filter(lambda d: d.hive23))
def test_drawn_hive_23_filters_mean_what_hive_parses(hive_oracle: HiveOracle, drawn: Drawn) -> None:
    answer = hive_oracle.parse(drawn.hive)
    assert answer.status == "ok", (drawn.hive, answer.message)
    assert answer.tree is not None
    assert selected(answer.tree) == selected(parse(drawn.hive, dialect="hive")), drawn.hive


def test_multi_column_in_is_an_or_of_ands() -> None:
    expr = parse("(struct(a, b)) in (const struct(1, 'x'), const struct(2, 'y'))", dialect="hive")
    assert expr == ((col("a").eq(1) & col("b").eq("x")) | (col("a").eq(2) & col("b").eq("y")))
    negated = parse("(a, b) not in ((1, 'x'), (2, 'y'))")
    assert negated == ((col("a").ne(1) | col("b").ne("x")) & (col("a").ne(2) | col("b").ne("y")))
