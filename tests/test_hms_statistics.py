"""Hive column statistics through `sargable serve` (what Hive's and Trino's `ANALYZE` write and their planners read),
with pymetastore's Thrift client, on both backends: whatever is written is read back exactly, per table and per
partition; partitions aggregate as Hive aggregates them; statistics follow a rename and are refused for what does
not exist."""

from __future__ import annotations

import contextlib
import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hms_server import SargableServe, thrift_client
from metastore_fixtures import BACKENDS, fresh_url
from sargable.errors import NoSuchObjectError
from sargable.metastore import Metastore
from sargable.stats import ColumnStats, FileStats

pytest.importorskip("pymetastore")
from pymetastore.hive_metastore import ttypes

COLUMNS = [("x", "bigint"), ("f", "double"), ("s", "string"), ("m", "decimal(10,2)"), ("d", "date"), ("b", "boolean")]


@pytest.fixture(scope="module", params=BACKENDS)
def server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"stats-{request.param}")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    serve = SargableServe(tmp, fresh_url(request.param, tmp, postgres)).start()
    with thrift_client(serve.port) as client:
        client.create_database(ttypes.Database(name="st", locationUri=f"file:{tmp}/st.db"))
        for name, keys in (("flat", []), ("parts", [("ds", "string")])):
            sd = ttypes.StorageDescriptor(
                cols=[ttypes.FieldSchema(c, t, None) for c, t in COLUMNS],
                location=f"file:{tmp}/st.db/{name}",
                inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
                serdeInfo=ttypes.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", {}),
            )
            client.create_table(
                ttypes.Table(
                    tableName=name,
                    dbName="st",
                    sd=sd,
                    partitionKeys=[ttypes.FieldSchema(k, t, None) for k, t in keys],
                    parameters={},
                    tableType="EXTERNAL_TABLE",
                )
            )
        parts = [ttypes.Partition(values=[ds], dbName="st", tableName="parts") for ds in ("a", "b", "c")]
        client.add_partitions(parts)
    yield serve
    assert serve.stop() == 0


@pytest.fixture
def client(server):
    with thrift_client(server.port) as client:
        yield client


counts = st.integers(0, 2**40)
longs = st.integers(-(2**63), 2**63 - 1)
doubles = st.floats(allow_nan=False)


def _decimal(unscaled: int, scale: int = 2) -> ttypes.Decimal:
    return ttypes.Decimal(scale=scale, unscaled=unscaled.to_bytes(9, "big", signed=True))


def _data(column: str, **member: object) -> tuple[str, ttypes.ColumnStatisticsData]:
    return column, ttypes.ColumnStatisticsData(**member)


T = ttypes
stats_data = st.one_of(
    st.builds(lambda *a: _data("x", longStats=T.LongColumnStatsData(*a)), longs, longs, counts, counts),
    st.builds(
        lambda *a: _data("f", doubleStats=T.DoubleColumnStatsData(*a)),
        doubles,
        doubles,
        counts,
        counts,
        st.none() | st.binary(max_size=40),
    ),
    st.builds(lambda *a: _data("s", stringStats=T.StringColumnStatsData(*a)), counts, doubles, counts, counts),
    st.builds(
        lambda lo, hi, *a: _data("m", decimalStats=T.DecimalColumnStatsData(_decimal(lo), _decimal(hi), *a)),
        longs,
        longs,
        counts,
        counts,
    ),
    st.builds(
        lambda lo, hi, *a: _data("d", dateStats=T.DateColumnStatsData(T.Date(lo), T.Date(hi), *a)),
        longs,
        longs,
        counts,
        counts,
    ),
    st.builds(lambda *a: _data("b", booleanStats=T.BooleanColumnStatsData(*a)), counts, counts, counts),
)


def _stats(db: str, table: str, part: str | None, objs: list[tuple[str, ttypes.ColumnStatisticsData]], when: int = 7):
    desc = ttypes.ColumnStatisticsDesc(
        isTblLevel=part is None, dbName=db, tableName=table, partName=part, lastAnalyzed=when
    )
    types = dict(COLUMNS)
    return ttypes.ColumnStatistics(
        statsDesc=desc, statsObj=[ttypes.ColumnStatisticsObj(c, types[c], data) for c, data in objs]
    )


@settings(max_examples=30)
@given(
    objs=st.lists(stats_data, min_size=1, max_size=4, unique_by=lambda o: o[0]), part=st.sampled_from([None, "ds=b"])
)
def test_what_is_written_is_read_back(server, objs, part):
    with thrift_client(server.port) as client:
        table = "flat" if part is None else "parts"
        written = _stats("st", table, part, objs)
        if part is None:
            assert client.update_table_column_statistics(written)
            names = [c for c, _ in objs]
            got = client.get_table_statistics_req(ttypes.TableStatsRequest("st", table, [*names, "unknown"])).tableStats
        else:
            assert client.update_partition_column_statistics(written)
            request = ttypes.PartitionsStatsRequest("st", table, [c for c, _ in objs], ["ds=b", "ds=zzz"])
            got = client.get_partitions_statistics_req(request).partStats["ds=b"]
        assert got == written.statsObj
        first = objs[0][0]
        one = (
            client.get_table_column_statistics("st", table, first.upper())
            if part is None
            else client.get_partition_column_statistics("st", table, part, first)
        )
        assert (one.statsObj, one.statsDesc.lastAnalyzed, one.statsDesc.isTblLevel) == (
            written.statsObj[:1],
            7,
            part is None,
        )


def test_partitions_aggregate_as_hive_does(client):
    longs = {"ds=a": (5, 9, 1, 4), "ds=b": (-3, 2, 0, 7), "ds=c": None}
    for part, numbers in longs.items():
        client.delete_partition_column_statistics("st", "parts", part, None)
        if numbers is not None:
            data = ttypes.ColumnStatisticsData(longStats=ttypes.LongColumnStatsData(*numbers))
            flag = ttypes.ColumnStatisticsData(booleanStats=ttypes.BooleanColumnStatsData(3, 4, 1))
            client.update_partition_column_statistics(_stats("st", "parts", part, [("x", data), ("b", flag)]))
    names = list(longs)
    aggr = client.get_aggr_stats_for(ttypes.PartitionsStatsRequest("st", "parts", ["x", "b", "f"], names))
    assert aggr.partsFound == 0  # no partition has statistics of f
    aggr = client.get_aggr_stats_for(ttypes.PartitionsStatsRequest("st", "parts", ["x", "b"], names))
    assert aggr.partsFound == 2
    by_name = {obj.colName: obj.statsData for obj in aggr.colStats}
    assert by_name["x"].longStats == ttypes.LongColumnStatsData(lowValue=-3, highValue=9, numNulls=1, numDVs=7)
    assert by_name["b"].booleanStats == ttypes.BooleanColumnStatsData(numTrues=6, numFalses=8, numNulls=2)

    merged = ttypes.ColumnStatisticsData(longStats=ttypes.LongColumnStatsData(0, 20, 5, 3))
    again = [_stats("st", "parts", "ds=a", [("x", merged)])]
    request = ttypes.SetPartitionsStatsRequest(colStats=again, needMerge=True)
    assert client.set_aggr_stats_for(request)
    got = client.get_partition_column_statistics("st", "parts", "ds=a", "x").statsObj[0].statsData.longStats
    assert got == ttypes.LongColumnStatsData(lowValue=0, highValue=20, numNulls=6, numDVs=4)


def test_delete_and_refusals(client):
    data = ttypes.ColumnStatisticsData(longStats=ttypes.LongColumnStatsData(1, 2, 0, 2))
    client.update_table_column_statistics(_stats("st", "flat", None, [("x", data)]))
    assert client.delete_table_column_statistics("st", "flat", "x")
    assert not client.delete_table_column_statistics("st", "flat", "x")
    with pytest.raises(ttypes.NoSuchObjectException, match="no statistics of column 'x'"):
        client.get_table_column_statistics("st", "flat", "x")
    with pytest.raises(ttypes.NoSuchObjectException, match="nosuch"):
        client.update_table_column_statistics(_stats("st", "nosuch", None, [("x", data)]))
    with pytest.raises(ttypes.NoSuchObjectException, match="no partition 'ds=zzz'"):
        client.update_partition_column_statistics(_stats("st", "parts", "ds=zzz", [("x", data)]))
    bad = _stats("st", "flat", None, [("x", data)])
    bad.statsObj[0].colName = "nope"
    with pytest.raises(ttypes.MetaException, match="no column 'nope'"):
        client.update_table_column_statistics(bad)
    empty = _stats("st", "flat", None, [("x", ttypes.ColumnStatisticsData())])
    with pytest.raises(ttypes.MetaException, match="hold no one kind"):
        client.update_table_column_statistics(empty)
    assert client.get_table_statistics_req(ttypes.TableStatsRequest("st", "flat", ["x"])).tableStats == []


def test_statistics_follow_a_rename_not_a_new_table(client, server):
    table = client.get_table("st", "flat")
    table.tableName = "moved"
    table.sd.location = table.sd.location.replace("/flat", "/moved")
    data = ttypes.ColumnStatisticsData(longStats=ttypes.LongColumnStatsData(1, 2, 0, 2))
    client.update_table_column_statistics(_stats("st", "flat", None, [("x", data)]))
    client.alter_table("st", "flat", table)
    assert client.get_table_column_statistics("st", "moved", "x").statsObj[0].statsData == data
    client.drop_table("st", "moved", False)
    table.tableName = "flat"
    client.create_table(table)
    with pytest.raises(ttypes.NoSuchObjectException):
        client.get_table_column_statistics("st", "flat", "x")


def test_statistics_go_with_a_dropped_partition(client):
    data = ttypes.ColumnStatisticsData(longStats=ttypes.LongColumnStatsData(1, 2, 0, 2))
    client.add_partitions([ttypes.Partition(values=["gone"], dbName="st", tableName="parts")])
    client.update_partition_column_statistics(_stats("st", "parts", "ds=gone", [("x", data)]))
    client.update_partition_column_statistics(_stats("st", "parts", "ds=c", [("x", data)]))
    assert client.drop_partition_by_name("st", "parts", "ds=gone", False)
    client.add_partitions([ttypes.Partition(values=["gone"], dbName="st", tableName="parts")])
    with pytest.raises(ttypes.NoSuchObjectException, match="no statistics"):
        client.get_partition_column_statistics("st", "parts", "ds=gone", "x")
    assert client.get_partition_column_statistics("st", "parts", "ds=c", "x").statsObj[0].statsData == data


VALUE_COLUMNS = [("n", "bigint"), ("v", "double"), ("m", "decimal(10,2)"), ("d", "date"), ("s", "string")]
value_st = {
    "n": st.integers(-(10**12), 10**12),
    "v": st.floats(-1e9, 1e9),
    "m": st.decimals(-(10**6), 10**6, places=2),
    "d": st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1)),
    "s": st.text(max_size=3),
}
file_st = st.fixed_dictionaries(
    {"part": st.sampled_from(["a", "b"]), "rows": st.integers(1, 6), "keep_distinct": st.booleans()}
).flatmap(
    lambda f: st.fixed_dictionaries(
        {c: st.lists(st.none() | value_st[c], min_size=f["rows"], max_size=f["rows"]) for c, _ in VALUE_COLUMNS},
    ).map(lambda values: {**f, "values": values})
)


def _file(location: str, n: int, spec: dict) -> FileStats:
    columns = {}
    for name, values in spec["values"].items():
        present = [v for v in values if v is not None]
        columns[name] = ColumnStats(
            min=min(present, default=None),
            max=max(present, default=None),
            null_count=len(values) - len(present),
            distinct=frozenset(present) if spec["keep_distinct"] else None,
        )
    path = f"{location}/ds={spec['part']}/f{n}.parquet"
    return FileStats(path, spec["rows"], 100, columns, partition={"ds": spec["part"]})


def _expected(specs: list[dict], column: str) -> tuple:
    values = [v for spec in specs for v in spec["values"][column]]
    present = [v for v in values if v is not None]
    return min(present, default=None), max(present, default=None), len(values) - len(present), len(set(present))


def _plain(obj: ttypes.ColumnStatisticsObj) -> tuple:
    """(low, high, nulls, distinct) of a statistics object, as Python values."""
    data = obj.statsData
    kind = next(v for v in (data.longStats, data.doubleStats, data.decimalStats, data.dateStats) if v is not None)
    low, high = kind.lowValue, kind.highValue
    if data.decimalStats is not None:
        low, high = (None if x is None else Decimal(int.from_bytes(x.unscaled, "big", signed=True)).scaleb(-x.scale)
                     for x in (low, high))  # fmt: skip
    if data.dateStats is not None:
        epoch = dt.date(1970, 1, 1)
        low, high = (None if x is None else epoch + dt.timedelta(days=x.daysSinceEpoch) for x in (low, high))
    return low, high, kind.numNulls, kind.numDVs


def _check(objs: list, specs: list[dict], *, exact: bool) -> None:
    got = {obj.colName: _plain(obj) for obj in objs}
    assert set(got) == {"n", "v", "m", "d"}  # strings have no bounds Hive could take
    for column, (low, high, nulls, distinct) in got.items():
        want_low, want_high, want_nulls, want_distinct = _expected(specs, column)
        assert (low, high, nulls) == (want_low, want_high, want_nulls)
        if exact:
            assert distinct == want_distinct
        else:
            assert want_distinct <= distinct <= sum(spec["rows"] for spec in specs) - nulls


@settings(max_examples=15)
@given(specs=st.lists(file_st, min_size=1, max_size=5))
def test_registered_files_answer_without_an_analyze(server, specs):
    """A table whose files sargable registered answers from their statistics, per table, per partition and
    aggregated; checked against the files' values themselves."""
    with Metastore.open(server.metastore_url, warehouse=server.warehouse) as ms:
        ms.create_database("fs", if_not_exists=True)
        with contextlib.suppress(NoSuchObjectError):
            ms.drop_table("fs", "facts")
        ms.create_table("fs", "facts", columns=VALUE_COLUMNS, partition_keys=[("ds", "string")])
        location = ms.table("fs.facts").location
        ms.commit("fs", "facts", add_files=[_file(location, n, spec) for n, spec in enumerate(specs)])
    names = [c for c, _ in VALUE_COLUMNS]
    exact = all(spec["keep_distinct"] for spec in specs)
    with thrift_client(server.port) as client:
        table = client.get_table_statistics_req(ttypes.TableStatsRequest("fs", "facts", names))
        _check(table.tableStats, specs, exact=exact)
        request = ttypes.PartitionsStatsRequest("fs", "facts", names, ["ds=a", "ds=b"])
        by_part = client.get_partitions_statistics_req(request).partStats
        for part in ("a", "b"):
            mine = [spec for spec in specs if spec["part"] == part]
            assert (f"ds={part}" in by_part) == bool(mine)
            if mine:
                _check(by_part[f"ds={part}"], mine, exact=all(spec["keep_distinct"] for spec in mine))
        assert client.get_aggr_stats_for(request).partsFound == 0  # none has statistics of the string column
        request.colNames = ["n", "v", "m", "d"]
        aggr = client.get_aggr_stats_for(request)
        assert aggr.partsFound == len({spec["part"] for spec in specs})
        got = {obj.colName: _plain(obj)[:3] for obj in aggr.colStats}
        assert got == {column: _expected(specs, column)[:3] for column in ("n", "v", "m", "d")}


def test_table_parameters_carry_the_true_totals(server, client):
    """numFiles / numRows / totalSize of a table whose files sargable registers are its totals after every commit
    (what Spark sizes a table by), in every call that returns the table; a table whose files come from folders
    keeps what its writers set."""
    with Metastore.open(server.metastore_url, warehouse=server.warehouse) as ms:
        ms.create_database("tot", if_not_exists=True)
        ms.create_table("tot", "t", columns=[("n", "bigint")], partition_keys=[("ds", "string")])
        location = ms.table("tot.t").location

        def commit(part: str, rows: int, size: int) -> None:
            added = FileStats(f"{location}/ds={part}/f.parquet", rows, size, partition={"ds": part})
            ms.commit("tot", "t", add_files=[added])

        def shown() -> list[dict]:
            tables = [
                client.get_table("tot", "t"),
                client.get_table_req(ttypes.GetTableRequest(dbName="tot", tblName="t")).table,
                *client.get_table_objects_by_name("tot", ["t"]),
            ]
            return [{k: t.parameters.get(k) for k in ("numFiles", "numRows", "totalSize")} for t in tables]

        assert shown() == [{"numFiles": "0", "numRows": "0", "totalSize": "0"}] * 3
        commit("a", 10, 1000)
        assert shown() == [{"numFiles": "1", "numRows": "10", "totalSize": "1000"}] * 3
        commit("b", 5, 24)
        assert shown() == [{"numFiles": "2", "numRows": "15", "totalSize": "1024"}] * 3
    flat = client.get_table("st", "parts")
    assert "numRows" not in flat.parameters
