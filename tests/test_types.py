"""Hive column types: the primitive ones and the stored-but-never-compared ones (binary, array, map, struct)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.expr import bind, dumps, evaluate, loads, parse
from sargable.types import MAX_TYPE_DEPTH, DataType, convert, decimal_type, parse_type, split_converted

PRIMITIVES = [
    "string",
    "varchar(10)",
    "char(3)",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "decimal(10,2)",
    "date",
    "timestamp",
    "boolean",
    "binary",
]
FIELD_NAMES = st.one_of(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True), st.text(min_size=1, max_size=5))


def types() -> st.SearchStrategy[DataType]:
    """Any type: primitives, and arrays, maps (primitive keys) and structs (unique field names) of any type."""

    def compound(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
        primitive = st.sampled_from(PRIMITIVES).map(parse_type)
        return st.one_of(
            children.map(lambda t: DataType("array", children=(t,))),
            st.tuples(primitive, children).map(lambda kv: DataType("map", children=kv)),
            st.lists(st.tuples(FIELD_NAMES, children), min_size=1, max_size=4, unique_by=lambda f: f[0].lower()).map(
                lambda fields: DataType(
                    "struct", children=tuple(t for _, t in fields), field_names=tuple(n for n, _ in fields)
                )
            ),
        )

    return st.recursive(st.sampled_from(PRIMITIVES).map(parse_type), compound, max_leaves=8)


def respell(text: str, data: st.DataObject) -> str:
    """The same type with type names in random case and spaces around punctuation (field names kept)."""
    pieces = [p for p in re.split(r"(`(?:[^`]|``)*`|[<>,:()])", text) if p]
    out = []
    for index, piece in enumerate(pieces):
        if piece in ("<", ">", ",", ":", "(", ")"):
            out.append(data.draw(st.sampled_from(["", " "])) + piece + data.draw(st.sampled_from(["", " ", "  "])))
        elif piece[0] != "`" and pieces[index + 1 : index + 2] != [":"] and data.draw(st.booleans()):
            out.append(piece.upper())
        else:
            out.append(piece)
    return "".join(out)


@settings(max_examples=300)
@given(types(), st.data())
def test_types_print_canonically_and_parse_back(dtype: DataType, data: st.DataObject) -> None:
    text = str(dtype)
    assert parse_type(text) == dtype
    assert str(parse_type(text)) == text
    assert parse_type(respell(text, data)) == dtype


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("ARRAY<INT>", "array<int>"),
        ("array < bigint >", "array<bigint>"),
        ("Map<String, Array<Decimal(5, 1)>>", "map<string,array<decimal(5,1)>>"),
        ("struct<a:int, B:string>", "struct<a:int,B:string>"),
        ("struct<`a b`:int,`x``y`:binary>", "struct<`a b`:int,`x``y`:binary>"),
        ("struct<a:struct<b:array<map<int,string>>>>", "struct<a:struct<b:array<map<int,string>>>>"),
        ("array<long>", "array<bigint>"),
        ("BINARY", "binary"),
        ("array<decimal>", "array<decimal(10,0)>"),
    ],
)
def test_hive_spellings(text: str, canonical: str) -> None:
    assert str(parse_type(text)) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("array<>", "expected a type name at position 6, found '>'"),
        ("array<int,int>", "expected '>' to close array< at position 9"),
        ("map<int>", "expected ',' and the value type in map< at position 7"),
        ("map<int,int,int>", "expected '>' to close map<"),
        ("map<array<int>,int>", "a map's keys must be of a primitive type"),
        ("struct<>", "expected a struct field name at position 7"),
        ("struct<a int>", "expected ':' after a struct field name"),
        ("struct<a:int,A:string>", "a struct has two fields of one name"),
        ("array<int", "expected '>' to close array< at position 9, found end of type"),
        ("array<int>>", "expected end of type at position 10"),
        ("array<foo>", "unknown type 'array<foo>'; known types: bigint, binary"),
        ("uniontype<int,string>", "unknown type 'uniontype<int,string>'"),
        ("array" + "<array" * MAX_TYPE_DEPTH + "<int>" + ">" * MAX_TYPE_DEPTH, "types nest more than 64 deep"),
        ("varchar", "needs one positive length"),
        ("int(3)", "type int takes no parameters"),
        ("decimal(50,2)", "invalid decimal type decimal(50,2)"),
        ("", "unknown type ''"),
    ],
)
def test_bad_types_are_errors_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(sg.TypeCoercionError) as info:
        parse_type(text)
    assert message in str(info.value)


def test_only_primitive_types_other_than_binary_are_orderable() -> None:
    for text in PRIMITIVES:
        assert parse_type(text).is_orderable == (text != "binary")
        assert not parse_type(text).is_complex
    for text in ["array<int>", "map<string,int>", "struct<a:int>"]:
        assert parse_type(text).is_complex and not parse_type(text).is_orderable
    assert decimal_type(5, 2).is_orderable


SCHEMA = [
    ("tags", "array<string>"),
    ("attrs", "map<string,int>"),
    ("blob", "binary"),
    ("point", "struct<x:double,y:double>"),
    ("n", "int"),
]


@pytest.mark.parametrize(
    ("text", "column", "what"),
    [
        ("tags = 'a'", "tags", "a comparison"),
        ("'a' < attrs", "attrs", "a comparison"),
        ("blob in ('a', 'b')", "blob", "IN"),
        ("point between 1 and 2", "point", "BETWEEN"),
        ("blob like 'a%'", "blob", "LIKE"),
        ("tags rlike 'a'", "tags", "RLIKE"),
        ("length(blob) = 1", "blob", "length()"),
        ("coalesce(tags, tags) is null", "tags", "coalesce()"),
    ],
)
def test_binding_a_comparison_on_a_complex_or_binary_column_names_it(text: str, column: str, what: str) -> None:
    with pytest.raises(sg.BindError) as info:
        bind(parse(text), SCHEMA)
    dtype = dict(SCHEMA)[column]
    assert f"column {column!r} has type {parse_type(dtype)}, which {what} can't take" in str(info.value)
    assert "only IS [NOT] NULL tests them" in str(info.value)


def test_is_null_tests_complex_columns_and_survives_the_binary_form() -> None:
    bound = bind(parse("tags is not null and point is null and n = 1"), SCHEMA)
    assert loads(dumps(bound)) == bound
    row = {"tags": ["a"], "attrs": None, "blob": b"x", "point": None, "n": 1}
    assert evaluate(bound, row) is True
    assert evaluate(bound, {**row, "tags": None}) is False


def test_complex_and_binary_values_are_never_converted() -> None:
    for text in ["binary", "array<int>", "map<string,int>", "struct<a:int>"]:
        with pytest.raises(sg.TypeCoercionError, match="stored and returned but never compared"):
            convert("x", parse_type(text))
        assert convert(None, parse_type(text)) is None
    with pytest.raises(sg.FilterSyntaxError, match="a literal can't be cast to binary"):
        parse("x = CAST('a' AS BINARY)")


def test_spark_read_schema_of_complex_columns() -> None:
    """The Spark type of each Hive type (pyspark's type classes only: no session)."""
    from sargable.spark.schema import spark_type, struct_type

    cases = {
        "binary": "binary",
        "array<int>": "array<int>",
        "map<string,array<decimal(5,2)>>": "map<string,array<decimal(5,2)>>",
        "struct<a:int,`b c`:struct<d:timestamp>>": "struct<a:int,b c:struct<d:timestamp>>",
    }
    for hive, spark in cases.items():
        assert spark_type(parse_type(hive)).simpleString() == spark
    schema = struct_type([("ds", parse_type("date")), ("tags", parse_type("array<string>"))])
    assert schema.simpleString() == "struct<ds:date,tags:array<string>>"
    assert schema["tags"].dataType.containsNull


_MIXED = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.text(max_size=4),
    st.dates(),
    st.datetimes(),
    st.floats(allow_nan=True),
    st.decimals(allow_nan=False, places=2),
)


@settings(max_examples=300)
@given(
    values=st.lists(_MIXED, max_size=12),
    type_name=st.sampled_from(["tinyint", "smallint", "int", "bigint", "string", "varchar(3)", "date", "boolean"]),
)
def test_split_converted_keeps_only_what_convert_returns_unchanged(values: list, type_name: str) -> None:
    """The fast path's oracle is `convert` itself: every kept value converts to an equal value of the same type;
    kept and the rest are the input, each in its order."""
    dtype = parse_type(type_name)
    kept, rest = split_converted(values, dtype)
    assert sorted(map(id, kept + rest)) == sorted(map(id, values))
    assert [v for v in values if any(v is k for k in kept)] == kept
    for value in kept:
        converted = convert(value, dtype)
        assert type(converted) is type(value) and converted == value


@given(
    st.from_regex(r"[+-]?[0-9]{1,22}", fullmatch=True),
    st.sampled_from(["tinyint", "smallint", "int", "bigint"]),
)
def test_an_integer_text_converts_to_its_integer_or_is_refused_out_of_range(text: str, type_name: str) -> None:
    """Hive's text of an integer (ASCII digits, an optional sign, leading zeros) is the integer Python reads from
    it, or a TypeCoercionError naming the type's range: the oracle is `int` and the two's-complement bounds."""
    bits = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}[type_name]
    expected = int(text)
    if -(1 << (bits - 1)) <= expected < 1 << (bits - 1):
        assert convert(text, parse_type(type_name)) == expected
        assert type(convert(text, parse_type(type_name))) is int
    else:
        with pytest.raises(sg.TypeCoercionError, match="outside the range"):
            convert(text, parse_type(type_name))
