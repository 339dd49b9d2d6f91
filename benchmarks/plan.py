"""Scan planner benchmark: planning time for the seed's examples and a 1,000-branch OR, key filters on raw key
bytes against decode-then-evaluate, and executing plans over a SQLite store.

Run: .venv/bin/python benchmarks/plan.py [--keys 100000] [--json FILE]
Targets (issue 4): each seed example plans in under 1 ms, the 1,000-branch OR in under 50 ms.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import sargable as sg
from sargable import keys
from sargable.expr.evaluate import compile_predicate
from sargable.expr.normalize import to_nnf
from sargable.plan import compile_key_filter, explain, plan_key_ranges
from sargable.store import open_store
from sargable.types import parse_type

SEED = [("p1", "int"), ("p2", "int"), ("c1", "int")]
SINGLE = [("p1", "int")]
SEED_EXAMPLES = [
    ("p1 > 10 and p1 < 20", SEED),
    ("p1 = 10", SINGLE),
    ("p1 = 10 and p2 = 3 and c1 = 4", SEED),
    ("p1 = 10", SEED),
    ("p1 = 9 or p1 = 10", SINGLE),
    ("p1 > 10 or p1 < 20", SEED),
    ("c1 = 5", SEED),
    ("p1 > 10 and c1 = 5", SEED),
    ("p1 < 20 and c1 = 5", SEED),
    ("p1 > 10 and p1 > 20 and p1 < 30 and p1 < 40", SEED),
    ("p1 > 10 and (p1 > 20 or c1 = 5)", SEED),
    ("p1 = 5 or c1 = 3", SEED),
    ("(p1 = 5 and c1 = 3) or p1 > 20", SEED),
    ("p1 >= 10 and (p1 = 12 or p1 = 15)", SEED),
    ("(p1 = 1 or p1 = 2) and (p2 = 3 or p2 = 4)", SEED),
    ("p1 >= 5 and (p1 > 20 or p1 < 3)", SEED),
]
HIVE = [("ds", "date"), ("hr", "int"), ("country", "string")]
COUNTRIES = ["BR", "CA", "DE", "FR", "IN", "JP", "UK", "US", "UY", "ZA"]


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(best, median) wall time of `fn` in milliseconds; the best is the least disturbed by other processes."""
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - began) * 1000)
    return min(samples), statistics.median(samples)


TABLES: list[dict[str, object]] = []
"""Every table printed, for `--json`."""


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    TABLES.append({"title": title, "header": header, "rows": [[str(x) for x in row] for row in rows]})
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)))


def bench_seed_examples() -> None:
    rows = []
    for text, columns in SEED_EXAMPLES:
        bound = sg.bind(sg.parse(text), columns)
        best, median = timed(lambda b=bound, c=columns: plan_key_ranges(b, c), 300)
        plan = plan_key_ranges(bound, columns)
        rows.append([text, f"{best * 1000:.0f}", f"{median * 1000:.0f}", " | ".join(str(plan).splitlines())])
    table(
        "Planning the seed's examples (bound predicate -> FilterPlan; 300 runs)",
        ["filter", "best µs", "median µs", "plan"],
        rows,
    )


def bench_wide_or() -> None:
    rows = []
    cases = {
        "1,000 x (p1 = k), one key column": (sg.or_(*(sg.col("p1").eq(2 * k) for k in range(1000))), SINGLE),
        "1,000 x (p1 = k and p2 > k)": (
            sg.or_(*((sg.col("p1").eq(k)) & (sg.col("p2") > k) for k in range(1000))),
            SEED,
        ),
        "1,000 x (p1 between 3k and 3k+5), overlapping": (
            sg.or_(*(sg.col("p1").between(3 * k, 3 * k + 5) for k in range(1000))),
            SEED,
        ),
        "p1 in (1,000 values) and c1 < 7": (sg.col("p1").isin(list(range(0, 3000, 3))) & (sg.col("c1") < 7), SEED),
    }
    for name, (expr, columns) in cases.items():
        bound = sg.bind(expr, columns)
        best, median = timed(lambda b=bound, c=columns: plan_key_ranges(b, c), 15)
        plan = plan_key_ranges(bound, columns)
        rows.append([name, f"{best:.1f}", f"{median:.1f}", len(plan.scans), sum(s.is_get for s in plan.scans)])
    table("Planning a 1,000-branch OR (15 runs)", ["predicate", "best ms", "median ms", "scans", "gets"], rows)


def hive_keys(count: int) -> tuple[list[bytes], list[tuple]]:
    types = [parse_type(t) for _, t in HIVE]
    start = dt.date(2023, 1, 1)
    values = []
    for i in range(count):
        country = None if i % 97 == 0 else COUNTRIES[i % len(COUNTRIES)]
        values.append((start + dt.timedelta(days=i // 240), (i // 10) % 24, country))
    return [keys.encode(v, types) for v in values], values


def bench_key_filters(count: int) -> None:
    encoded, _ = hive_keys(count)
    types = [parse_type(t) for _, t in HIVE]
    names = [n for n, _ in HIVE]
    filters = [
        "hr >= 3 and hr < 20",
        "ds > '2023-03-01'",
        "country = 'US'",
        "country in ('US', 'UK', 'FR')",
        "hr in (1, 2, 3) and country is not null",
        "country like 'U%'",
        "country like 'U%S'",
    ]
    rows = []
    for text in filters:
        bound = to_nnf(sg.bind(sg.parse(text), HIVE))
        on_bytes = compile_key_filter(bound, HIVE)
        predicate = compile_predicate(bound)

        def raw(test=on_bytes) -> int:
            return sum(1 for key in encoded if test(key))

        def decoded(pred=predicate) -> int:
            return sum(1 for key in encoded if pred(dict(zip(names, keys.decode(key, types), strict=True))) is True)

        assert raw() == decoded()
        raw_ms, decoded_ms = timed(raw, 3)[0], timed(decoded, 3)[0]
        rows.append(
            [text, f"{raw_ms:.0f}", f"{decoded_ms:.0f}", f"{decoded_ms / raw_ms:.1f}x", f"{count / raw_ms * 1000:,.0f}"]
        )
    table(
        f"Key filter over {count:,} keys (ds date, hr int, country string): raw bytes vs decode + evaluate (best of 3)",
        ["filter", "bytes ms", "decode ms", "speedup", "keys/s on bytes"],
        rows,
    )


def bench_execution(count: int) -> None:
    encoded, _ = hive_keys(count)
    with tempfile.TemporaryDirectory() as folder, open_store(f"sqlite:///{Path(folder) / 'plan.db'}") as store:
        store.create_keyspace("main")
        prefix = b"\x00\x00\x00\x01"
        store.put_many("main", [(prefix + k, b"") for k in encoded])
        rows = []
        for text in [
            "ds = '2023-02-01' and hr = 5 and country = 'US'",
            "ds = '2023-02-01' and hr >= 20",
            "ds between '2023-02-01' and '2023-02-07' and country like 'U%'",
            "ds in ('2023-01-05', '2023-03-05') and hr in (1, 2)",
            "hr = 5",
            "country = 'US' or ds = '2023-01-01'",
        ]:
            plan = plan_key_ranges(sg.parse(text), HIVE)
            report = explain(plan, store, "main", prefix=prefix)
            ms = timed(lambda p=plan: explain(p, store, "main", prefix=prefix), 3)[0]
            rows.append([text, len(plan.scans), report.keys_examined, report.keys_returned, f"{ms:.1f}"])
        table(
            f"Executing plans over SQLite ({count:,} keys; best of 3)",
            ["filter", "scans", "examined", "returned", "ms"],
            rows,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100_000, help="keys for the key-filter and execution sections")
    parser.add_argument("--json", default=None, help="also write the tables to this JSON file")
    args = parser.parse_args()
    bench_seed_examples()
    bench_wide_or()
    bench_key_filters(args.keys)
    bench_execution(args.keys)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"benchmark": "plan", "keys": args.keys, "tables": TABLES}, indent=1))


if __name__ == "__main__":
    main()
