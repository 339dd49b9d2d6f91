"""The exceptions sargable raises: every one is a `SargableError`, so callers can catch one type."""

from __future__ import annotations


class SargableError(Exception):
    """Base class of every error sargable raises on purpose."""


class FilterSyntaxError(SargableError):
    """A filter text that does not parse; the message shows the text with a caret under the position."""

    def __init__(self, message: str, text: str = "", position: int = 0) -> None:
        self.text = text
        self.position = position
        self.reason = message
        super().__init__(self._format(message, text, position))

    @staticmethod
    def _format(message: str, text: str, position: int) -> str:
        if not text:
            return message
        line_start = text.rfind("\n", 0, position) + 1
        line_end = text.find("\n", position)
        line_end = len(text) if line_end < 0 else line_end
        column = position - line_start
        line = text[line_start:line_end]
        if len(line) > 120:
            lo = max(0, column - 60)
            line = line[lo : lo + 120]
            column -= lo
        return f"{message} at position {position}\n  {line}\n  {' ' * column}^"


class InvalidExpressionError(SargableError, ValueError):
    """An expression node built with arguments it can't take (an empty column name, an unknown operator, an empty
    IN); also a ValueError, as Python's own constructors raise."""


class BindError(SargableError):
    """An expression that does not fit a schema: unknown column, or a literal that can't take the column's type."""


class TypeCoercionError(BindError):
    """A value that cannot be converted to a declared type."""


class PatternError(BindError):
    """A LIKE pattern with a misplaced escape character, or a regular expression that does not compile."""


class UnsupportedPatternError(PatternError):
    """A regular expression with a construct that can't be matched in time linear in the value (a back-reference,
    a look-ahead of unbounded width, a possessive quantifier or atomic group), or too large once its counted
    repetitions are expanded; `what` names the construct."""

    def __init__(self, pattern: str, what: str, message: str | None = None) -> None:
        self.pattern = pattern
        self.what = what
        super().__init__(
            message or f"the regular expression {pattern!r} has {what}, which can't be matched in linear time"
        )


class LimitExceededError(SargableError):
    """An input over one of the documented size limits (docs/hms.md#limits), refused before any work on it."""


class DeadlineExceededError(SargableError):
    """A call that ran past its deadline (`sargable serve --call-timeout`): it was stopped, and a write it was in
    rolled back."""


class SerializationError(SargableError):
    """Bytes that are not a valid serialized expression (truncated, corrupt, unknown version)."""


class ExpressionTooComplexError(SargableError):
    """A rewrite (DNF/CNF, plan union) that would exceed its term cap."""


class PushdownError(SargableError):
    """A request to predicate analysis, decomposition or data skipping that it can't use (bad argument, operator)."""


class StatisticsError(PushdownError):
    """File statistics that are malformed, contradict themselves, or don't fit the column's type."""


class KeyEncodingError(SargableError):
    """A value that can't be encoded as a key, or bytes that are not a valid key."""


class StoreError(SargableError):
    """A failure of the key-value store backend (database error, bad URL)."""


class TransactionConflictError(StoreError):
    """A store transaction that lost a race with a concurrent one (deadlock, lock timeout); it was rolled back."""


class PathError(SargableError):
    """A location or file path that can't be used safely: relative where it must be absolute, holding `..` or NUL,
    a `file:` URI of another host."""


class MetastoreError(SargableError):
    """A metastore request that can't be carried out."""


class SchemaChangeError(MetastoreError):
    """A change of a table's columns that files written before could not be read back through (narrowing a type,
    changing its family, renaming, dropping or reordering columns, retyping a partition key)."""


class DamagedMetastoreError(MetastoreError):
    """A value read back from the store that is not what sargable wrote there (a damaged or foreign database)."""


class DeletionRefusedError(SargableError):
    """A table whose files sargable won't delete: its location is unsafe (a root, holding the warehouse or the
    metastore) or not absolute."""


class NoSuchObjectError(MetastoreError):
    """A database, table or partition that does not exist."""


class AlreadyExistsError(MetastoreError):
    """A database, table or partition that exists already."""


class CommitConflictError(MetastoreError):
    """A commit based on a table version that another writer has moved past."""


class OptimizeError(SargableError):
    """A compaction or clustering request that can't be carried out: an unknown, partition-key or unorderable
    column to cluster by, a target file size or bucket count out of range."""
