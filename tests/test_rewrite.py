"""Rewrite planning: Iceberg's output-file count, which partitions and files a compaction or a clustering rewrites
(every file accounted for exactly once, files near the target left alone), and the dry-run report."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sargable.errors import OptimizeError
from sargable.rewrite import (
    CLUSTERING,
    COMPACTED,
    LARGE_FILES,
    SMALL_FILES,
    file_size_limits,
    output_file_count,
    plan_rewrite,
)
from sargable.stats import FileStats

MIB = 1024 * 1024


def _files(sizes: list[int], prefix: str = "p") -> list[FileStats]:
    return [FileStats(f"{prefix}/f{i}.parquet", row_count=max(1, s // 100), size_bytes=s) for i, s in enumerate(sizes)]


@pytest.mark.parametrize(
    ("input_bytes", "expected"),
    [(50, 1), (100, 1), (101, 1), (180, 2), (205, 2), (250, 3), (280, 3), (299, 3), (1000, 10), (1076, 11)],
)
def test_output_file_count_follows_iceberg(input_bytes: int, expected: int):
    """target 100, min 75, max 180 (write max 140): the remainder is kept as a file when over 75 bytes, else spread
    over the others when that keeps them under 110 bytes on average."""
    assert output_file_count(input_bytes, 100, 75, 180) == expected


@given(st.integers(1, 10**12), st.integers(1, 10**9))
def test_output_file_count_is_floor_or_ceiling_and_files_stay_near_target(input_bytes: int, target: int):
    low, high = file_size_limits(target)
    count = output_file_count(input_bytes, target, low, high)
    if input_bytes <= target:
        assert count == 1
        return
    assert count in (input_bytes // target, -(-input_bytes // target))
    if count == input_bytes // target and input_bytes % target:
        assert input_bytes / count < 1.1 * target
    if input_bytes % target > low:
        assert count == -(-input_bytes // target)


def test_compaction_merges_small_files_splits_large_ones_and_leaves_the_rest():
    target = 100 * MIB
    partitions = {
        "ds=1": _files([MIB] * 30 + [100 * MIB, 90 * MIB], "ds=1"),
        "ds=2": _files([100 * MIB, 120 * MIB, MIB], "ds=2"),
        "ds=3": _files([400 * MIB, 100 * MIB], "ds=3"),
        "ds=4": _files([MIB, 2 * MIB], "ds=4"),
        "ds=5": [],
    }
    plan = plan_rewrite(partitions, target_file_bytes=target)
    by_name = {p.partition: p for p in plan.partitions}
    assert sorted(by_name) == ["ds=1", "ds=3", "ds=4"]
    assert (len(by_name["ds=1"].rewrite), len(by_name["ds=1"].keep), by_name["ds=1"].output_files) == (30, 2, 1)
    assert by_name["ds=1"].reason == SMALL_FILES
    assert (len(by_name["ds=3"].rewrite), by_name["ds=3"].output_files, by_name["ds=3"].reason) == (1, 4, LARGE_FILES)
    assert by_name["ds=4"].output_files == 1
    assert (plan.files_in, plan.files_out, plan.files_kept) == (33, 6, 3)
    assert (plan.partitions_total, plan.files_total) == (5, 39)
    assert plan.bytes_in == 30 * MIB + 400 * MIB + 3 * MIB

    assert [p.partition for p in plan_rewrite(partitions, target_file_bytes=target, min_input_files=5).partitions] == [
        "ds=1",
        "ds=3",
    ]


def test_clustering_rewrites_whole_partitions_of_two_files_or_more():
    target = 100 * MIB
    partitions = {
        "a": _files([100 * MIB, 100 * MIB], "a"),
        "b": _files([100 * MIB], "b"),
        "c": _files([MIB], "c"),
        "d": _files([300 * MIB], "d"),
    }
    plan = plan_rewrite(partitions, target_file_bytes=target, cluster_by=["user_id", "event_time"])
    assert [(p.partition, len(p.rewrite), p.output_files, p.reason) for p in plan.partitions] == [
        ("a", 2, 2, CLUSTERING),
        ("d", 1, 3, CLUSTERING),
    ]
    assert plan.cluster_by == ("user_id", "event_time")
    assert plan_rewrite(partitions, target_file_bytes=target).partitions[0].partition == "d"
    tag = "hilbert(user_id)"
    clustered = {name: [dataclasses.replace(f, layout=tag) for f in files] for name, files in partitions.items()}
    again = plan_rewrite(clustered, target_file_bytes=target, cluster_by=["user_id"], layout=tag)
    assert [p.partition for p in again.partitions] == ["d"]
    other = plan_rewrite(clustered, target_file_bytes=target, cluster_by=["user_id"], layout="zorder(user_id)")
    assert [p.partition for p in other.partitions] == ["a", "d"]
    appended = {"a": [*clustered["a"], *_files([MIB], "a/new")]}
    assert len(plan_rewrite(appended, target_file_bytes=target, cluster_by=["user_id"], layout=tag).partitions) == 1


def test_compaction_leaves_alone_small_files_an_optimize_wrote():
    target = 100 * MIB
    written = [dataclasses.replace(f, layout=COMPACTED) for f in _files([60 * MIB] * 3, "a")]
    assert plan_rewrite({"a": written}, target_file_bytes=target).partitions == ()
    plan = plan_rewrite({"a": [*written, *_files([MIB] * 4, "a/new")]}, target_file_bytes=target)
    assert [(len(p.rewrite), len(p.keep)) for p in plan.partitions] == [(4, 3)]


SIZES = st.lists(st.integers(0, 1000), max_size=12)


@given(st.dictionaries(st.text("abc", min_size=1, max_size=3), SIZES, max_size=6), st.integers(1, 400), st.data())
def test_every_file_is_rewritten_kept_or_untouched_exactly_once(sizes: dict, target: int, data: st.DataObject):
    cluster = data.draw(st.booleans())
    min_input_files = data.draw(st.integers(1, 6))
    partitions = {name: _files(s, name) for name, s in sizes.items()}
    layouts = st.sampled_from([None, COMPACTED, "hilbert(x)"])
    partitions = {
        name: [dataclasses.replace(f, layout=data.draw(layouts)) for f in files] for name, files in partitions.items()
    }
    plan = plan_rewrite(
        partitions,
        target_file_bytes=target,
        min_input_files=min_input_files,
        cluster_by=["x"] if cluster else [],
        layout="hilbert(x)",
    )
    low, high = file_size_limits(target)
    planned = {p.partition: p for p in plan.partitions}
    for name, files in partitions.items():
        entry = planned.get(name)
        far = [f for f in files if (f.size_bytes < low and f.layout is None) or f.size_bytes > high]
        too_large = any(f.size_bytes > high for f in files)
        if entry is None:
            if cluster:
                assert not too_large and (len(files) < 2 or all(f.layout == "hilbert(x)" for f in files))
            else:
                assert len(far) < max(2, min_input_files) and not too_large
            continue
        assert sorted(f.path for f in entry.rewrite + entry.keep) == sorted(f.path for f in files)
        assert entry.output_files >= 1
        if cluster:
            assert not entry.keep
            assert too_large or (len(files) >= 2 and any(f.layout != "hilbert(x)" for f in files))
        else:
            assert all(f.size_bytes <= high and (f.size_bytes >= low or f.layout is not None) for f in entry.keep)
            assert [f.path for f in entry.rewrite] == [f.path for f in far]
        expected = output_file_count(sum(f.size_bytes for f in entry.rewrite), target, low, high)
        assert entry.output_files == expected
    assert plan.files_total == sum(len(f) for f in partitions.values())
    assert plan.files_in == sum(len(p.rewrite) for p in plan.partitions)


def test_the_dry_run_report_prints_and_serializes():
    partitions = {f"ds=2024-01-{d:02d}": _files([MIB] * 10, f"ds={d}") for d in range(1, 26)}
    plan = plan_rewrite(partitions, target_file_bytes=4 * MIB, cluster_by="user_id, event_time")
    text = str(plan)
    assert "partitions: 25 of 25 to rewrite" in text
    assert "files:      250 -> 75" in text
    assert "cluster by user_id, event_time" in text
    assert "... and 5 more partitions" in text
    assert "ds=2024-01-01  10 files 10.0 MiB -> 3 (clustering)" in text
    data = json.loads(json.dumps(plan.to_dict()))
    assert (data["files_in"], data["files_out"], data["partitions_rewritten"]) == (250, 75, 25)
    assert data["partitions"][0] == {
        "partition": "ds=2024-01-01",
        "reason": "clustering",
        "files_in": 10,
        "files_out": 3,
        "files_kept": 0,
        "bytes_in": 10 * MIB,
        "rows_in": 10 * (MIB // 100),
    }


def test_bad_arguments_are_clear_errors():
    for bad in ({"target_file_bytes": 0}, {"target_file_bytes": 1.5}, {"min_input_files": 0}):
        with pytest.raises(OptimizeError):
            plan_rewrite({}, **bad)
    with pytest.raises(OptimizeError, match=r"min .* <= target"):
        plan_rewrite({}, target_file_bytes=100, min_file_bytes=200)
    with pytest.raises(OptimizeError, match="named twice"):
        plan_rewrite({}, cluster_by=["a", "a"])
    with pytest.raises(OptimizeError, match="FileStats"):
        plan_rewrite({"p": ["x.parquet"]})
