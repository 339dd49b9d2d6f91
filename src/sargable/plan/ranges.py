"""Key ranges in value space: intersection, and the union that sorts, splits and merges ranges into disjoint scans.

A `Range` is a `ScanPlan` plus the canonical cut keys of its ends (`order.cut_key`), so overlap and adjacency are
exact. `union` is the OR of the seed's algebra, generalized: ranges are cut at every boundary into disjoint
segments; a segment covered by a range without a filter needs none, otherwise its filter is the OR of the filters
of the ranges covering it; then touching segments with the same filter are merged (two Gets stay two Gets, the
seed's `merge(get(X9), get(X10))`). The result is sorted, disjoint, and examines no key twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sargable.expr.nodes import Expr, and_, or_
from sargable.plan.order import END, START, cut_key
from sargable.plan.scan import ScanMarker, ScanPlan
from sargable.types import DataType


@dataclass(slots=True)
class Range:
    """A `ScanPlan` with the sort keys of its start and end cuts."""

    start_key: tuple
    end_key: tuple
    scan: ScanPlan


def start_key(marker: ScanMarker | None, types: Sequence[DataType]) -> tuple:
    """Cut key of a start marker (inclusive: before its values; exclusive: after them)."""
    return START if marker is None else cut_key(marker.values, not marker.inclusive, types)


def end_key(marker: ScanMarker | None, types: Sequence[DataType]) -> tuple:
    """Cut key of an end marker (inclusive: after its values; exclusive: before them)."""
    return END if marker is None else cut_key(marker.values, marker.inclusive, types)


def to_range(scan: ScanPlan, types: Sequence[DataType]) -> Range:
    """The `Range` of a scan."""
    return Range(start_key(scan.start, types), end_key(scan.end, types), scan)


def is_empty(item: Range) -> bool:
    """Whether no key lies in the range."""
    return item.start_key >= item.end_key


def conjoin(a: Expr | None, b: Expr | None) -> Expr | None:
    """AND of two optional filters (None is TRUE)."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    return and_(a, b)


def intersect(a: Range, b: Range) -> Range | None:
    """The keys in both ranges, with both filters; None when the ranges don't overlap."""
    first, second = a.scan, b.scan
    if a.start_key >= b.start_key:
        skey, start = a.start_key, first.start
    else:
        skey, start = b.start_key, second.start
    if a.end_key <= b.end_key:
        ekey, end = a.end_key, first.end
    else:
        ekey, end = b.end_key, second.end
    if skey >= ekey:
        return None
    getter = first if first.is_get else second if second.is_get else None
    key_filter = conjoin(first.key_filter, second.key_filter)
    if getter is not None:
        return Range(skey, ekey, ScanPlan(getter.start, getter.end, key_filter, True))
    return Range(skey, ekey, ScanPlan(start, end, key_filter, False))


def _other_side(marker: ScanMarker | None) -> ScanMarker | None:
    """The start marker at the cut where an end marker is, or the end marker where a start marker is."""
    return None if marker is None else ScanMarker(marker.values, not marker.inclusive)


@dataclass(slots=True)
class _Segment:
    start_key: tuple
    end_key: tuple
    start: ScanMarker | None
    end: ScanMarker | None
    key_filter: Expr | None
    is_get: bool


def union(ranges: Sequence[Range]) -> list[Range]:
    """Disjoint, sorted ranges holding exactly the keys of `ranges` that pass their filters (see module docstring)."""
    items = [r for r in ranges if not is_empty(r)]
    if not items:
        return []
    starts: dict[tuple, ScanMarker | None] = {}
    ends: dict[tuple, ScanMarker | None] = {}
    opening: dict[tuple, list[int]] = {}
    closing: dict[tuple, list[int]] = {}
    for index, item in enumerate(items):
        starts.setdefault(item.start_key, item.scan.start)
        ends.setdefault(item.end_key, item.scan.end)
        opening.setdefault(item.start_key, []).append(index)
        closing.setdefault(item.end_key, []).append(index)
    cuts = sorted(opening.keys() | closing.keys())
    active: dict[int, None] = {}
    segments: list[_Segment] = []
    for position, cut in enumerate(cuts[:-1]):
        for index in closing.get(cut, ()):
            active.pop(index, None)
        for index in opening.get(cut, ()):
            active[index] = None
        if not active:
            continue
        following = cuts[position + 1]
        start = starts[cut] if cut in starts else _other_side(ends[cut])
        end = ends[following] if following in ends else _other_side(starts[following])
        segments.append(_segment(cut, following, start, end, [items[i].scan for i in sorted(active)]))
    return _merge_touching(segments)


def _segment(skey: tuple, ekey: tuple, start: Any, end: Any, covering: list[ScanPlan]) -> _Segment:
    filters: dict[Expr, None] = {}
    unfiltered = False
    for scan in covering:
        if scan.key_filter is None:
            unfiltered = True
        else:
            filters[scan.key_filter] = None
    key_filter = None if unfiltered else or_(*filters)
    gets = [scan for scan in covering if scan.is_get]
    if len(gets) == len(covering):
        return _Segment(skey, ekey, gets[0].start, gets[0].end, key_filter, True)
    return _Segment(skey, ekey, start, end, key_filter, False)


def _same_filter(a: Expr | None, b: Expr | None) -> bool:
    if a is None or b is None:
        return a is b
    return a is b or (hash(a) == hash(b) and a == b)


def _merge_touching(segments: list[_Segment]) -> list[Range]:
    merged: list[_Segment] = []
    for segment in segments:
        last = merged[-1] if merged else None
        if (
            last is not None
            and last.end_key == segment.start_key
            and not (last.is_get and segment.is_get)
            and _same_filter(last.key_filter, segment.key_filter)
        ):
            merged[-1] = _Segment(
                last.start_key, segment.end_key, last.start, segment.end, last.key_filter, False
            )
        else:
            merged.append(segment)
    return [Range(s.start_key, s.end_key, ScanPlan(s.start, s.end, s.key_filter, s.is_get)) for s in merged]


def hull(ranges: Sequence[Range], key_filter: Expr | None) -> Range:
    """One range from the first start to the last end of sorted `ranges`, with `key_filter`."""
    first, last = ranges[0], ranges[-1]
    start = first.scan.start
    end = last.scan.end
    return Range(first.start_key, last.end_key, ScanPlan(start, end, key_filter, False))
