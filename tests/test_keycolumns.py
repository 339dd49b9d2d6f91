"""Batch key decoding (`sargable.keycolumns`) against the per-key decoder, `TupleCodec.decode`, as the oracle.

Random key schemas of every key type (two or more strings, so offset trailers), values with NULLs and edge values,
keys behind a random prefix, index-style field orders, and damaged keys (bytes flipped, cut or appended): the
batch decoders return exactly what decoding key by key returns, or raise where it raises.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sargable import keys
from sargable.errors import KeyEncodingError
from sargable.keycolumns import (
    decode_arrow,
    decode_joined_arrow,
    decode_joined_columns,
    decode_joined_rows,
    decode_rows,
)
from sargable.skipping.table import arrow_type
from sargable.types import parse_type
from strategies import data_types, values

_TYPES = data_types()


@st.composite
def pages(draw: st.DrawFn) -> tuple[keys.TupleCodec, bytes, list[bytes]]:
    """A key schema, a prefix and a sorted page of distinct full keys behind it."""
    types = draw(st.lists(st.one_of(_TYPES, st.just(parse_type("string"))), min_size=1, max_size=5))
    codec = keys.tuple_codec(types)
    rows = draw(st.lists(st.tuples(*[values(t) for t in codec.types]), max_size=40))
    prefix = draw(st.binary(max_size=3))
    encoded = sorted({prefix + codec.encode(list(row)) for row in rows})
    return codec, prefix, encoded


def _same(a: list[tuple], b: list[tuple]) -> bool:
    """Equal as keys encode them (NaN, -0.0 and decimal exponents compared exactly), with the same Python types."""
    return repr(a) == repr(b)


@settings(max_examples=300)
@given(pages(), st.data())
def test_decode_rows_is_decode_of_each_key(page, data) -> None:
    codec, prefix, encoded = page
    expected = [codec.decode(key[len(prefix) :]) for key in encoded]
    assert _same(decode_rows(encoded, codec, len(prefix)), expected)
    order = data.draw(st.permutations(range(codec.count)), label="order")
    reordered = [tuple(row[i] for i in order) for row in expected]
    assert _same(decode_rows(encoded, codec, len(prefix), order), reordered)
    lengths = [len(key) for key in encoded]
    assert _same(decode_joined_rows(b"".join(encoded), lengths, codec, len(prefix), order), reordered)
    joined = decode_joined_arrow(b"".join(encoded), lengths, codec, len(prefix))
    listed = decode_arrow(encoded, codec, len(prefix))
    assert _same([column.to_pylist() for column in joined], [column.to_pylist() for column in listed])


@settings(max_examples=300)
@given(pages())
def test_decode_arrow_is_decode_of_each_key(page) -> None:
    codec, prefix, encoded = page
    expected = [codec.decode(key[len(prefix) :]) for key in encoded]
    columns = decode_arrow(encoded, codec, len(prefix))
    assert [column.type for column in columns] == [arrow_type(t) for t in codec.types]
    for i, column in enumerate(columns):
        column.validate(full=True)
        assert _same(column.to_pylist(), pa.array([row[i] for row in expected], arrow_type(codec.types[i])).to_pylist())


@st.composite
def damaged_pages(draw: st.DrawFn) -> tuple[keys.TupleCodec, list[bytes]]:
    """A page with some keys damaged: a byte changed, the key cut short, or bytes appended."""
    codec, _, encoded = draw(pages())
    out = []
    for key in encoded:
        how = draw(st.sampled_from(["keep", "keep", "flip", "cut", "append"]))
        if how == "flip" and key:
            at = draw(st.integers(0, len(key) - 1))
            key = key[:at] + bytes([draw(st.integers(0, 255))]) + key[at + 1 :]
        elif how == "cut" and key:
            key = key[: draw(st.integers(0, len(key) - 1))]
        elif how == "append":
            key = key + draw(st.binary(min_size=1, max_size=3))
        out.append(key)
    return codec, out


@settings(max_examples=500)
@given(damaged_pages())
def test_damaged_keys_decode_or_fail_as_each_key_does(page) -> None:
    codec, encoded = page
    try:
        expected = [codec.decode(key) for key in encoded]
    except KeyEncodingError:
        with pytest.raises(KeyEncodingError):
            decode_rows(encoded, codec)
        with pytest.raises(KeyEncodingError):
            decode_arrow(encoded, codec)
        return
    assert _same(decode_rows(encoded, codec), expected)
    columns = decode_arrow(encoded, codec)
    for i, column in enumerate(columns):
        assert _same(column.to_pylist(), pa.array([row[i] for row in expected], arrow_type(codec.types[i])).to_pylist())


@settings(max_examples=300)
@given(pages(), st.data())
def test_decode_joined_columns_is_the_leading_fields_of_each_key(page, data) -> None:
    """`decode_joined_columns` of the first `fields` fields equals those fields of each key decoded alone."""
    codec, prefix, encoded = page
    expected = [codec.decode(key[len(prefix) :]) for key in encoded]
    fields = data.draw(st.one_of(st.none(), st.integers(0, codec.count)), label="fields")
    count = codec.count if fields is None else fields
    columns = decode_joined_columns(b"".join(encoded), [len(k) for k in encoded], codec, len(prefix), fields)
    assert _same(columns, [[row[i] for row in expected] for i in range(count)])
