"""`RowBlock`: consecutive rows of a scan in one piece, for callers that decode many keys at once.

A block holds the keys concatenated, the values concatenated and each row's key and value length, so a listing of
many rows costs no Python object per row until a caller asks for one (`key_list`, `rows`). The lengths are numpy
arrays in long blocks and lists in short ones (numpy is not loaded for a short listing).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Any

SHORT_BLOCK = 256
"""Blocks of fewer rows give their lengths as lists (no numpy for a short listing), longer ones as numpy arrays."""


class RowBlock:
    """Rows `(key, value)` in key order as two byte strings and two sequences of lengths."""

    __slots__ = ("key_lengths", "keys", "value_lengths", "values")

    def __init__(self, keys: bytes, key_lengths: Sequence[int], values: bytes, value_lengths: Sequence[int]) -> None:
        self.keys = keys
        """The keys, concatenated."""
        self.key_lengths = key_lengths
        self.values = values
        """The values, concatenated (empty when every value is)."""
        self.value_lengths = value_lengths

    @classmethod
    def of_rows(cls, rows: Sequence[tuple[bytes, bytes]]) -> RowBlock:
        """The block of a list of `(key, value)` pairs."""
        keys = [row[0] for row in rows]
        values = [row[1] for row in rows]
        return cls(b"".join(keys), list(map(len, keys)), b"".join(values), list(map(len, values)))

    def __len__(self) -> int:
        return len(self.key_lengths)

    def head(self, count: int) -> RowBlock:
        """The block's first `count` rows."""
        key_lengths, value_lengths = self.key_lengths[:count], self.value_lengths[:count]
        key_end, value_end = int(sum(key_lengths)), int(sum(value_lengths))
        return RowBlock(self.keys[:key_end], key_lengths, self.values[:value_end], value_lengths)

    def key_list(self) -> list[bytes]:
        """Each row's key."""
        return split(self.keys, self.key_lengths)

    def value_list(self) -> list[bytes]:
        """Each row's value."""
        if not self.values:
            return [b""] * len(self)
        return split(self.values, self.value_lengths)

    def rows(self) -> list[tuple[bytes, bytes]]:
        """Each row as a `(key, value)` pair."""
        return list(zip(self.key_list(), self.value_list(), strict=True))

    def last_key(self) -> bytes:
        """The last row's key (the block is not empty)."""
        return self.keys[len(self.keys) - int(self.key_lengths[-1]) :]

    def all_values(self, value: bytes) -> bool:
        """Whether every row's value is `value` (one byte string compared, and the lengths)."""
        if self.values != value * len(self):
            return False
        lengths = self.value_lengths
        width = len(value)
        if hasattr(lengths, "all"):
            return bool((lengths == width).all())
        return all(length == width for length in lengths)


def split(data: bytes, lengths: Sequence[int]) -> list[bytes]:
    """The pieces of `data`, each `lengths[i]` bytes long in turn."""
    ends = list(accumulate(int(n) for n in lengths)) if not hasattr(lengths, "cumsum") else lengths.cumsum().tolist()
    return [data[start:end] for start, end in zip([0, *ends], ends)]


class _Lengths(list):
    """The lengths of a short block: a list that masks and shifts as a numpy array does (`packed & mask`, `>>`)."""

    def __and__(self, mask: int) -> list[int]:
        return [n & mask for n in self]

    def __rshift__(self, bits: int) -> list[int]:
        return [n >> bits for n in self]


def parse_lengths(text: str) -> Any:
    """The integers of comma-separated text (a SQL aggregate's lengths): a numpy array for a long block, a list for
    a short one (numpy is not loaded for a short listing)."""
    if text.count(",") < SHORT_BLOCK:
        return _Lengths(map(int, text.split(",")))
    import numpy as np  # a long block: its reader decodes it with numpy too

    return np.fromstring(text, dtype=np.int64, sep=",")


def repeated(value: int, like: Any) -> Any:
    """`value` once per element of `like` (a list or a numpy array), of the same kind."""
    if isinstance(like, list):
        return [value] * len(like)
    import numpy as np  # `like` is a numpy array: numpy is loaded

    return np.full(len(like), value, np.int64)
