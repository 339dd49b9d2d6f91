"""Hive column statistics objects (`ColumnStatisticsObj`) as the metastore keeps them (`sargable.metastore.colstats`),
and their aggregation over partitions (`get_aggr_stats_for`).

A kept object is the time it was analyzed (8 bytes) and the object in Thrift's binary protocol, so whatever an
engine writes (bit vectors included) is read back as written. Aggregation follows Hive's without bit vectors: lows
are the least, highs the greatest, null counts and true / false counts add up, distinct counts and column lengths
are the greatest of the partitions'.

Where nobody analyzed a column, a table with registered files answers from sargable's own file statistics
(`from_files`): for integer, floating, decimal and date columns, the least minimum, the greatest maximum and the
nulls of the files; the distinct count is exact when every file kept its value set, else an upper bound (the
non-null rows, and for integers and dates the width of the range).
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from collections.abc import Sequence
from typing import Any

from thrift.TSerialization import deserialize, serialize

from sargable.errors import DamagedMetastoreError
from sargable.hms.bindings import TBinaryProtocol, ttypes
from sargable.stats import FileStats
from sargable.types import DataType

_ANALYZED = struct.Struct(">q")
_FACTORY = TBinaryProtocol.TBinaryProtocolAcceleratedFactory()
_KINDS = ("booleanStats", "longStats", "doubleStats", "stringStats", "binaryStats", "decimalStats", "dateStats")


def encode(obj: Any, last_analyzed: int | None) -> bytes:
    return _ANALYZED.pack(last_analyzed or 0) + serialize(obj, _FACTORY)


def decode(raw: bytes) -> tuple[Any, int]:
    """(the `ColumnStatisticsObj`, when it was analyzed) of a kept object."""
    try:
        (analyzed,) = _ANALYZED.unpack(raw[: _ANALYZED.size])
        obj = deserialize(ttypes.ColumnStatisticsObj(), raw[_ANALYZED.size :], _FACTORY)
    except Exception as exc:  # the Thrift runtime raises any of several types on bytes it can't read
        raise DamagedMetastoreError(f"kept column statistics that don't decode ({type(exc).__name__}: {exc})") from None
    return obj, analyzed


def kind(obj: Any) -> str | None:
    """Which member of the `ColumnStatisticsData` union is set (None: none, or more than one)."""
    data = obj.statsData
    found = [name for name in _KINDS if data is not None and getattr(data, name) is not None]
    return found[0] if len(found) == 1 else None


def _decimal(value: Any) -> decimal.Decimal:
    return decimal.Decimal(int.from_bytes(value.unscaled, "big", signed=True)).scaleb(-value.scale)


def _least(values: list[Any], key: Any = None) -> Any:
    present = [v for v in values if v is not None]
    return min(present, key=key) if present else None


def _greatest(values: list[Any], key: Any = None) -> Any:
    present = [v for v in values if v is not None]
    return max(present, key=key) if present else None


def aggregate(objs: Sequence[Any]) -> Any | None:
    """One column's statistics over partitions (None when they are of different kinds or of none)."""
    kinds = {kind(obj) for obj in objs}
    if len(kinds) != 1 or None in kinds:
        return None
    (name,) = kinds
    parts = [getattr(obj.statsData, name) for obj in objs]
    nulls = sum(p.numNulls or 0 for p in parts)
    if name == "booleanStats":
        merged = ttypes.BooleanColumnStatsData(
            numTrues=sum(p.numTrues or 0 for p in parts), numFalses=sum(p.numFalses or 0 for p in parts), numNulls=nulls
        )
    elif name in ("stringStats", "binaryStats"):
        merged = type(parts[0])(
            maxColLen=_greatest([p.maxColLen for p in parts]),
            avgColLen=_greatest([p.avgColLen for p in parts]),
            numNulls=nulls,
        )
        if name == "stringStats":
            merged.numDVs = _greatest([p.numDVs for p in parts])
    else:
        order = {"decimalStats": _decimal, "dateStats": lambda d: d.daysSinceEpoch}.get(name)
        merged = type(parts[0])(
            lowValue=_least([p.lowValue for p in parts], key=order),
            highValue=_greatest([p.highValue for p in parts], key=order),
            numNulls=nulls,
            numDVs=_greatest([p.numDVs for p in parts]),
        )
    return ttypes.ColumnStatisticsObj(
        colName=objs[0].colName, colType=objs[0].colType, statsData=ttypes.ColumnStatisticsData(**{name: merged})
    )


_EPOCH = dt.date(1970, 1, 1)


def _hive_decimal(value: decimal.Decimal, scale: int) -> Any:
    unscaled = int(value.scaleb(scale).to_integral_value())
    return ttypes.Decimal(scale=scale, unscaled=unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True))


def _distinct(files: Sequence[FileStats], name: str, dtype: DataType, low: Any, high: Any, present: int) -> int:
    """The number of distinct non-null values: exact from the files' value sets, else an upper bound."""
    sets = [f.columns[name].distinct for f in files if f.columns[name].null_count != f.row_count]
    if all(values is not None for values in sets):
        return len(frozenset().union(*sets))
    if low is not None and (dtype.is_integral or dtype.name == "date"):
        width = (high - low).days + 1 if dtype.name == "date" else high - low + 1
        return min(present, width)
    return present


def from_files(files: Sequence[FileStats], columns: Sequence[tuple[str, DataType]]) -> list[Any]:
    """Statistics objects of the columns whose type has Hive statistics and that every file has statistics of
    (others are left out)."""
    out = []
    for name, dtype in columns:
        stats = [f.columns.get(name) for f in files]
        if not (dtype.is_numeric or dtype.name == "date") or any(c is None or c.null_count is None for c in stats):
            continue
        if any((c.min is None or c.max is None) and c.null_count != f.row_count for c, f in zip(stats, files)):
            continue
        nulls = sum(c.null_count for c in stats)
        present = sum(f.row_count for f in files) - nulls
        low = _least([c.min for c in stats])
        high = _greatest([c.max for c in stats])
        ndv = _distinct(files, name, dtype, low, high, present)
        if dtype.is_integral:
            data = ttypes.ColumnStatisticsData(longStats=ttypes.LongColumnStatsData(low, high, nulls, ndv))
        elif dtype.is_floating:
            data = ttypes.ColumnStatisticsData(doubleStats=ttypes.DoubleColumnStatsData(low, high, nulls, ndv))
        elif dtype.name == "decimal":
            bounds = [None if v is None else _hive_decimal(v, dtype.scale or 0) for v in (low, high)]
            data = ttypes.ColumnStatisticsData(decimalStats=ttypes.DecimalColumnStatsData(*bounds, nulls, ndv))
        else:
            days = [None if v is None else ttypes.Date((v - _EPOCH).days) for v in (low, high)]
            data = ttypes.ColumnStatisticsData(dateStats=ttypes.DateColumnStatsData(*days, nulls, ndv))
        out.append(ttypes.ColumnStatisticsObj(colName=name.lower(), colType=str(dtype), statsData=data))
    return out
