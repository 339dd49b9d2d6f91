"""Start-up time: `import sargable` and the CLI's quick commands, each the median of N fresh processes.

Each command runs `--runs` times as a new process (after one unmeasured run that warms the file cache); the table
gives the median and the spread of the wall time, the median peak memory (the child's max RSS) and which of
pyarrow, numpy, pandas and pyspark the command loads. `python -c pass` is the interpreter's own start-up, the floor
under every other line. The CLI commands run against a small temporary SQLite metastore (one table, 48 partitions).

    .venv/bin/python benchmarks/startup.py [--runs 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HEAVY = ("pyarrow", "numpy", "pandas", "pyspark")
_REPORT = (
    "import sys, atexit; atexit.register(lambda: print(*[m for m in {heavy!r} if m in sys.modules], file=sys.stderr))"
)
"""Prepended to the measured code: prints the heavy modules loaded at exit (on stderr)."""


def _commands(url: str) -> dict[str, list[str]]:
    cli = [sys.executable, "-c", "import sys; from sargable.cli import main; sys.exit(main())"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import sargable": [sys.executable, "-c", "import sargable"],
        "sargable --help": [*cli, "--help"],
        "sargable tables": [*cli, "--metastore", url, "tables"],
        "sargable partitions --filter": [*cli, "--metastore", url, "partitions", "sales.events", "--filter", "hr = 3"],
        "sargable explain DB.TABLE FILTER": [*cli, "--metastore", url, "explain", "sales.events", "hr = 3"],
    }


def _with_report(command: list[str]) -> list[str]:
    """The command with the heavy-module report prepended to its `-c` code."""
    code = command.index("-c") + 1
    return [*command[:code], _REPORT.format(heavy=HEAVY) + "\n" + command[code], *command[code + 1 :]]


def _run(command: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KiB, from wait4) and stderr of one fresh process; a failure stops the benchmark."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    child.stderr.close()
    if child.returncode:
        raise SystemExit(f"{' '.join(command)} exited {child.returncode}:\n{err}")
    return elapsed, usage.ru_maxrss, err


def measure(commands: dict[str, list[str]], runs: int) -> list[dict[str, Any]]:
    results = []
    for label, command in commands.items():
        loaded = _run(_with_report(command))[2].split()
        runs_done = [_run(command) for _ in range(runs)]
        times = [elapsed for elapsed, _, _ in runs_done]
        peaks = [peak for _, peak, _ in runs_done]
        results.append(
            {
                "command": label,
                "median_s": statistics.median(times),
                "min_s": min(times),
                "max_s": max(times),
                "peak_mib": statistics.median(peaks) / 1024,
                "loads": [m for m in HEAVY if m in loaded],
            }
        )
    return results


_BUILD = """
import sys
import sargable as sg

with sg.Metastore.open(sys.argv[1], warehouse=sys.argv[2]) as ms:
    ms.create_database("sales")
    ms.create_table("sales", "events", columns=[("user_id", "bigint"), ("amount", "double")],
                    partition_keys=[("ds", "date"), ("hr", "int")])
    ms.add_partitions("sales", "events", [{"ds": f"2024-01-0{d}", "hr": h} for d in (1, 2) for h in range(24)])
"""


def _metastore(folder: str) -> str:
    """A small SQLite metastore for the CLI commands (sales.events, 48 partitions), built in a child process so
    that this one stays small (a child's peak RSS counts the memory it inherits at fork)."""
    url = f"sqlite:///{folder}/metastore.db"
    subprocess.run([sys.executable, "-c", _BUILD, url, folder], check=True)
    return url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per command (default 15)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sargable-startup-") as folder:
        results = measure(_commands(_metastore(folder)), args.runs)
    load = os.getloadavg()
    print(f"{args.runs} runs each; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {sys.executable}")
    print("| command | median | min - max | peak RSS | loads |")
    print("|---|---|---|---|---|")
    for r in results:
        print(
            f"| `{r['command']}` | {r['median_s']:.3f} s | {r['min_s']:.3f} - {r['max_s']:.3f} s "
            f"| {r['peak_mib']:.0f} MiB | {', '.join(r['loads']) or '-'} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "load": load, "results": results}, indent=2))


if __name__ == "__main__":
    main()
