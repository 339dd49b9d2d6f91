"""Partition folder names are Spark's own (issue 27, item 3): `escape_path_name`, `unescape_path_name`,
`value_to_name` and `partition_name` equal Spark's `ExternalCatalogUtils` (`escapePathName`, `unescapePathName`,
`getPartitionValueString`, `getPartitionPathString`) on random names and values, the oracle called in the shared
Spark session's JVM: one query per example over all its values, `try_reflect` calling the static methods (no UDF,
no Python worker; a `VALUES` relation is evaluated on the driver, no job).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sargable.metastore.names import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    partition_name,
    unescape_path_name,
    value_to_name,
)
from sargable.types import STRING

pytest.importorskip("pyspark")
pytestmark = pytest.mark.spark
pytest_plugins = ["conftest_spark"]

UTILS = "org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils"

SPECIAL = [chr(c) for c in range(0x20)] + list(":%/=#'\"\\{}[]*?^ \x7f!,;~+-.") + list("0123456789abcdefABCDEFG")
"""The characters Hive escapes, their neighbours, and hex digits (to make `%XX` sequences, real and malformed)."""

chars = st.one_of(
    st.sampled_from(SPECIAL),
    st.characters(blacklist_categories=("Cs",)),  # any code point a Java string holds (no lone surrogates)
)
texts = st.text(chars, max_size=12)
escaped_like = st.lists(st.one_of(texts, st.sampled_from(["%", "%4", "%41", "%3a", "%Zz", "%%", "%é1"])), max_size=6)


def _binary(text: str | None) -> str:
    return "CAST(NULL AS BINARY)" if text is None else f"X'{text.encode().hex()}'"


def _spark(spark: Any, rows: list[tuple[str | None, str | None, str]]) -> list[Any]:
    """Spark's answers for (value, name, text) rows: escape(value), getPartitionValueString(value),
    getPartitionPathString(name, value), unescape(escape(value)), unescape(text) (None where Spark throws)."""
    values = ", ".join(f"({_binary(v)}, {_binary(n)}, {_binary(t)})" for v, n, t in rows)
    call = f"try_reflect('{UTILS}', '{{}}', {{}})".format
    return spark.sql(
        f"SELECT {call('escapePathName', 'v')}, {call('getPartitionValueString', 'v')}, "
        f"{call('getPartitionPathString', 'n, v')}, "
        f"{call('unescapePathName', call('escapePathName', 'v'))}, {call('unescapePathName', 't')} "
        f"FROM (SELECT decode(v, 'UTF-8') AS v, decode(n, 'UTF-8') AS n, decode(t, 'UTF-8') AS t "
        f"FROM VALUES {values} AS rows(v, n, t))"
    ).collect()


@settings(max_examples=10)
@given(
    st.lists(
        st.tuples(st.one_of(st.none(), texts), texts.filter(bool), escaped_like.map("".join)), min_size=20, max_size=150
    )
)
def test_partition_folder_names_are_sparks(spark, rows):
    answers = _spark(spark, rows)
    for (value, name, text), (escaped, value_name, path, round_trip, unescaped) in zip(rows, answers):
        if value is not None:
            assert escape_path_name(value) == escaped, value
            assert unescape_path_name(escaped) == round_trip == value, value
        assert value_to_name(value, STRING) == value_name, value
        assert partition_name([(name, STRING)], [value]) == path, (name, value)
        if unescaped is not None:  # Spark's unescapePathName throws on '%' then U+0080..U+00FF: no oracle there
            assert unescape_path_name(text) == unescaped, text


def test_the_oracle_names_the_default_partition_and_escapes():
    """The oracle's reading of a row, checked by hand once (a wrong column order would compare nothing useful)."""
    assert escape_path_name("a:b%/é") == "a%3Ab%25%2Fé"
    assert value_to_name(None, STRING) == DEFAULT_PARTITION_NAME


def test_the_oracle_answers_are_sparks(spark):
    """Spark's own answers on known rows: the query's columns are the functions the docstring of `_spark` names."""
    rows = _spark(spark, [("a:b", "k=", "%41%é1%4"), (None, "k", ""), ("", "k", "%%41")])
    assert [list(r) for r in rows] == [
        ["a%3Ab", "a%3Ab", "k%3D=a%3Ab", "a:b", None],
        ["null", DEFAULT_PARTITION_NAME, f"k={DEFAULT_PARTITION_NAME}", "null", ""],  # reflect shows null as 'null'
        ["", DEFAULT_PARTITION_NAME, f"k={DEFAULT_PARTITION_NAME}", "", "%A"],
    ]
