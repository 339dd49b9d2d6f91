"""Resource bounds: time and peak memory of huge filters through every stage, at the sizes issue 9 names.

Workloads: an IN list of 1,000,000 values, a 100,000-way OR, 10,000 levels of nesting (parentheses, NOT, and
alternating AND/OR), 10 MB of filter text (one literal, an AND chain, garbage), a 90 MB hive dialect filter (over
its limit), a 1 MiB hive string of escapes, backtracking LIKE patterns, a DNF that would have 2^20 terms
(`to_dnf` with its default cap of 1,024), a planner cross product past `max_scans`, and
`Metastore.get_partitions_by_filter` with a 100,000-way OR over two partition keys (SQLite, and PostgreSQL when a
URL is given). Each workload runs in a fresh process; each step reports wall and CPU seconds and its peak
resident memory above the process's size when the step began (Linux: the peak is reset through
/proc/self/clear_refs before each step). A step either completes or fails with a SargableError, whose type is shown.

    .venv/bin/python benchmarks/resource_bounds.py [--quick] [--only NAME ...]
    bash scripts/postgres.sh run -- .venv/bin/python benchmarks/resource_bounds.py   # adds PostgreSQL
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

MIB = 1 << 20


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def step(results: list[dict], name: str, fn: Callable[[], Any]) -> Any:
    """Run one step, recording its outcome, wall and CPU seconds and peak memory growth."""
    from sargable.errors import SargableError

    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status("VmRSS")
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        value = fn()
        outcome = "ok"
    except SargableError as exc:
        value, outcome = None, type(exc).__name__
    results.append(
        {
            "step": name,
            "outcome": outcome,
            "wall_s": time.perf_counter() - wall,
            "cpu_s": time.process_time() - cpu,
            "peak_mib": (_status("VmHWM") - before) / MIB,
        }
    )
    return value


# ------------------------------------------------------------------------------------------------ workloads


def in_list(size: int, results: list[dict]) -> None:
    import sargable as sg
    from sargable.plan import plan_key_ranges

    schema = [("p", "int")]
    text = "p IN (" + ", ".join(str(i * 7919 % 2_000_003) for i in range(size)) + ")"
    expr = step(results, f"parse ({len(text) / 1e6:.1f} MB)", lambda: sg.parse(text))
    bound = step(results, "bind", lambda: sg.bind(expr, schema))
    plan = step(results, "plan (max_scans 1000)", lambda: plan_key_ranges(bound, schema))
    assert plan is None or len(plan.scans) <= 1000
    data = step(results, "dumps", lambda: sg.dumps(expr))
    step(results, "loads", lambda: sg.loads(data))


def or_chain(size: int, results: list[dict]) -> None:
    import sargable as sg
    from sargable.plan import plan_key_ranges

    schema = [("p", "int"), ("s", "string")]
    text = " OR ".join(f"p = {i}" if i % 2 else f"s = 'v{i}'" for i in range(size))
    expr = step(results, f"parse ({len(text) / 1e6:.1f} MB)", lambda: sg.parse(text))
    bound = step(results, "bind", lambda: sg.bind(expr, schema))
    step(results, "normalize", lambda: sg.normalize(bound))
    step(results, "plan (max_scans 1000)", lambda: plan_key_ranges(bound, schema))
    step(results, "to_cnf (cap 1024)", lambda: sg.to_cnf(bound))
    step(results, "render", lambda: sg.render(expr))


def nesting(depth: int, results: list[dict]) -> None:
    import sargable as sg
    from sargable.plan import plan_key_ranges

    schema = [("p", "int")]
    texts = {
        "parentheses": "(" * depth + "p = 1" + ")" * depth,
        "NOT": "NOT " * depth + "p = 1",
        "AND/OR": "".join(f"(p = {i} {'AND' if i % 2 else 'OR'} " for i in range(depth)) + "p = -1" + ")" * depth,
    }
    for label, text in texts.items():
        expr = step(results, f"{label}: parse", lambda t=text: sg.parse(t))
        bound = step(results, f"{label}: bind", lambda e=expr: sg.bind(e, schema))
        step(results, f"{label}: normalize", lambda b=bound: sg.normalize(b))
        step(results, f"{label}: to_dnf (cap 1024)", lambda b=bound: sg.to_dnf(b))
        step(results, f"{label}: plan", lambda b=bound: plan_key_ranges(b, schema))
        step(results, f"{label}: render", lambda e=expr: sg.render(e))
        step(results, f"{label}: dumps+loads", lambda e=expr: sg.loads(sg.dumps(e)))


def big_text(megabytes: int, results: list[dict]) -> None:
    import sargable as sg
    from sargable.plan import plan_key_ranges

    size = megabytes * 1_000_000
    schema = [("p", "int"), ("s", "string")]
    literal = "s = '" + "x" * size + "'"
    expr = step(results, f"{megabytes} MB literal: parse", lambda: sg.parse(literal))
    step(results, f"{megabytes} MB literal: bind + plan", lambda: plan_key_ranges(sg.bind(expr, schema), schema))
    chain = " AND ".join(f"p != {i}" for i in range(size // 12))
    step(results, f"{len(chain) / 1e6:.0f} MB AND chain: parse", lambda: sg.parse(chain))
    step(results, f"{megabytes} MB garbage: parse", lambda: sg.parse("p = 1 AND " + "\x01" * size))
    step(results, f"{megabytes} MB unclosed string: parse", lambda: sg.parse("s = '" + "x" * size))


def hive_text(megabytes: int, results: list[dict]) -> None:
    """What a metastore client may send (issue 26): a filter past the hive dialect's limit, one at the limit made of
    escapes, and backtracking patterns over many values."""
    import sargable as sg
    from sargable.expr.parser import MAX_HIVE_FILTER_CHARS

    huge = "ds = '" + "x" * (megabytes * 1_000_000) + "'"
    step(results, f"{megabytes} MB hive filter: parse", lambda: sg.parse(huge, dialect="hive"))
    escapes = "ds = '" + "a\\b" * ((MAX_HIVE_FILTER_CHARS - 8) // 3) + "'"
    step(results, "1 MiB hive string of escapes: parse", lambda: sg.parse(escapes, dialect="hive"))
    schema = [("ds", "string")]
    values = [{"ds": "a" * 99 + str(i % 10)} for i in range(10_000)]
    for pattern in (".*" * 39 + "x", "(a+)+b"):
        bound = sg.bind(sg.parse(f'ds like "{pattern}"', dialect="hive"), schema)
        label = f"LIKE {pattern[:12]!r}... over 10,000 values"
        step(results, label, lambda b=bound: [sg.evaluate(b, v) for v in values])


def dnf_blowup(terms_log2: int, results: list[dict]) -> None:
    import sargable as sg
    from sargable.plan import plan_key_ranges

    schema = [("p", "int"), ("s", "string")]
    text = " AND ".join(f"(p = {i} OR s = 'v{i}')" for i in range(terms_log2))
    bound = sg.bind(sg.parse(text), schema)
    step(results, f"to_dnf of 2^{terms_log2} terms (cap 1024)", lambda: sg.to_dnf(bound))
    step(results, f"to_dnf of 2^{terms_log2} terms (cap 2^{terms_log2 - 1})",
         lambda: sg.to_dnf(bound, max_terms=2 ** (terms_log2 - 1)))
    step(results, "plan_key_ranges (max_scans 1000)", lambda: plan_key_ranges(bound, schema))
    cross = sg.bind(sg.parse(
        "a IN (" + ", ".join(map(str, range(1000))) + ") AND b IN (" + ", ".join(map(str, range(1000))) + ")"
    ), [("a", "int"), ("b", "int")])
    step(results, "plan 1000 x 1000 IN cross product (max_scans 1000)",
         lambda: plan_key_ranges(cross, [("a", "int"), ("b", "int")]))


def metastore_or(size: int, results: list[dict]) -> None:
    from sargable.metastore import Metastore

    urls = {"sqlite": f"sqlite:///{tempfile.mkdtemp()}/bounds.db"}
    if os.environ.get("SARGABLE_TEST_POSTGRES_URL"):
        urls["postgresql"] = f"{os.environ['SARGABLE_TEST_POSTGRES_URL']}?schema=b_{uuid.uuid4().hex[:10]}"
    terms = [(i * 7 % 50, i * 13 % 40) for i in range(size)]
    text = " OR ".join(f"(a = {a} AND b = {b})" for a, b in terms)
    for backend, url in urls.items():
        ms = Metastore.open(url, warehouse=tempfile.mkdtemp())
        ms.create_database("r")
        ms.create_table("r", "t", [("x", "int")], [("a", "int"), ("b", "int")])
        ms.add_partitions("r", "t", [(a, b) for a in range(50) for b in range(40)])
        found = step(results, f"{backend}: {size:,}-way OR over 2,000 partitions",
                     lambda m=ms: m.get_partitions_by_filter("r", "t", text))
        assert found is None or {p.values for p in found} == set(terms)
        ms.close()


WORKLOADS: dict[str, tuple[Callable[[int, list[dict]], None], int, int]] = {
    "in_list": (in_list, 1_000_000, 100_000),
    "or_chain": (or_chain, 100_000, 20_000),
    "nesting": (nesting, 10_000, 10_000),
    "big_text": (big_text, 10, 1),
    "hive_text": (hive_text, 90, 4),
    "dnf_blowup": (dnf_blowup, 20, 20),
    "metastore_or": (metastore_or, 100_000, 10_000),
}
"""name -> (function, full size, --quick size)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the smaller sizes `make test` uses")
    parser.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), help="run only these workloads")
    parser.add_argument("--child", nargs=2, metavar=("NAME", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        results: list[dict] = []
        WORKLOADS[args.child[0]][0](int(args.child[1]), results)
        print(json.dumps(results))
        return
    print(f"{'workload':12} {'size':>10}  {'step':58} {'outcome':26} {'wall s':>7} {'cpu s':>7} {'peak MiB':>9}")
    for name in args.only or WORKLOADS:
        _, full, quick = WORKLOADS[name]
        size = quick if args.quick else full
        proc = subprocess.run(
            [sys.executable, __file__, "--child", name, str(size)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            print(f"{name:12} {size:>10,}  FAILED: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        for row in json.loads(proc.stdout.splitlines()[-1]):
            print(
                f"{name:12} {size:>10,}  {row['step']:58} {row['outcome']:26} {row['wall_s']:7.2f} "
                f"{row['cpu_s']:7.2f} {row['peak_mib']:9.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
