"""The `sargable` command: explain, tables, partitions; JSON output; one error line and exit 1 on bad input."""

from __future__ import annotations

import json

import pytest

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
