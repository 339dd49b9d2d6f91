"""The `sargable` command: explain, tables, partitions; JSON output; one error line and exit 1 on bad input."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import re
import shlex
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sargable as sg
from sargable.cli import main, parse_schema
from sargable.metastore import Metastore


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_explain_filter_json(capsys) -> None:
    code, out, _ = run(
        capsys, "explain", "hr > 1 and hr > 5 and ds = '2024-01-01'", "--schema", "ds date, hr int", "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert sg.parse(data["parsed"]) == sg.parse("hr > 1 and hr > 5 and ds = '2024-01-01'")
    assert "DATE '2024-01-01'" in data["bound"]
    assert "hr > 1" not in data["normalized"] and "hr > " in data["normalized"]
    assert data["search_argument"].startswith("leaf-0 = (")


def test_explain_prints_a_table(capsys) -> None:
    code, out, _ = run(capsys, "explain", "x in (1, 2)")
    assert code == 0
    assert "parsed" in out and "search argument" in out and "(IN x 1 2)" in out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["explain", "p1 >= "], "expected a value"),
        (["explain", "hr = 'abc'", "--schema", "hr int"], "abc"),
        (["explain", "x = 1", "--schema", "x"], "name type"),
        (["explain", "x = 1", "--schema", "y int"], "x"),
        (["partitions", "notatable"], "DB.TABLE"),
    ],
)
def test_bad_input_exits_1_with_an_error_line(capsys, argv, fragment) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert out == ""
    assert err.startswith("error: ") and fragment in err


def test_tables_partitions_and_table_explain(capsys, tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with Metastore.open(url, warehouse=tmp_path) as ms:
        ms.create_database("sales")
        ms.create_table("sales", "events", [("amount", "double")], [("ds", "date"), ("hr", "int")])
        ms.add_partitions("sales", "events", [{"ds": "2024-01-01", "hr": h} for h in range(5)])
    code, out, _ = run(capsys, "--metastore", url, "tables", "--json")
    assert code == 0
    (row,) = json.loads(out)
    assert row["table"] == "sales.events" and row["partitions"] == 5
    code, out, _ = run(capsys, "--metastore", url, "partitions", "sales.events", "--filter", "hr >= 3", "--json")
    assert [r["name"] for r in json.loads(out)] == ["ds=2024-01-01/hr=3", "ds=2024-01-01/hr=4"]
    code, out, _ = run(capsys, "--metastore", url, "explain", "sales.events", "ds = '2024-01-01' and hr = 3", "--json")
    data = json.loads(out)
    assert code == 0 and data["partitions_returned"] == 1 and data["keys_examined"] == 1


def test_parse_schema_keeps_parenthesized_commas() -> None:
    assert [(n, str(t)) for n, t in parse_schema("a decimal(10,2), b varchar(3)")] == [
        ("a", "decimal(10,2)"),
        ("b", "varchar(3)"),
    ]


# -- create-table, add-partitions, vacuum, bench: JSON checked against the metastore's own API ------------------


@pytest.fixture
def metastore_url(tmp_path, monkeypatch) -> str:
    """A fresh SQLite metastore holding sales.events (ds date, hr int; index on hr), tables under tmp_path."""
    monkeypatch.setenv("SARGABLE_WAREHOUSE", str(tmp_path / "warehouse"))
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with Metastore.open(url) as ms:
        ms.create_database("sales")
        ms.create_table("sales", "events", [("amount", "double")], [("ds", "date"), ("hr", "int")])
        ms.create_index("sales", "events", "hr")
    return url


def test_create_table_json_matches_the_metastore(capsys, tmp_path, metastore_url) -> None:
    code, out, err = run(
        capsys,
        *("--metastore", metastore_url, "create-table", "web.clicks", "--columns", "user_id bigint, url string"),
        *("--partition-keys", "ds date, country string, price decimal(10,2)", "--index", "country", "--json"),
    )
    assert code == 0, err
    row = json.loads(out)
    with Metastore.open(metastore_url) as ms:
        table = ms.get_table("web", "clicks")
        tables = ms.list_tables()
    assert "web.clicks" in tables and row["table"] == table.qualified_name
    assert [(n, str(t)) for n, t in table.partition_keys] == [
        ("ds", "date"),
        ("country", "string"),
        ("price", "decimal(10,2)"),
    ]
    assert [(n, str(t)) for n, t in table.columns] == [("user_id", "bigint"), ("url", "string")]
    assert row["indexes"] == "country" and table.indexes == ("country",)
    assert row["location"] == table.location and table.location.startswith(str(tmp_path / "warehouse"))
    assert run(capsys, "--metastore", metastore_url, "create-table", "web.clicks")[0] == 1
    code, _, _ = run(capsys, "--metastore", metastore_url, "create-table", "web.clicks", "--if-not-exists")
    assert code == 0


def test_tables_json_counts_are_the_metastores(capsys, metastore_url) -> None:
    with Metastore.open(metastore_url) as ms:
        ms.add_partitions("sales", "events", [{"ds": "2024-01-01", "hr": h} for h in range(7)])
        totals = ms.table_stats("sales", "events")
    code, out, _ = run(capsys, "--metastore", metastore_url, "tables", "sales", "--json")
    (row,) = json.loads(out)
    assert code == 0
    assert (row["partitions"], row["files"], row["bytes"], row["rows"]) == tuple(totals) == (7, 0, 0, 0)
    assert row["indexes"] == "hr"


def _names(url: str) -> list[str]:
    with Metastore.open(url) as ms:
        return ms.list_partition_names("sales", "events")


@settings(max_examples=20)
@given(
    specs=st.sets(st.tuples(st.dates(dt.date(1999, 12, 30), dt.date(2000, 1, 3)), st.integers(0, 23)), max_size=30),
    batch=st.integers(1, 7),
    names=st.booleans(),
    data=st.data(),
)
def test_add_partitions_adds_exactly_the_rows(specs, batch, names, data) -> None:
    """Any set of partitions, in any order, as CSV or as names, in any batch size: the metastore then lists exactly
    them (Hive names built here by hand, sorted by Python's own ordering of the typed values)."""
    rows = data.draw(st.permutations(sorted(specs)))
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/m.db"
        with Metastore.open(url, warehouse=tmp) as ms:
            ms.create_database("sales")
            ms.create_table("sales", "events", [("amount", "double")], [("ds", "date"), ("hr", "int")])
        source = Path(tmp) / "in.txt"
        lines = [f"ds={d}/hr={h}" for d, h in rows] if names else ["hr,ds", *(f"{h},{d}" for d, h in rows)]
        source.write_text("\n".join(lines) + "\n")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(
                [
                    "--metastore",
                    url,
                    "add-partitions",
                    "sales.events",
                    str(source),
                    "--json",
                    "--batch-size",
                    str(batch),
                ]
            )
        assert code == 0
        result = json.loads(out.getvalue())
        assert result["read"] == result["added"] == result["partitions"] == len(specs)
        assert result["batches"] == -(-len(specs) // batch)
        assert _names(url) == [f"ds={d}/hr={h}" for d, h in sorted(specs)]


def test_add_partitions_batches_nulls_and_locations(capsys, tmp_path, metastore_url) -> None:
    source = tmp_path / "parts.csv"
    source.write_text(
        "ds,hr,location\n2024-01-01,1,\n2024-01-01,,\n2024-01-02,5,/elsewhere/p5\n2024-01-02,6,\n2024-01-03,0,\n"
    )
    code, out, err = run(
        capsys,
        "--metastore",
        metastore_url,
        "add-partitions",
        "sales.events",
        str(source),
        "--batch-size",
        "2",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out) == {"table": "sales.events", "read": 5, "added": 5, "batches": 3, "partitions": 5}
    with Metastore.open(metastore_url) as ms:
        parts = {p.name: p for p in ms.iter_partitions("sales", "events")}
        nulls = ms.get_partitions_by_filter("sales", "events", "hr is null")
    assert parts["ds=2024-01-02/hr=5"].location == "/elsewhere/p5"
    assert parts["ds=2024-01-02/hr=6"].location.endswith("/events/ds=2024-01-02/hr=6")
    assert [p.values for p in nulls] == [(dt.date(2024, 1, 1), None)]


def test_add_partitions_validates_every_line_before_writing(capsys, tmp_path, metastore_url) -> None:
    source = tmp_path / "parts.csv"
    source.write_text("ds,hr\n2024-01-01,1\n2024-01-01,2\n2024-01-01,x\n")
    code, out, err = run(capsys, "--metastore", metastore_url, "add-partitions", "sales.events", str(source))
    assert code == 1 and out == ""
    assert err.startswith("error: line 4: ") and len(err.splitlines()) == 1
    assert _names(metastore_url) == []
    source.write_text("ds,hour\n2024-01-01,1\n")
    code, _, err = run(capsys, "--metastore", metastore_url, "add-partitions", "sales.events", str(source))
    assert code == 1 and "header" in err


def test_add_partitions_resumes_with_if_not_exists(capsys, tmp_path, metastore_url) -> None:
    with Metastore.open(metastore_url) as ms:
        ms.add_partitions("sales", "events", [{"ds": "2024-01-01", "hr": 3}])
    source = tmp_path / "names.txt"
    source.write_text("".join(f"ds=2024-01-01/hr={h}\n" for h in range(6)))
    argv = ["--metastore", metastore_url, "add-partitions", "sales.events", str(source), "--batch-size", "2"]
    code, _, err = run(capsys, *argv)
    assert code == 1 and "lines 3-4" in err and "--if-not-exists" in err and len(err.splitlines()) == 1
    assert _names(metastore_url) == ["ds=2024-01-01/hr=0", "ds=2024-01-01/hr=1", "ds=2024-01-01/hr=3"]
    code, out, _ = run(capsys, *argv, "--if-not-exists", "--json")
    assert code == 0 and json.loads(out)["added"] == 3
    assert _names(metastore_url) == [f"ds=2024-01-01/hr={h}" for h in range(6)]


def test_vacuum_lists_and_deletes_only_unreferenced_files(capsys, tmp_path, metastore_url) -> None:
    with Metastore.open(metastore_url) as ms:
        location = Path(ms.get_table("sales", "events").location)
        kept = location / "ds=2024-01-01" / "hr=1" / "part-0.parquet"
        stray = location / "ds=2024-01-01" / "hr=2" / "part-9.parquet"
        foreign = location / "ds=2024-01-01" / "hr=2" / "part-8.parquet"
        for path in (kept, stray, foreign):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"PAR1")
        ms.add_files("sales", "events", [sg.FileStats(str(kept), 1, 4, partition={"ds": "2024-01-01", "hr": 1})])
        failed = ms.table("sales", "events").begin_write()  # a write that recorded `stray` and died
        ms.table("sales", "events").record_write(failed.write_id, [str(stray)])
    base = ["--metastore", metastore_url, "vacuum", "sales.events"]
    code, out, _ = run(capsys, *base, "--json")
    assert code == 0 and json.loads(out)["files"] == []  # younger than the default hour
    code, out, _ = run(capsys, *base, "--older-than", "0", "--json")
    assert code == 0 and json.loads(out) == {
        "table": "sales.events",
        "deleted": False,
        "older_than": 0.0,
        "files": [str(stray)],
        "kept": [],
        "unlisted": {"files": [], "count": 0, "bytes": 0, "older_than": 7 * 24 * 3600.0, "not_looked_for": None},
    }
    assert stray.exists()
    code, out, _ = run(capsys, *base, "--older-than", "0", "--delete", "--json")
    assert code == 0 and json.loads(out)["files"] == [str(stray)]
    assert not stray.exists() and kept.exists() and foreign.exists()
    code, out, _ = run(capsys, *base, "--older-than", "0")
    assert code == 0 and "no unreferenced files" in out


def test_bench_agrees_with_brute_force(capsys) -> None:
    code, out, err = run(capsys, "bench", "--partitions", "5000", "--budget", "0", "--json")
    assert code == 0, err
    data = json.loads(out)
    returned = {f["filter"]: f["returned"] for f in data["filters"]}
    assert data["partitions"] == 5000 and returned["no filter"] == 5000 and returned["one partition"] == 1
    assert returned["one day"] == 24 * 8 and returned["7-day range"] == 7 * 24 * 8
    assert all(f["agrees"] for f in data["filters"] if f["expression"] is not None)
    assert all(f["sargable_ms"] > 0 for f in data["filters"])


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["nosuch"], "invalid choice"),
        (["partitions"], "required: table"),
        (["tables", "--bogus"], "unrecognized arguments"),
        (["vacuum", "sales.events", "--older-than", "-5"], "non-negative"),
        (["bench", "--partitions", "many"], "invalid int"),
    ],
)
def test_bad_command_lines_exit_2_with_one_line(capsys, argv, fragment) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and fragment in err and len(err.splitlines()) == 1


def test_missing_metastore_is_an_error_and_is_not_created(capsys, tmp_path) -> None:
    path = tmp_path / "nowhere" / "m.db"
    for argv in (["tables"], ["partitions", "a.b"], ["explain", "a.b", "x = 1"], ["vacuum", "a.b"]):
        code, out, err = run(capsys, "--metastore", f"sqlite:///{path}", *argv)
        assert code == 1 and out == "" and err.startswith("error: no metastore at ")
    assert not path.parent.exists()


def test_help_exits_0(capsys) -> None:
    code, out, _ = run(capsys, "add-partitions", "--help")
    assert code == 0 and "--batch-size" in out


def test_unknown_table_and_bad_limit_exit_1(capsys, metastore_url) -> None:
    for argv in (["partitions", "sales.nosuch"], ["add-partitions", "sales.nosuch", "-"], ["vacuum", "sales.nosuch"]):
        code, _, err = run(capsys, "--metastore", metastore_url, *argv)
        assert code == 1 and "nosuch" in err and len(err.splitlines()) == 1
    code, _, err = run(capsys, "--metastore", metastore_url, "partitions", "sales.events", "--limit", "-1")
    assert code == 1 and "--limit" in err


def test_store_errors_are_one_line(capsys, tmp_path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_text("not a database\n" * 10)
    for url in (f"sqlite:///{garbage}", "postgresql://nobody@127.0.0.1:1/x", "mysql://x"):
        code, out, err = run(capsys, "--metastore", url, "tables")
        assert code == 1 and out == ""
        assert err.startswith("error: ") and len(err.splitlines()) == 1, err


# -- rich output: data strings are text, never markup ----------------------------------------------------------


def test_explain_shows_the_plan_exactly(capsys, monkeypatch, metastore_url) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    with Metastore.open(metastore_url) as ms:
        ms.add_partitions("sales", "events", [{"ds": f"2024-01-0{d}", "hr": h} for d in range(1, 8) for h in (1, 2)])
        where = "ds between '2024-01-03' and '2024-01-05' and hr = 1 and amount > 3"
        plan = str(ms.table("sales", "events").scan(where).partition_search.plan)
    assert "[" in plan and "]" in plan
    code, out, err = run(capsys, "--metastore", metastore_url, "explain", "sales.events", where)
    assert code == 0, err
    assert f"│ {plan} " in out
    (elapsed,) = [line for line in out.splitlines() if "elapsed ms" in line]
    assert re.search(r"│ \d[\d,]*\.\d{3} +│$", elapsed), elapsed
    assert "[]" not in out and "{" not in out


@given(st.text(alphabet="[]/=ab \\", min_size=1, max_size=12))
@settings(max_examples=10, deadline=None)
def test_partition_values_and_locations_print_as_they_are(value: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        location = f"{tmp}/[bold]t[/bold]"
        url = f"sqlite:///{tmp}/m.db"
        with Metastore.open(url, warehouse=tmp, create=True) as ms:
            ms.create_database("d")
            ms.create_table("d", "t", [("x", "int")], [("k", "string")], location=location)
            ms.add_partitions("d", "t", [{"k": value}])
            (part,) = ms.get_partitions_by_filter("d", "t", None)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), mock.patch.dict(os.environ, {"COLUMNS": "400"}):
            assert main(["--metastore", url, "partitions", "d.t"]) == 0
            assert main(["--metastore", url, "tables"]) == 0
        text = out.getvalue()
        assert f"│ {part.name} " in text and f" {part.location} " in text and f" {location}\n" in text


def test_tables_fit_80_columns_and_wide_shows_everything(capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    url = f"sqlite:///{tmp_path / 'm.db'}"
    location = str(tmp_path / ("deep/" * 12) / "[web]" / "events_by_day_and_hour")
    with Metastore.open(url, warehouse=tmp_path, create=True) as ms:
        ms.create_database("sales")
        ms.create_table("sales", "events", [("x", "int")], [("ds", "date"), ("hr", "int")], location=location)
        ms.create_index("sales", "events", "hr")
        ms.add_partitions("sales", "events", [{"ds": "2024-01-01", "hr": h} for h in range(1234)])
    code, out, err = run(capsys, "--metastore", url, "tables")
    assert code == 0, err
    header, row = out.splitlines()
    assert max(len(header), len(row)) <= 80
    assert header.split() == ["table", "partition", "keys", "partitions", "files", "size", "location"]
    assert row.startswith("sales.events  ds date, hr int") and " 1,234 " in row
    shortened = row.split()[-1]
    head, tail = shortened.split("…")
    assert location.startswith(head) and location.endswith(tail) and len(head) >= 5 and len(tail) >= 10
    code, out, _ = run(capsys, "--metastore", url, "tables", "--wide")
    header, row = out.splitlines()
    assert "indexes" in header and row.endswith(f"  hr       {location}")


# -- errors say what to do next ----------------------------------------------------------------------------------


def test_missing_metastore_says_where_it_looked_and_how_to_create_one(capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SARGABLE_METASTORE", raising=False)
    given_url = f"sqlite:///{tmp_path / 'given.db'}"
    code, _, err = run(capsys, "--metastore", given_url, "tables")
    assert code == 1 and f"looked at --metastore {given_url}" in err
    code, _, err = run(capsys, "partitions", "a.b")
    assert code == 1 and "neither --metastore nor $SARGABLE_METASTORE is set" in err
    assert str(tmp_path / "warehouse" / "metastore.db") in err
    env_url = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("SARGABLE_METASTORE", env_url)
    code, _, err = run(capsys, "explain", "a.b", "x = 1")
    assert code == 1 and f"looked at $SARGABLE_METASTORE={env_url}" in err
    command = err[err.index("`") + 1 : err.rindex("`")].replace("'...'", "'x int'", 1).replace("'...'", "'ds date'")
    create = shlex.split(command)
    assert create[:4] == ["sargable", "--metastore", env_url, "create-table"]
    code, _, err = run(capsys, *create[1:4], "sales.events", *create[5:])
    assert code == 0, err
    assert run(capsys, "tables", "--json")[0] == 0


def test_partition_filter_on_a_data_column_names_the_partition_keys(capsys, metastore_url) -> None:
    code, out, err = run(capsys, "--metastore", metastore_url, "partitions", "sales.events", "--filter", "amount > 1")
    assert code == 1 and out == ""
    assert "'amount'" in err and "data column" in err and "partition keys (ds, hr)" in err
    assert "sargable explain sales.events FILTER" in err
    code, _, err = run(capsys, "--metastore", metastore_url, "partitions", "sales.events", "--filter", "nosuch > 1")
    assert code == 1 and "nor a column" in err and "partition keys: ds, hr" in err


def test_describe_and_optimize_dry_run_read_the_metastore_only(capsys, metastore_url) -> None:
    mib = 1024**2
    with Metastore.open(metastore_url) as ms:
        location = ms.get_table("sales", "events").location
        files = [
            sg.FileStats(
                f"{location}/ds=2024-01-0{day}/hr=1/part-{i}.parquet",
                100,
                size,
                {"amount": sg.ColumnStats(float(i), float(i) + 1, 0)},
                partition={"ds": f"2024-01-0{day}", "hr": 1},
            )
            for day, sizes in ((1, [mib] * 5), (2, [120 * mib]))
            for i, size in enumerate(sizes)
        ]
        version = ms.commit("sales", "events", add_files=files).version
    code, out, _ = run(capsys, "--metastore", metastore_url, "describe", "sales.events", "--json")
    health = json.loads(out)
    assert code == 0 and health["files"] == 6 and health["small_files"] == 5
    assert health["layouts"] == {"as written": 6} and health["removed_files_retained"] == 0
    assert [c["column"] for c in health["columns"]] == ["amount"]
    code, out, _ = run(capsys, "--metastore", metastore_url, "describe", "sales.events")
    assert code == 0 and "small files:" in out and "6 as written" in out
    base = ["--metastore", metastore_url, "optimize", "sales.events", "--dry-run"]
    code, out, _ = run(capsys, *base, "--json")
    plan = json.loads(out)
    assert code == 0 and plan["dry_run"] and plan["layout"] == "compacted"
    assert [(p["partition"], p["files_in"]) for p in plan["partitions"]] == [("ds=2024-01-01/hr=1", 5)]
    code, out, _ = run(capsys, *base, "--cluster-by", "amount", "--where", "ds = '2024-01-02'", "--json")
    assert code == 0 and json.loads(out)["partitions"] == [], "one file near the target is left alone"
    code, out, _ = run(capsys, *base, "--cluster-by", "amount", "--target-file-size", "64MiB")
    assert code == 0 and "hilbert(amount)" in out and "a dry run: nothing was written" in out
    code, _, err = run(capsys, *base, "--cluster-by", "hr")
    assert code == 1 and "partition key" in err and len(err.splitlines()) == 1
    code, _, err = run(capsys, *base, "--target-file-size", "lots")
    assert code == 2 and "expected a size" in err
    with Metastore.open(metastore_url) as ms:
        assert ms.table("sales.events").version == version and len(ms.table("sales.events").files()) == 6


def test_stats_blocks_builds_the_blocks_a_table_made_before_them_lacks(capsys, metastore_url) -> None:
    from sargable.metastore.layout import table_prefix
    from sargable.metastore.schema import BLOCKS, key_range

    files = [
        sg.FileStats(
            f"/data/f{i}.parquet", 10, 100, {"amount": sg.ColumnStats(min=i * 10.0, max=i * 10.0 + 9, null_count=0)},
            partition={"ds": "2024-01-01", "hr": i},
        )
        for i in range(24)
    ]
    with Metastore.open(metastore_url) as ms:
        ms.commit("sales", "events", add_files=files)
        table_id = ms.get_table("sales", "events").table_id
        ms.store.delete_range(BLOCKS, *key_range(table_prefix(table_id)))  # what a table listed before blocks has
        expected = [f.path for f in ms.table("sales", "events").scan("amount between 55 and 61").files]
    code, out, _ = run(capsys, "--metastore", metastore_url, "stats-blocks", "sales.events", "--json")
    assert code == 0 and json.loads(out) == {"table": "sales.events", "blocks": False}
    code, out, _ = run(capsys, "--metastore", metastore_url, "stats-blocks", "sales.events", "--build", "--json")
    built = json.loads(out)
    assert code == 0 and built["blocks"] is True
    assert (built["files"], built["dead_rows"], built["pending_files"]) == (len(files), 0, 0)
    with Metastore.open(metastore_url) as ms:
        table = ms.table("sales", "events")
        assert table.stats_blocks() == {"files": len(files), "dead_rows": 0, "pending_files": 0}
        where = sg.bind_filter("amount between 55 and 61", table.schema)
        assert [f.path for f in table.files_matching(where)] == expected == ["/data/f5.parquet", "/data/f6.parquet"]
    code, _, err = run(capsys, "--metastore", metastore_url, "stats-blocks", "sales.nothing")
    assert code != 0 and "does not exist" in err
