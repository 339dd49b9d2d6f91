"""`FilterPlan`: a union of disjoint, sorted key ranges — what a partition predicate costs to answer.

The algebra of the seed: `and_` intersects every range of one plan with every range of the other (tighter start and
end, filters conjoined); `or_` unions them (sorted, overlapping and touching ranges merged, see `ranges.union`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sargable.errors import BindError, SargableError
from sargable.plan.ranges import Range, intersect, to_range, union
from sargable.plan.scan import ScanPlan
from sargable.types import DataType, parse_type


def key_columns_of(columns: Sequence[tuple[str, DataType | str]]) -> tuple[tuple[str, DataType], ...]:
    """Validated `(name, type)` pairs of a key, in key order (names unique ignoring case)."""
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Sequence) or not columns:
        raise BindError(f"key_columns must be a non-empty list of (name, type) pairs, got {columns!r}")
    out: list[tuple[str, DataType]] = []
    seen: set[str] = set()
    for entry in columns:
        if not isinstance(entry, (tuple, list)) or len(entry) != 2 or not isinstance(entry[0], str) or not entry[0]:
            raise BindError(f"a key column must be a (name, type) pair with a non-empty name, got {entry!r}")
        name, dtype = entry[0], parse_type(entry[1])
        if name.lower() in seen:
            raise BindError(f"key column {name!r} appears twice in {[c[0] for c in columns]}")
        seen.add(name.lower())
        out.append((name, dtype))
    return tuple(out)


@dataclass(frozen=True)
class FilterPlan:
    """The key ranges (`scans`, sorted and disjoint) that hold every key a predicate can select.

    `scans == []` means no key can match; one full-range scan means the predicate bounds no key range (its
    `key_filter` then is the predicate). `key_columns` names the key's columns and types, in key order.
    """

    scans: list[ScanPlan]
    key_columns: tuple[tuple[str, DataType], ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.scans, list) or not all(isinstance(s, ScanPlan) for s in self.scans):
            raise SargableError("FilterPlan.scans must be a list of ScanPlan")
        if self.key_columns:
            object.__setattr__(self, "key_columns", key_columns_of(self.key_columns))

    @property
    def is_full_scan(self) -> bool:
        """Whether the plan reads the whole table (one scan with no bounds, filtered or not)."""
        return len(self.scans) == 1 and self.scans[0].is_full_scan

    @property
    def has_key_filter(self) -> bool:
        """Whether some scan must check a filter on its keys (the plan reads keys it does not return)."""
        return any(scan.key_filter is not None for scan in self.scans)

    @property
    def is_empty(self) -> bool:
        """Whether the plan reads nothing (the predicate can't be true on any key)."""
        return not self.scans

    def and_(self, other: FilterPlan) -> FilterPlan:
        """The keys in both plans: pairwise intersections of their ranges, with both filters."""
        columns = self._common_columns(other)
        types = [t for _, t in columns]
        mine = [to_range(s, types) for s in self.scans]
        theirs = [to_range(s, types) for s in other.scans]
        both = [r for a in mine for b in theirs if (r := intersect(a, b)) is not None]
        return FilterPlan([r.scan for r in union(both)], columns)

    def or_(self, other: FilterPlan) -> FilterPlan:
        """The keys in either plan: ranges sorted, overlapping and touching ones merged."""
        columns = self._common_columns(other)
        types = [t for _, t in columns]
        ranges: list[Range] = [to_range(s, types) for s in (*self.scans, *other.scans)]
        return FilterPlan([r.scan for r in union(ranges)], columns)

    def _common_columns(self, other: FilterPlan) -> tuple[tuple[str, DataType], ...]:
        if not isinstance(other, FilterPlan):
            raise SargableError(f"a FilterPlan combines with another FilterPlan, got {type(other).__name__}")
        if self.key_columns and other.key_columns and self.key_columns != other.key_columns:
            raise SargableError(
                f"can't combine plans over different keys: {_names(self.key_columns)} and {_names(other.key_columns)}"
            )
        columns = self.key_columns or other.key_columns
        if not columns:
            raise SargableError("combining plans needs their key_columns (the key's column names and types)")
        return columns

    def __str__(self) -> str:
        if not self.scans:
            return "Empty (no key can match)"
        return "\n".join(scan.describe(self.key_columns) for scan in self.scans)


def _names(columns: tuple[tuple[str, DataType], ...]) -> list[str]:
    return [name for name, _ in columns]
