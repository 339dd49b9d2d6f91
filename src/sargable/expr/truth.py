"""Truth values of a predicate over a group of rows (a file, a row group): which of TRUE, FALSE, NULL it may take.

One flag enum serves both Hive's SearchArgument evaluation (`sargable.expr.sarg`) and data skipping
(`sargable.skipping.truth_value`): ORC/Hive's TruthValue is the same set of outcomes, named by its unions.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

_VALUES = ((1, True), (2, False), (4, None))


class TruthValue(enum.IntFlag):
    """The SQL truth values a predicate may take over a group of rows; empty (`TruthValue(0)`) for no rows."""

    YES = 1
    NO = 2
    NULL = 4
    YES_NO = 3
    YES_NULL = 5
    NO_NULL = 6
    YES_NO_NULL = 7

    @classmethod
    def of(cls, values: Iterable[bool | None]) -> TruthValue:
        """The flags holding exactly `values` (True, False, None)."""
        return cls(sum(bit for bit, value in _VALUES if value in set(values)))

    def values(self) -> set[bool | None]:
        """The truth values this holds, as Python values (None for NULL)."""
        return {value for bit, value in _VALUES if self & bit}

    def not_(self) -> TruthValue:
        """SQL NOT applied to every possible value."""
        return TruthValue.of({None if v is None else not v for v in self.values()})

    def and_(self, other: TruthValue) -> TruthValue:
        """SQL AND over every pair of possible values."""
        return TruthValue.of({_and(a, b) for a in self.values() for b in other.values()})

    def or_(self, other: TruthValue) -> TruthValue:
        """SQL OR over every pair of possible values."""
        return TruthValue.of({_or(a, b) for a in self.values() for b in other.values()})

    def is_needed(self) -> bool:
        """Whether a group with this truth value may hold a matching row (TRUE is possible)."""
        return bool(self & TruthValue.YES)

    def __str__(self) -> str:
        return self.name or "EMPTY"


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False
