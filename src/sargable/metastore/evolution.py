"""Schema evolution: the column changes a table with files may take, by Hive's and Spark's rules.

Files written before a change are never rewritten, so a change must leave them readable as they are:

- new columns are added at the end, and new fields at the end of a struct (`device.model`), all nullable: files
  written before read NULL for them;
- a type may widen within its family: `tinyint -> smallint -> int -> bigint`, `float -> double`, `decimal(p,s)` to
  one with as many integer digits and as many fraction digits (`decimal(10,2) -> decimal(12,2)` or
  `decimal(12,4)`), `varchar(n)` to a longer `varchar` and `char`/`varchar` to `string`; a struct, array or map
  evolves through its fields, elements and values;
- everything else (narrowing, a change across families such as `int -> string` or `int -> double`, renaming,
  dropping or reordering columns) is refused with `SchemaChangeError` naming the column and both types.

A partition key's value is part of every stored key of the table, so a key may only change where its encoding
stays the same for old values: within the string types (`varchar(10) -> string`). Column paths name struct fields
with dots (`device.os`); a name holding a dot or a backquote is backquoted (`` `a.b` ``), as in Spark.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence

from sargable.errors import SchemaChangeError
from sargable.types import INTEGER_RANGES, DataType, field_path, field_type, parse_type, split_path, struct_leaves

Columns = tuple[tuple[str, DataType], ...]
_RANK = {name: rank for rank, name in enumerate(INTEGER_RANGES)}


def widens(old: DataType, new: DataType) -> bool:
    """Whether files holding `old` values read back exactly as `new` values (see the module docstring)."""
    if old == new:
        return True
    if old.is_integral and new.is_integral:
        return _RANK[old.name] <= _RANK[new.name]
    if old.name == "float" and new.name == "double":
        return True
    if old.name == "decimal" and new.name == "decimal":
        assert old.precision is not None and old.scale is not None
        assert new.precision is not None and new.scale is not None
        return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    if old.is_string and new.is_string:
        if new.name == "string":
            return True
        return old.name == new.name == "varchar" and (new.length or 0) >= (old.length or 0)
    if old.name == new.name == "array":
        return widens(old.children[0], new.children[0])
    if old.name == new.name == "map":
        return old.children[0] == new.children[0] and widens(old.children[1], new.children[1])
    if old.name == new.name == "struct":
        kept = len(old.field_names)
        return (
            len(new.field_names) >= kept
            and [n.lower() for n in new.field_names[:kept]] == [n.lower() for n in old.field_names]
            and all(widens(a, b) for a, b in zip(old.children, new.children[:kept], strict=True))
        )
    return False


def additions(old: Columns, new: Columns) -> list[str]:
    """The paths (lower case) of the columns and struct fields `new` has and `old` hasn't, structs' fields included."""
    before = set(_paths(old))
    return [path for path in _paths(new) if path not in before]


def _paths(columns: Columns) -> Iterator[str]:
    stack = [([name], dtype) for name, dtype in reversed(columns)]
    while stack:
        parts, dtype = stack.pop()
        yield field_path(parts).lower()
        if dtype.name == "struct":
            fields = list(zip(dtype.field_names, dtype.children, strict=True))
            stack.extend(([*parts, n], t) for n, t in reversed(fields))


def widenings(old: Columns, new: Columns) -> list[tuple[str, DataType]]:
    """The primitive columns and struct fields (by path) whose type `new` widens, with their type in `old`."""
    before = dict(_primitives(old))
    return [(path, before[path]) for path, dtype in _primitives(new) if path in before and before[path] != dtype]


def _primitives(columns: Columns) -> Iterator[tuple[str, DataType]]:
    for name, dtype in columns:
        if dtype.is_orderable:
            yield field_path([name]).lower(), dtype
        for path, leaf in struct_leaves(field_path([name]), dtype):
            yield path.lower(), leaf


def check_columns(table: str, old: Columns, new: Columns) -> None:
    """Refuse a change of data columns that files written before can't take: every old column stays where it was
    (same name) with its type or a widening of it; new columns only at the end."""
    if len(new) < len(old):
        dropped = [n for n, _ in old[len(new) :]]
        raise SchemaChangeError(f"table {table}: columns can't be dropped from a table with files ({dropped})")
    for (name, old_type), (new_name, new_type) in zip(old, new[: len(old)], strict=True):
        if name.lower() != new_name.lower():
            raise SchemaChangeError(
                f"table {table}: column {name!r} can't be renamed or moved ({new_name!r} in its place): files "
                "written before name it as it was; columns may only be added at the end"
            )
        if not widens(old_type, new_type):
            raise SchemaChangeError(_refusal(table, name, old_type, new_type))


def check_keys(table: str, old: Columns, new: Columns) -> None:
    """Refuse a change of partition keys other than a string key's widening (whose stored encoding is the same)."""
    if [n.lower() for n, _ in old] != [n.lower() for n, _ in new]:
        raise SchemaChangeError(f"table {table}: partition keys can't be added, dropped, renamed or reordered")
    for (name, old_type), (_, new_type) in zip(old, new, strict=True):
        if old_type == new_type:
            continue
        if not (old_type.is_string and new_type.is_string and widens(old_type, new_type)):
            reason = (
                "its values are part of every stored key of the table, which a change of type would re-encode; only "
                "a string key may widen (varchar(n) -> string)"
            )
            raise SchemaChangeError(
                f"table {table}: partition key {name!r} can't change from {old_type} to {new_type}: {reason}"
            )


def _refusal(table: str, column: str, old: DataType, new: DataType) -> str:
    return (
        f"table {table}: column {column!r} can't change from {old} to {new}: files written before hold {old} "
        "values; a type may only widen within its family (tinyint/smallint/int -> bigint, float -> double, decimal "
        "with as many integer and fraction digits, varchar/char -> string; structs by adding fields at the end)"
    )


def add_columns(table: str, columns: Columns, additions: Sequence[tuple[str, str | DataType]]) -> Columns:
    """The columns with `additions` appended: a plain name adds a column at the end, a path (`device.model`) a
    field at the end of that struct. A name already there is an error."""
    out = list(columns)
    for path, type_text in additions:
        if not isinstance(path, str) or not path:
            raise SchemaChangeError(f"table {table}: a new column needs a non-empty name, got {path!r}")
        dtype = parse_type(type_text)
        parts = split_path(path)
        if len(parts) == 1:
            if any(n.lower() == path.lower() for n, _ in out):
                raise SchemaChangeError(f"table {table}: column {path!r} exists already")
            out.append((path, dtype))
            continue
        out = _at_path(table, out, parts, lambda struct, name, new=dtype: _with_field(table, struct, name, new))
    return tuple(out)


def widen_column(table: str, columns: Columns, path: str, new_type: str | DataType) -> Columns:
    """The columns with the column or struct field at `path` given `new_type`, which must widen its type."""
    dtype = parse_type(new_type)
    parts = split_path(path)
    old = field_type(columns, path)
    if old is None:
        raise SchemaChangeError(f"table {table}: no column {path!r} to widen")
    if not widens(old, dtype) or old.is_complex:
        if old.is_complex and old != dtype:
            raise SchemaChangeError(
                f"table {table}: column {path!r} is {old}; widen its fields one by one (`{path}.field`) or add "
                "fields with add_columns"
            )
        raise SchemaChangeError(_refusal(table, path, old, dtype))
    if len(parts) == 1:
        return tuple((n, dtype if n.lower() == path.lower() else t) for n, t in columns)
    return tuple(_at_path(table, list(columns), parts, lambda struct, name: _with_type(struct, name, dtype)))


def _at_path(
    table: str, columns: list[tuple[str, DataType]], parts: list[str], change: Callable[[DataType, str], DataType]
) -> list[tuple[str, DataType]]:
    """The columns with `change(struct, last name)` applied to the struct holding the path's last field."""
    index = next((i for i, (n, _) in enumerate(columns) if n.lower() == parts[0].lower()), None)
    if index is None:
        raise SchemaChangeError(f"table {table}: no column {parts[0]!r} to add a field {field_path(parts)!r} to")
    structs = [columns[index][1]]
    for depth, part in enumerate(parts[1:-1], start=1):
        current = structs[-1]
        if current.name != "struct":
            raise SchemaChangeError(f"table {table}: {field_path(parts[:depth])!r} is {current}, not a struct")
        names = [n.lower() for n in current.field_names]
        if part.lower() not in names:
            raise SchemaChangeError(f"table {table}: struct {field_path(parts[:depth])!r} has no field {part!r}")
        structs.append(current.children[names.index(part.lower())])
    if structs[-1].name != "struct":
        raise SchemaChangeError(f"table {table}: {field_path(parts[:-1])!r} is {structs[-1]}, not a struct")
    dtype = change(structs[-1], parts[-1])
    for depth in range(len(structs) - 2, -1, -1):
        dtype = _with_type(structs[depth], parts[depth + 1], dtype)
    columns[index] = (columns[index][0], dtype)
    return columns


def _with_field(table: str, struct: DataType, name: str, dtype: DataType) -> DataType:
    if name.lower() in (n.lower() for n in struct.field_names):
        raise SchemaChangeError(f"table {table}: the struct already has a field {name!r}")
    return DataType("struct", children=(*struct.children, dtype), field_names=(*struct.field_names, name))


def _with_type(struct: DataType, name: str, dtype: DataType) -> DataType:
    names = [n.lower() for n in struct.field_names]
    children = list(struct.children)
    children[names.index(name.lower())] = dtype
    return DataType("struct", children=tuple(children), field_names=struct.field_names)


SPARK_SCHEMA = "spark.sql.sources.schema"
"""The table property where Spark keeps its own copy of a data source table's schema (JSON), which Spark SQL reads
instead of the Hive columns; large ones are split into `.numParts` and `.part.N`."""
_SPARK_NAMES = {"tinyint": "byte", "smallint": "short", "int": "integer", "bigint": "long", "varchar": "string"}
_VARCHAR_KEY = "__CHAR_VARCHAR_TYPE_STRING"


def spark_schema(properties: dict[str, str], old: Columns, new: Columns) -> dict[str, str]:
    """The properties with Spark's copy of the schema (`SPARK_SCHEMA`, when the table has one) changed as the data
    columns change from `old` to `new` (widened types, added columns and struct fields), so Spark SQL sees it."""
    parts = properties.get(f"{SPARK_SCHEMA}.numParts")
    if parts is not None and parts.isdigit():
        text = "".join(properties.get(f"{SPARK_SCHEMA}.part.{i}", "") for i in range(int(parts)))
    else:
        text = properties.get(SPARK_SCHEMA)
    if text is None or old == new:
        return properties
    try:
        schema = json.loads(text)
        fields = {f["name"].lower(): f for f in schema["fields"]}
    except (ValueError, KeyError, TypeError, AttributeError):
        return properties
    before = {n.lower(): t for n, t in old}
    data = [_merged_field(fields.get(n.lower()), n, before.get(n.lower()), t) for n, t in new]
    names = {n.lower() for n, _ in new}
    schema["fields"] = data + [f for f in schema["fields"] if f["name"].lower() not in names | before.keys()]
    split = (f"{SPARK_SCHEMA}.numParts", f"{SPARK_SCHEMA}.part.")
    out = {k: v for k, v in properties.items() if k != split[0] and not k.startswith(split[1])}
    out[SPARK_SCHEMA] = json.dumps(schema, separators=(",", ":"))
    return out


def _merged_field(field: dict | None, name: str, old: DataType | None, new: DataType) -> dict:
    if field is None or old is None:
        return _spark_field(name, new)
    if old != new:
        field = {**field, "type": _merged_type(field["type"], old, new)}
        if new.is_string or old.is_string:
            metadata = {k: v for k, v in field.get("metadata", {}).items() if k != _VARCHAR_KEY}
            if new.name in ("varchar", "char"):
                metadata[_VARCHAR_KEY] = str(new)
            field["metadata"] = metadata
    return field


def _merged_type(spark: object, old: DataType, new: DataType) -> object:
    if old == new:
        return spark
    if new.name == "struct" and isinstance(spark, dict) and old.name == "struct":
        fields = {f["name"].lower(): f for f in spark.get("fields", [])}
        kids = dict(zip((n.lower() for n in old.field_names), old.children, strict=True))
        merged = [
            _merged_field(fields.get(n.lower()), n, kids.get(n.lower()), t)
            for n, t in zip(new.field_names, new.children, strict=True)
        ]
        return {**spark, "fields": merged}
    if new.name == "array" and isinstance(spark, dict) and old.name == "array":
        return {**spark, "elementType": _merged_type(spark.get("elementType"), old.children[0], new.children[0])}
    if new.name == "map" and isinstance(spark, dict) and old.name == "map":
        return {**spark, "valueType": _merged_type(spark.get("valueType"), old.children[1], new.children[1])}
    return _spark_type(new)


def _spark_field(name: str, dtype: DataType) -> dict:
    metadata = {_VARCHAR_KEY: str(dtype)} if dtype.name in ("varchar", "char") else {}
    return {"name": name, "type": _spark_type(dtype), "nullable": True, "metadata": metadata}


def _spark_type(dtype: DataType) -> object:
    """Spark's JSON form of a Hive type (`StructType.fromJson` reads it)."""
    if dtype.name == "struct":
        fields = zip(dtype.field_names, dtype.children, strict=True)
        return {"type": "struct", "fields": [_spark_field(n, t) for n, t in fields]}
    if dtype.name == "array":
        return {"type": "array", "elementType": _spark_type(dtype.children[0]), "containsNull": True}
    if dtype.name == "map":
        key, value = (_spark_type(t) for t in dtype.children)
        return {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": True}
    if dtype.name == "char":
        return "string"
    return _SPARK_NAMES.get(dtype.name, str(dtype))
