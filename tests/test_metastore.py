"""Metastore behaviour on both backends: catalog, partitions, Hive's filter cases, atomicity, indexes, files."""

from __future__ import annotations

import datetime as dt

import pytest

import sargable as sg
from sargable.metastore import Metastore
from sargable.stats import ColumnStats, FileStats

# Hive's TestHiveMetaStore partition-filter fixture: (p1 string, p2 string, p3 int).
HIVE_PARTITIONS = [
    ("p11", "p21", 31),
    ("p11", "p22", 32),
    ("p12", "p21", 31),
    ("p12", "p23", 32),
    ("p13", "p24", 31),
    ("p13", "p25", -33),
]

# Expected counts worked out by hand from the six partitions above (not from sargable).
HIVE_CASES = [
    ('p1 = "p11"', 2),
    ('p1 = "p12"', 2),
    ('p2 = "p21"', 2),
    ('p2 = "p23"', 1),
    ("p3 = 31", 3),
    ("p3 = 33", 0),
    ("p3 = -33", 1),
    ('p1 = "p11" and p2="p22"', 1),
    ('p1 = "p11" or p2="p23"', 3),
    ('p1 = "p11" or p1="p12"', 4),
    ('p1 = "p11" or (p1="p12" and p2="p21")', 3),
    ('p1 = "p11" or (p1="p12" and p2="p21") Or (p1="p13" aNd p2="p24")', 4),
    ('p1="p12" and (p2="p27" Or p2="p21")', 1),
    ('p1="p12" and p2="p27" Or p2="p21"', 2),
    ('p1 > "p12"', 2),
    ('p1 >= "p12"', 4),
    ('p1 < "p12"', 2),
    ('p1 <= "p12"', 4),
    ('p1 != "p12"', 4),
    ('p1 <> "p12"', 4),
    ('31 != p3 and p1 = "p12"', 1),
    ("p3 between 32 and 31", 0),
    ("p3 between 31 and 32", 5),
    ("p3 not between 31 and 32", 1),
    ("p3 > -34", 6),
    ("p3 != 8589934592", 6),
    ("p3 < 8589934592 and p3 > -8589934592", 6),
    ("p3 in (31, 33)", 3),
    ('p2 not in ("p21", "p22")', 3),
    ("p1 like 'p1%'", 6),
    ("p2 like 'p2_'", 6),
    ("p2 like '%3'", 1),
]


@pytest.fixture
def hive_table(metastore: Metastore) -> Metastore:
    metastore.create_database("hive")
    metastore.create_table(
        "hive", "t", columns=[("c", "string")], partition_keys=[("p1", "string"), ("p2", "string"), ("p3", "int")]
    )
    metastore.add_partitions("hive", "t", HIVE_PARTITIONS)
    return metastore


@pytest.mark.parametrize(("filter_text", "expected"), HIVE_CASES)
def test_hive_partition_filter_cases(hive_table: Metastore, filter_text: str, expected: int) -> None:
    got = hive_table.get_partitions_by_filter("hive", "t", filter_text)
    assert len(got) == expected
    assert [p.values for p in got] == sorted(p.values for p in got)
    by_expr = hive_table.get_partitions_by_expr("hive", "t", sg.dumps(sg.parse(filter_text)))
    assert [p.values for p in by_expr] == [p.values for p in got]


@pytest.mark.parametrize(("filter_text", "expected"), [('p1 like "p1.*"', 6), ('p2 like "p.*3"', 1)])
def test_hive_dialect_like_is_a_regular_expression(hive_table: Metastore, filter_text: str, expected: int) -> None:
    assert len(hive_table.get_partitions_by_filter("hive", "t", filter_text, dialect="hive")) == expected


def test_names_values_and_order(hive_table: Metastore) -> None:
    names = hive_table.list_partition_names("hive", "t")
    assert names == [f"p1={a}/p2={b}/p3={c}" for a, b, c in sorted(HIVE_PARTITIONS)]
    (part,) = hive_table.get_partitions_by_filter("hive", "t", "p3 = -33")
    assert part.values == ("p13", "p25", -33)
    assert part.spec == {"p1": "p13", "p2": "p25", "p3": -33}
    assert part.location.endswith("/hive.db/t/p1=p13/p2=p25/p3=-33")
    assert (
        hive_table.get_partitions_by_filter("hive", "t", "p1 >= 'p11'", max_parts=2)
        == (hive_table.get_partitions_by_filter("hive", "t", "p1 >= 'p11'")[:2])
    )


def test_filter_on_a_data_column_is_an_error_naming_it(hive_table: Metastore) -> None:
    with pytest.raises(sg.MetastoreError, match=r"'c'.*not a partition key of hive\.t"):
        hive_table.get_partitions_by_filter("hive", "t", "c = 'x'")


def test_typed_values_not_strings(metastore: Metastore) -> None:
    metastore.create_database("db")
    metastore.create_table("db", "t", [("x", "int")], [("ds", "date"), ("hr", "int")])
    metastore.add_partitions("db", "t", [{"ds": "2024-01-01", "hr": h} for h in range(24)])
    got = metastore.get_partitions_by_filter("db", "t", "hr > 9")
    assert sorted(p.values[1] for p in got) == list(range(10, 24))
    assert got[0].values[0] == dt.date(2024, 1, 1)
    with pytest.raises(sg.SargableError, match=r"hr.*int.*abc"):
        metastore.get_partitions_by_filter("db", "t", "hr = 'abc'")


def test_null_partition_matches_only_is_null(metastore: Metastore) -> None:
    metastore.create_database("db")
    metastore.create_table("db", "t", [("x", "int")], [("hr", "int")])
    metastore.add_partitions(
        "db", "t", [{"hr": 3}, {"hr": None}, {"hr": "__HIVE_DEFAULT_PARTITION__"}], if_not_exists=True
    )
    assert metastore.list_partition_names("db", "t") == ["hr=__HIVE_DEFAULT_PARTITION__", "hr=3"]
    assert [p.values for p in metastore.get_partitions_by_filter("db", "t", "not (hr = 3)")] == []
    assert [p.values for p in metastore.get_partitions_by_filter("db", "t", "hr is null")] == [(None,)]
    assert [p.values for p in metastore.get_partitions_by_filter("db", "t", "hr != 4")] == [(3,)]


def test_hive_escaping_round_trips(metastore: Metastore) -> None:
    metastore.create_database("db")
    metastore.create_table("db", "t", [("x", "int")], [("s", "string")])
    odd = ["a/b", "x=y", "50%", "colon:here", "new\nline", "ünï", "..", "q'uote"]
    metastore.add_partitions("db", "t", [{"s": v} for v in odd])
    names = metastore.list_partition_names("db", "t")
    assert "s=a%2Fb" in names and "s=x%3Dy" in names and "s=50%25" in names and "s=colon%3Ahere" in names
    back = metastore.get_partitions_by_names("db", "t", names)
    assert sorted(p.values[0] for p in back) == sorted(odd)


def test_bad_batch_leaves_nothing_behind(metastore: Metastore) -> None:
    metastore.create_database("db")
    metastore.create_table("db", "t", [("x", "int")], [("ds", "date"), ("hr", "int")])
    metastore.add_partitions("db", "t", [{"ds": "2024-01-01", "hr": 1}])
    before = metastore.get_table("db", "t").version
    batch = [{"ds": "2024-01-02", "hr": h} for h in range(100)] + [{"ds": "2024-01-02", "hr": "not-an-int"}]
    with pytest.raises(sg.MetastoreError, match="not-an-int"):
        metastore.add_partitions("db", "t", batch)
    with pytest.raises(sg.AlreadyExistsError):
        metastore.add_partitions("db", "t", [{"ds": "2024-01-03", "hr": 1}, {"ds": "2024-01-01", "hr": 1}])
    assert metastore.list_partition_names("db", "t") == ["ds=2024-01-01/hr=1"]
    assert metastore.get_table("db", "t").version == before


def test_drop_partitions_by_filter(metastore: Metastore) -> None:
    metastore.create_database("db")
    metastore.create_table("db", "t", [("x", "int")], [("ds", "date")], index_all=True)
    metastore.add_partitions("db", "t", [{"ds": f"2022-12-{d:02d}"} for d in range(25, 32)] + [{"ds": "2023-01-01"}])
    dropped = metastore.drop_partitions("db", "t", "ds < '2023-01-01'")
    assert len(dropped) == 7
    assert metastore.list_partition_names("db", "t") == ["ds=2023-01-01"]


def test_secondary_index_examines_about_what_it_returns(metastore: Metastore) -> None:
    metastore.create_database("db")
    metastore.create_table("db", "t", [("x", "int")], [("ds", "date"), ("hr", "int")])
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=d) for d in range(30)]
    metastore.add_partitions("db", "t", [(d, h) for d in days for h in range(24)])
    no_index = metastore.explain_filter("db", "t", "hr = 3")
    assert no_index.partitions_returned == 30
    assert no_index.keys_examined == 30 * 24
    metastore.create_index("db", "t", "hr")
    with_index = metastore.explain_filter("db", "t", "hr = 3")
    assert with_index.partitions_returned == 30
    assert with_index.keys_examined <= 30 + 1
    assert "index on hr" in with_index.access_path
    got = metastore.get_partitions_by_filter("db", "t", "hr = 3 and ds >= '2024-01-20'")
    assert [p.values for p in got] == [(d, 3) for d in days if d >= dt.date(2024, 1, 20)]
    metastore.add_partitions("db", "t", [(dt.date(2025, 1, 1), 3)])
    assert len(metastore.get_partitions_by_filter("db", "t", "hr = 3")) == 31
    metastore.drop_partitions("db", "t", "ds = '2025-01-01'")
    assert len(metastore.get_partitions_by_filter("db", "t", "hr in (3)")) == 30


def test_commit_adds_partitions_and_files_atomically(metastore: Metastore) -> None:
    metastore.create_database("db")
    metastore.create_table("db", "t", [("amount", "double"), ("country", "string")], [("ds", "date")])
    files = [
        FileStats(
            path=f"/w/ds=2024-01-0{d}/part-{d}.parquet",
            row_count=10,
            size_bytes=1000,
            columns={"amount": ColumnStats(min=1.5, max=9.0, null_count=0), "country": ColumnStats("DE", "US", 1)},
            partition={"ds": f"2024-01-0{d}"},
        )
        for d in (1, 2)
    ]
    result = metastore.commit("db", "t", add_files=files)
    assert result.files_added == 2 and result.partitions_added == 2
    assert metastore.list_partition_names("db", "t") == ["ds=2024-01-01", "ds=2024-01-02"]
    listed = metastore.list_files("db", "t")
    assert [f.path for f in listed] == [f.path for f in files]
    assert listed[0].columns["amount"].min == 1.5 and listed[0].columns["country"].max == "US"
    assert listed[0].partition == {"ds": dt.date(2024, 1, 1)}
    (part,) = metastore.get_partitions_by_filter("db", "t", "ds = '2024-01-02'")
    assert [f.path for f in metastore.list_files("db", "t", [part])] == [files[1].path]

    version = metastore.get_table("db", "t").version
    with pytest.raises(sg.AlreadyExistsError):
        metastore.commit("db", "t", add_files=[files[0]])
    with pytest.raises(sg.CommitConflictError, match="another commit removed it"):
        metastore.commit("db", "t", add_files=[], remove_files=["/nope.parquet"])
    assert metastore.get_table("db", "t").version == version

    metastore.commit("db", "t", remove_files=[files[0].path])
    assert [f.path for f in metastore.list_files("db", "t")] == [files[1].path]
    with pytest.raises(sg.CommitConflictError):
        metastore.commit("db", "t", add_files=[files[0]], expected_version=version)
    metastore.commit("db", "t", replace_partitions=[{"ds": "2024-01-02"}], add_files=[files[0]])
    assert [f.path for f in metastore.list_files("db", "t")] == [files[0].path]


def test_catalog_errors(metastore: Metastore) -> None:
    with pytest.raises(sg.NoSuchObjectError):
        metastore.create_table("nodb", "t", [("x", "int")])
    metastore.create_database("db")
    with pytest.raises(sg.AlreadyExistsError):
        metastore.create_database("db")
    metastore.create_database("db", if_not_exists=True)
    for bad in ["", "a b", "x;DROP TABLE y", "../up", "a\x00b", None]:
        with pytest.raises(sg.MetastoreError):
            metastore.create_database(bad)
    with pytest.raises(sg.MetastoreError, match="decimal"):
        metastore.create_table("db", "t", [("x", "decimal(50,2)")])
    with pytest.raises(sg.MetastoreError, match="twice"):
        metastore.create_table("db", "t", [("x", "int")], [("X", "int")])
    for unordered in ["binary", "array<int>", "map<string,int>", "struct<a:int>"]:
        with pytest.raises(sg.MetastoreError, match="can't key partitions"):
            metastore.create_table("db", "t", [("x", "int")], [("p", unordered)])
    assert metastore.list_tables("db") == []
    metastore.create_table("db", "t", [("x", "int")], [("p", "int")])
    assert metastore.list_tables("db") == ["t"] and metastore.list_tables() == ["db.t"]
    with pytest.raises(sg.NoSuchObjectError):
        metastore.get_partitions_by_filter("db", "missing", "p = 1")
    metastore.drop_table("db", "t")
    assert metastore.list_tables("db") == []
