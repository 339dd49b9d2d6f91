"""Checks of the Thrift objects a client sends the server to store, made before any transaction (issue 26): a field
Hive requires that is missing (None), a type that is not a Hive type, a sort order that is neither ascending nor
descending, a bucket, sort or skewed column the object does not have, a map with a None key or value, a text or map
past its bound, a name Hive refuses. Each refusal names the object and the field, so a client (or its user) can act
on it; none leaves anything half-stored, and nothing a client sends can make a stored record the metastore can't
read back.

Over the wire, Thrift gives each field its declared type or None; the checks also hold for any Python value (the
handler is also called in process).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from thrift.Thrift import TType

from sargable.domain import storable_string
from sargable.errors import MetastoreError, TypeCoercionError
from sargable.hms.bindings import ThriftHiveMetastore
from sargable.metastore.catalog import check_name
from sargable.types import DataType, parse_type

TEXT_LIMIT = 1 << 20
"""Characters of one text field (a comment, a format, a parameter value...)."""
VIEW_TEXT_LIMIT = 16 << 20
"""Characters of a view's text (Hive keeps it in a MEDIUMTEXT column)."""
KEY_LIMIT = 256
"""Characters of a parameter's name (Hive's PARAM_KEY columns)."""
COLUMN_NAME_LIMIT = 767
"""Characters of a column name (Hive's COLUMN_NAME)."""
MAP_LIMIT = 10_000
"""Entries of one parameter map."""
LIST_LIMIT = 100_000
"""Entries of one list (columns, bucket and sort columns, skewed values)."""
I32 = (-(2**31), 2**31 - 1)

HIVE_TYPE_NAMES = frozenset(
    {
        "void",
        "boolean",
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "float",
        "double",
        "string",
        "char",
        "varchar",
        "date",
        "datetime",
        "timestamp",
        "timestamp_ntz",
        "decimal",
        "binary",
        "interval_year_month",
        "interval_day_time",
        "array",
        "map",
        "struct",
        "uniontype",
    }
)
"""The type names Hive's metastore accepts as the first word of a column type (its `ColumnType.AllTypes`), and
Spark's `timestamp_ntz`: a column of one sargable can't parse is kept as the client spelled it, untyped."""
FROM_DESERIALIZER = "<derived from deserializer>"
"""The type Hive writes for a column whose SerDe gives its type; accepted as Hive accepts it."""
_FIRST_WORD = re.compile(r"\s*([A-Za-z0-9_]*)")
SORT_ORDERS = {1: "ascending", 0: "descending"}
PRINCIPAL_TYPES = {1: "user", 2: "role", 3: "group"}


class InvalidObjectError(MetastoreError):
    """An object Hive refuses as invalid: InvalidObjectException where the call declares it (creates and adds),
    else InvalidOperationException (alters) or MetaException."""


class Fields:
    """The checks of one object's fields; `what` names the object in each refusal (`table d.t`)."""

    def __init__(self, what: str) -> None:
        self.what = what

    def refuse(self, field: str, problem: str) -> InvalidObjectError:
        return InvalidObjectError(f"{self.what}: {field} {problem}")

    def text(self, value: Any, field: str, *, required: bool = False, limit: int = TEXT_LIMIT) -> str | None:
        """A text field (None allowed unless `required`)."""
        if value is None:
            if required:
                raise self.refuse(field, "is missing (None)")
            return None
        if not isinstance(value, str):
            raise self.refuse(field, f"is {_shown(value)}, not a string")
        if len(value) > limit:
            raise self.refuse(field, f"has {len(value)} characters, more than the {limit} allowed")
        if not storable_string(value):
            raise self.refuse(field, "holds a lone surrogate, which has no UTF-8 form")
        return value

    def integer(self, value: Any, field: str, *, bounds: tuple[int, int] = I32) -> int | None:
        """An integer field within `bounds` (None allowed)."""
        if value is None:
            return None
        if type(value) is not int:
            raise self.refuse(field, f"is {_shown(value)}, not an integer")
        if not bounds[0] <= value <= bounds[1]:
            raise self.refuse(field, f"is {value}, outside {bounds[0]}..{bounds[1]}")
        return value

    def boolean(self, value: Any, field: str) -> bool | None:
        if value is not None and not isinstance(value, bool):
            raise self.refuse(field, f"is {_shown(value)}, not a boolean")
        return value

    def choice(self, value: Any, field: str, choices: dict[int, str], *, required: bool = False) -> int | None:
        """An enum field: one of `choices` (value -> meaning)."""
        if value is None and not required:
            return None
        if type(value) is not int or value not in choices:
            known = ", ".join(f"{k} ({v})" for k, v in choices.items())
            raise self.refuse(field, f"is {_shown(value)}; it must be one of {known}")
        return value

    def items(self, value: Any, field: str) -> list[Any]:
        """A list field's entries (None is an empty list); a None entry is refused."""
        if value is None:
            return []
        if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
            raise self.refuse(field, f"is {_shown(value)}, not a list")
        entries = list(value)
        if len(entries) > LIST_LIMIT:
            raise self.refuse(field, f"has {len(entries)} entries, more than the {LIST_LIMIT} allowed")
        for i, entry in enumerate(entries):
            if entry is None:
                raise self.refuse(f"{field}[{i}]", "is missing (None)")
        return entries

    def texts(self, value: Any, field: str) -> list[str]:
        """A list of strings (None is an empty list)."""
        return [self.text(v, f"{field}[{i}]", required=True) or "" for i, v in enumerate(self.items(value, field))]

    def parameters(self, value: Any, field: str) -> dict[str, str]:
        """A map of strings (None is an empty map): no None key or value, bounded keys, values and entries."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.refuse(field, f"is {_shown(value)}, not a map of strings")
        if len(value) > MAP_LIMIT:
            raise self.refuse(field, f"has {len(value)} entries, more than the {MAP_LIMIT} allowed")
        out = {}
        for key, item in value.items():
            name = self.text(key, f"{field} key", required=True, limit=KEY_LIMIT) or ""
            out[name] = self.text(item, f"{field}[{key!r}]", required=True) or ""
        return out

    def struct(self, value: Any, field: str, kind: type, *, required: bool = False) -> Any:
        """A nested struct of the bindings' class `kind` (None allowed unless `required`)."""
        if value is None:
            if required:
                raise self.refuse(field, "is missing (None)")
            return None
        if not isinstance(value, kind):
            raise self.refuse(field, f"is {_shown(value)}, not a {kind.__name__}")
        return value

    def name(self, value: Any, field: str, kind: str) -> str:
        """A database or table name by the metastore's rule (Hive's letters, digits and `_`, and `-`)."""
        text = self.text(value, field, required=True, limit=COLUMN_NAME_LIMIT) or ""
        try:
            return check_name(kind, text)
        except MetastoreError as exc:
            raise self.refuse(field, f"is not valid: {exc}") from None

    def column_name(self, value: Any, field: str) -> str:
        """A column name: 1-767 characters, no control characters (the metastore's rule for every column)."""
        text = self.text(value, field, required=True, limit=COLUMN_NAME_LIMIT) or ""
        if not text or any(ord(c) < 32 for c in text):
            raise self.refuse(field, f"is {text!r}: a column name is non-empty, without control characters")
        return text

    def column_type(self, value: Any, field: str) -> DataType | None:
        """A column's type: parsed when sargable can type it; None for a Hive type sargable keeps untyped
        (`uniontype<...>`); refused when it is not a Hive type at all."""
        text = self.text(value, field, required=True) or ""
        try:
            return parse_type(text)
        except TypeCoercionError as exc:
            first = _FIRST_WORD.match(text)
            if text == FROM_DESERIALIZER or (first is not None and first[1].lower() in HIVE_TYPE_NAMES):
                return None
            raise self.refuse(field, f"is not a Hive type: {exc}") from None


def check_arguments(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A call's struct arguments (and the entries of its lists of structs) are structs of their declared class, and
    its lists of strings (partition values) lists of strings; only an environment context may be missing (Thrift
    leaves out a field a client did not set). The arguments are given by position or by name (as the server
    passes them)."""
    spec = getattr(ThriftHiveMetastore, f"{method}_args", None)
    entries = [entry for entry in getattr(spec, "thrift_spec", None) or () if entry]
    given = {**{entry[2]: value for entry, value in zip(entries, args)}, **kwargs}
    for _, ttype, name, kind, _ in entries:
        value = given.get(name)
        if ttype == TType.STRUCT and not (value is None and name == "environment_context"):
            _struct_argument(method, name, value, kind[0])
        elif ttype == TType.LIST and kind[0] == TType.STRUCT and value is not None:
            for i, item in enumerate(Fields(method).items(value, name)):
                _struct_argument(method, f"{name}[{i}]", item, kind[1][0])
        elif ttype == TType.LIST and kind[0] == TType.STRING:
            check = Fields(method)
            if value is None:
                raise check.refuse(f"the argument {name}", "is missing (None)")
            check.texts(value, f"the argument {name}")


def _struct_argument(method: str, name: str, value: Any, kind: type) -> None:
    if not isinstance(value, kind):
        shown = "missing (None)" if value is None else f"{_shown(value)}, not a {kind.__name__}"
        raise InvalidObjectError(f"{method}: the argument {name} is {shown}")


def _shown(value: Any) -> str:
    """A value of the wrong kind, shown briefly."""
    text = repr(value)
    return f"{text[:60]}... ({type(value).__name__})" if len(text) > 60 else f"{text} ({type(value).__name__})"
