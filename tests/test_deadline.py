"""The per-call deadline (issue 26 item 3): set per call by an adapter, checked by the long loops of the core, local
to its thread, never extended by a nested one. Timing-independent: a deadline of a nanosecond has always passed by
the first check, and one of an hour never has during a test."""

from __future__ import annotations

import threading

import pytest

import sargable as sg
from sargable.deadline import Deadline, check_deadline
from sargable.errors import DeadlineExceededError, SargableError

PAST = 1e-9
FAR = 3600.0


def test_check_raises_only_under_a_deadline_that_passed() -> None:
    check_deadline()
    with Deadline(FAR):
        check_deadline()
    with Deadline(PAST), pytest.raises(DeadlineExceededError, match="past its deadline of 1e-09 s"):
        check_deadline()
    with Deadline(None):
        check_deadline()
    check_deadline()


def test_a_nested_deadline_never_extends_the_outer_one() -> None:
    with Deadline(PAST), Deadline(FAR), pytest.raises(DeadlineExceededError):
        check_deadline()
    with Deadline(FAR), Deadline(PAST), pytest.raises(DeadlineExceededError):
        check_deadline()


def test_a_deadline_belongs_to_its_thread() -> None:
    seen: list[str] = []

    def other() -> None:
        try:
            check_deadline()
            seen.append("ok")
        except DeadlineExceededError:
            seen.append("stopped")

    with Deadline(PAST):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        with pytest.raises(DeadlineExceededError):
            check_deadline()
    assert seen == ["ok"]


def test_a_deadline_must_be_positive() -> None:
    with pytest.raises(SargableError, match="positive"):
        Deadline(0)


def test_a_filtered_partition_scan_stops_at_the_deadline(tmp_path) -> None:
    ms = sg.Metastore.open(f"sqlite:///{tmp_path}/m.db", warehouse=str(tmp_path / "w"))
    ms.create_database("d")
    ms.create_table("d", "t", columns=[("x", "int")], partition_keys=[("ds", "string")])
    ms.add_partitions("d", "t", [{"ds": f"v{i:03d}"} for i in range(50)])
    hostile = 'ds like "v.*1"'
    with Deadline(FAR):
        assert len(ms.get_partitions_by_filter("d", "t", hostile, dialect="hive")) == 5
    with Deadline(PAST), pytest.raises(DeadlineExceededError):
        ms.get_partitions_by_filter("d", "t", hostile, dialect="hive")
    with Deadline(PAST), pytest.raises(DeadlineExceededError):
        ms.get_partitions_by_filter("d", "t", "ds like 'v%1' or ds like 'v_2%'")
    ms.close()
