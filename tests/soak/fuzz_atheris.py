"""Coverage-guided fuzzing (atheris, libFuzzer) of the untrusted inputs, for `make fuzz`.

    .venv/bin/python tests/soak/fuzz_atheris.py TARGET CORPUS_DIR [libFuzzer flags: -max_total_time=60 -timeout=2]

Targets: `parse` (filter text, both dialects), `loads` (expression bytes), `keys` (key bytes for a type list taken
from the input), `partitions` (Hive partition names and filters against an in-memory metastore). Each input must
either work or raise a SargableError; what works must also round-trip (a parsed filter re-parses from its text,
loaded bytes re-load from their dumps, decoded key bytes re-encode to themselves, a stored partition reads back by
its name). Any other exception is a crash; an input running longer than -timeout seconds is a hang; libFuzzer stops
and writes the input to crash-*/timeout-* files. An empty CORPUS_DIR is first seeded with valid inputs.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import atheris

with atheris.instrument_imports():
    import sargable as sg
    from sargable import keys
    from sargable.errors import SargableError
    from sargable.metastore import Metastore

KEY_TYPES = ["string", "int", "bigint", "tinyint", "double", "float", "decimal(10,2)", "date", "timestamp", "boolean"]
SEEDS = {
    "parse": [
        b"ds >= '2024-01-01' and hr in (1, 2) and country like 'U%'",
        b"not (a = 1 or b between 2 and 3) and c is not null and `x y` rlike '^a.*'",
        b"cast('1.5' as decimal(10,2)) = m and d = date '2024-02-29' and t < timestamp '2024-01-01 10:00:00'",
        b"lower(s) = 'x' and coalesce(p, 3) <=> 3 and s like 'a!%%' escape '!'",
    ],
    "partitions": [b"s=a/i=1/d=2024-01-01", b"s=%2F..%2Fetc/i=__HIVE_DEFAULT_PARTITION__/d=2024-01-01"],
}


def _parse(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    dialect = "hive" if fdp.ConsumeBool() else "sql"
    text = fdp.ConsumeUnicode(fdp.remaining_bytes())
    try:
        expr = sg.parse(text, dialect)
    except SargableError:
        return
    assert sg.parse(sg.render(expr)) == expr
    assert sg.loads(sg.dumps(expr)) == expr


def _loads(data: bytes) -> None:
    try:
        expr = sg.loads(b"SG\x01" + data)
    except SargableError:
        return
    assert sg.loads(sg.dumps(expr)) == expr
    with contextlib.suppress(SargableError):
        sg.render(expr)


def _keys(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    types = [KEY_TYPES[fdp.ConsumeIntInRange(0, len(KEY_TYPES) - 1)] for _ in range(fdp.ConsumeIntInRange(1, 4))]
    raw = fdp.ConsumeBytes(fdp.remaining_bytes())
    try:
        values = keys.decode(raw, types)
    except SargableError:
        return
    assert keys.encode(list(values), types) == raw, (types, raw, values)


_METASTORE: list[Metastore] = []


def _partitions(data: bytes) -> None:
    if not _METASTORE:
        ms = Metastore.open("sqlite://", warehouse="/nonexistent-warehouse")
        ms.create_database("f")
        ms.create_table("f", "t", [("x", "int")], [("s", "string"), ("i", "int"), ("d", "date")])
        _METASTORE.append(ms)
    ms = _METASTORE[0]
    fdp = atheris.FuzzedDataProvider(data)
    as_filter = fdp.ConsumeBool()
    text = fdp.ConsumeUnicode(fdp.remaining_bytes())
    try:
        if as_filter:
            ms.get_partitions_by_filter("f", "t", text)
            return
        ms.add_partitions("f", "t", [text], if_not_exists=True)
    except SargableError:
        return
    (stored,) = ms.get_partitions_by_names("f", "t", [text])
    assert [p.values for p in ms.get_partitions_by_names("f", "t", [stored.name])] == [stored.values]


TARGETS = {"parse": _parse, "loads": _loads, "keys": _keys, "partitions": _partitions}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(TARGETS)}}} [CORPUS_DIR] [libFuzzer flags]")
    target = sys.argv.pop(1)
    corpus = next((Path(a) for a in sys.argv[1:] if not a.startswith("-")), None)
    if corpus is not None:
        corpus.mkdir(parents=True, exist_ok=True)
        if not any(corpus.iterdir()):
            for index, seed in enumerate(SEEDS.get(target, [])):
                (corpus / f"seed-{index}").write_bytes(b"\x00" + seed)
    atheris.Setup(sys.argv, TARGETS[target])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
