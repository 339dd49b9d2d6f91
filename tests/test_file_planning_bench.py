"""benchmarks/file_planning.py (issue 29's sargable vs PyIceberg planning benchmark) at a few hundred files: every
query selects exactly the files the layout says on every side, and the statistics registered for files that are not
written are those the written files' footers give."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyiceberg")
pytest.importorskip("sqlalchemy")  # PyIceberg's SqlCatalog
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))  # not a package: on the path

import file_planning


def test_every_side_selects_the_expected_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """96 written files and 200 generated ones, user_id clustered and scattered: the script's own check of each
    side's paths against the layout's files passes for every query (exit status 0), and a second run reuses the
    cache (no build)."""
    argv = ["--sizes", "96,200", "--orders", "clustered,scattered", "--real-max", "96", "--rounds", "1"]
    argv += ["--postgres", "none", "--cache", str(tmp_path), "--json", str(tmp_path / "out.json")]
    assert file_planning.main(argv) == 0
    out = capsys.readouterr().out
    assert "MISMATCH" not in out
    assert "every side selected exactly the expected files" in out
    assert file_planning.main(argv) == 0
    assert "build seconds (None: cached): {'sargable sqlite': None, 'pyiceberg': None}" in capsys.readouterr().out


def test_a_wrong_answer_is_reported(tmp_path: Path) -> None:
    """The check is not vacuous: a side returning one file too few is a mismatch."""
    layout = file_planning.Layout(48, "clustered", 4, tmp_path, file_planning.ranks(48, "clustered"))
    query = next(q for q in file_planning.queries(layout) if q.name == "one day")
    paths = [layout.path(i) for i in query.expected]
    assert file_planning.check(layout, query, "side", paths) == []
    assert file_planning.check(layout, query, "side", paths[1:])


@pytest.mark.parametrize("order", ["clustered", "scattered"])
def test_generated_statistics_are_the_footers(tmp_path: Path, order: str) -> None:
    """The statistics of a file that is not written (the template's, bounds set) equal its written footer's, but
    for the size in bytes."""
    layout = file_planning.Layout(60, order, 20, tmp_path / order, file_planning.ranks(60, order))
    file_planning.prepare_files(layout, real_max=60)
    template = file_planning.template_stats(layout)
    for i in range(layout.size):
        generated = file_planning.synthetic_stats(layout, template, i)
        footer = file_planning.footer_stats(layout, i)
        assert dataclasses.replace(generated, size_bytes=0) == dataclasses.replace(footer, size_bytes=0), i
