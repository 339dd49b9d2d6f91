"""PNG plots of the benchmark results for docs/benchmarks.md: planning latency vs partition count, full and
unselective partition listings, files read per TPC-DS query, data-skipping tightness and speed, the Hive metastore
API (Hive's own vs `sargable serve`, warm and cold, and Spark SQL end to end through each), files read per filter
before and after `sgs.optimize`, selective reads on S3, reading without Spark against PyIceberg and deltalake,
planning over many files against PyIceberg (issue 29).

    .venv/bin/python benchmarks/plots.py [--results benchmarks/results] [--out docs/img]

Reads the JSON files the benchmarks write with `--json` (`make bench` runs them): `partition_filter.json` (latency
and listings), `tpcds.json`, `skipping.json`, `hms.json`, `hms-cold.json`, `hms-e2e.json` (with `hms-e2e-1m.json`),
`optimize.json`, `s3.json`, `readers.json` and `file_planning.json` (with `file_planning_before.json`). A plot whose
results file is missing is skipped with a message, never drawn from invented figures. Needs matplotlib (the bench
extra); draws with the Agg backend, so no display is needed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parent.parent
SARGABLE = "sargable sqlite"
PEER_STYLES = {
    "sargable sqlite": ("#1f6feb", "o", "sargable (SQLite)"),
    "sargable pg": ("#6f42c1", "s", "sargable (PostgreSQL)"),
    "deltalake": ("#d97706", "^", "deltalake"),
    "pyiceberg": ("#16a34a", "v", "pyiceberg"),
    "spark hms": ("#dc2626", "D", "Spark Hive metastore"),
    "brute force": ("#6b7280", "x", "brute force (sg.evaluate)"),
}
PEERS = ("deltalake", "pyiceberg", "spark hms")
"""The systems a speed-up is measured against (the fastest of them per cell)."""


def _load(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    return json.loads(path.read_text())




def _saved(fig: Any, path: Path, rect: tuple[float, float, float, float]) -> Path:
    """Lay the figure out inside `rect` (room for a title and footer), write it as a PNG at `path`, close it."""
    fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

def _log_log(ax: Any, sizes: list[int], y_margin: float) -> None:
    """Both axes logarithmic, a tick at each size (with thousands separators), major grid lines."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes, [f"{s:,}" for s in sizes])
    ax.minorticks_off()
    ax.grid(True, which="major", alpha=0.3)
    ax.margins(x=0.15, y=y_margin)

def _ratio_text(ratio: float) -> str:
    return f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.1f}x"


def _footer(fig: Any, text: str) -> None:
    fig.text(0.01, 0.005, text, fontsize=7.5, color="#555555", ha="left", va="bottom")


# ------------------------------------------------------------------------------------------ planning latency


def plot_partition_filter(data: dict[str, Any], out: Path) -> Path:
    """Log-log latency vs partition count, one panel per filter, the speed-up over the fastest peer annotated."""
    sizes = sorted(entry["size"] for entry in data["sizes"])
    by_size = {entry["size"]: entry for entry in data["sizes"]}
    filters = list(by_size[sizes[0]]["expected"])
    systems = [s for s in PEER_STYLES if any(c["system"] == s for e in data["sizes"] for c in e["cells"])]
    cells = {(e["size"], c["system"], c["filter"]): c["ms"] for e in data["sizes"] for c in e["cells"]}
    cols = 4
    rows = -(-len(filters) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(15, 4.2 * rows), sharex=True, squeeze=False)
    for ax, name in zip(axes.flat, filters, strict=False):
        for system in systems:
            points = [(s, cells[(s, system, name)]) for s in sizes if (s, system, name) in cells]
            if not points or (system == "brute force" and by_size[sizes[0]]["expected"][name] == sizes[0]):
                # without a filter the brute force only counts its list: nothing to compare
                continue
            color, marker, label = PEER_STYLES[system]
            strong = system.startswith("sargable")
            ax.plot(
                *zip(*points, strict=True),
                color=color,
                marker=marker,
                label=label,
                linewidth=2.6 if strong else 1.4,
                markersize=7 if strong else 5,
                alpha=1.0 if strong else 0.85,
            )
        for size in sizes:
            own = cells.get((size, SARGABLE, name))
            peers = [cells[(size, p, name)] for p in PEERS if (size, p, name) in cells]
            if own and peers:
                ratio = min(peers) / own
                ax.annotate(
                    _ratio_text(ratio),
                    (size, own),
                    textcoords="offset points",
                    xytext=(0, -16),
                    ha="center",
                    fontsize=10,
                    fontweight="bold",
                    color="#1f6feb" if ratio >= 1 else "#b91c1c",
                )
        returned = by_size[sizes[-1]]["expected"].get(name)
        selective = returned is not None and returned <= 0.15 * sizes[-1]
        ax.set_title(f"{name}" + ("" if selective else "  (not selective)"), fontsize=11)
        _log_log(ax, sizes, 0.25)
    for ax in axes.flat[len(filters) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("latency, ms (log)")
    for ax in axes[-1, :]:
        ax.set_xlabel("partitions (log)")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.955), ncol=len(labels), frameon=False)
    fig.suptitle(
        "Partition filtering: latency vs table size (labels: speed-up of sargable over the fastest peer)",
        y=0.995,
        fontsize=13,
    )
    _footer(fig, f"{data.get('command', '')}  (load average {data.get('load_average', 0):.1f})")
    return _saved(fig, out / "partition_filter_latency.png", (0, 0.02, 1, 0.92))


LISTING_BARS = (
    ("bare SQL scan", "#9ca3af", "bare SQL scan of the keys"),
    ("sargable sqlite", "#1f6feb", "sargable, Partition objects"),
    ("sargable arrow", "#60a5fa", "sargable, Arrow batches"),
    ("deltalake", "#d97706", "deltalake, including its open"),
    ("deltalake (open)", "#fbbf24", "deltalake, table already open"),
)


def plot_listing(data: dict[str, Any], out: Path) -> Path | None:
    """Grouped bars per size and listing (no filter, a quarter of the table, an index lookup): sargable's two forms
    against the bare SQL scan and deltalake; the label over sargable's faster form is its time over the bare scan."""
    sizes = [entry for entry in sorted(data["sizes"], key=lambda e: e["size"]) if entry.get("listing")]
    if not sizes:
        return None
    listings = list(dict.fromkeys(cell["filter"] for cell in sizes[0]["listing"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(max(10.0, 6.5 * len(sizes)), 5.6), squeeze=False)
    width = 0.8 / len(LISTING_BARS)
    for ax, entry in zip(axes[0], sizes, strict=True):
        cells = {(c["system"], c["filter"]): c["ms"] for c in entry["listing"]}
        for i, (system, color, label) in enumerate(LISTING_BARS):
            xs = [n + (i - (len(LISTING_BARS) - 1) / 2) * width for n in range(len(listings))]
            ms = [cells.get((system, name), 0) for name in listings]
            ax.bar(xs, ms, width, color=color, label=label)
        for n, name in enumerate(listings):
            ours = [(cells[(s, name)], i) for i, (s, _, _) in enumerate(LISTING_BARS[1:3], 1) if (s, name) in cells]
            bare = cells.get(("bare SQL scan", name))
            if ours and bare:
                best, i = min(ours)
                x = n + (i - (len(LISTING_BARS) - 1) / 2) * width
                ax.annotate(f"{best / bare:.1f}x bare", (x, best), ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(listings)), listings)
        ax.set_yscale("log")
        ax.set_ylabel("latency, ms (log)")
        ax.set_title(f"{entry['size']:,} partitions (SQLite)", fontsize=11)
        ax.grid(True, axis="y", which="major", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.96), ncol=3, frameon=False, fontsize=9)
    fig.suptitle("Partition listings: sargable against the bare SQL scan and deltalake", y=0.995, fontsize=13)
    _footer(fig, f"{data.get('command', '')}  (load average {data.get('load_average', 0):.1f})")
    return _saved(fig, out / "partition_listing.png", (0, 0.03, 1, 0.86))


# ------------------------------------------------------------------------------------------ TPC-DS


def plot_tpcds(data: dict[str, Any], out: Path) -> Path:
    """Files read per query (DPP off / DPP on / sargable) and end-to-end seconds, with sargable's speed-up."""
    queries = data["queries"]
    names = [q["query"] for q in queries]
    ways = [("Spark DPP off", "#9ca3af"), ("Spark DPP on", "#dc2626"), ("sargable prune_by", "#1f6feb")]
    fig, (files_ax, time_ax) = plt.subplots(2, 1, figsize=(13, 8.5), sharex=True)
    width = 0.27
    xs = range(len(names))
    for n, (way, color) in enumerate(ways):
        values = [q["ways"].get(way, {}).get("files") for q in queries]
        offsets = [x + (n - 1) * width for x in xs]
        bars = files_ax.bar(offsets, [v or 0 for v in values], width, label=way, color=color)
        if way != "Spark DPP off":
            files_ax.bar_label(bars, labels=[f"{v:,}" if v is not None else "" for v in values], fontsize=8)
    total = data.get("files_total")
    if total:
        files_ax.axhline(total, color="#6b7280", linestyle=":", linewidth=1)
        files_ax.text(len(names) - 0.5, total, f"whole table: {total:,} files", ha="right", va="bottom", fontsize=9)
    files_ax.set_ylabel("files read")
    files_ax.set_title("Files read per query: sargable reads exactly what Spark's DPP reads", fontsize=12)
    files_ax.legend(loc="upper left", frameon=False, ncol=3)
    files_ax.margins(y=0.15)

    time_ways = [("Spark DPP on", "#dc2626"), ("Spark DPP on, open", "#f59e0b"), ("sargable prune_by", "#1f6feb")]
    labels = {"Spark DPP on, open": "Spark DPP on, table already open"}
    for n, (way, color) in enumerate(time_ways):
        values = [q["ways"].get(way, {}).get("seconds") for q in queries]
        offsets = [x + (n - 1) * width for x in xs]
        time_ax.bar(offsets, [v or 0 for v in values], width, label=labels.get(way, way), color=color)
    for x, q in zip(xs, queries, strict=True):
        dpp = q["ways"].get("Spark DPP on", {}).get("seconds")
        ours = q["ways"].get("sargable prune_by", {}).get("seconds")
        if dpp and ours:
            time_ax.annotate(
                _ratio_text(dpp / ours),
                (x + width, ours),
                textcoords="offset points",
                xytext=(0, 3),
                ha="center",
                fontsize=10,
                fontweight="bold",
                color="#1f6feb",
            )
    time_ax.set_ylabel("seconds, end to end")
    time_ax.set_title("Query time (labels: sargable's speed-up over Spark DPP with partition listing)", fontsize=12)
    time_ax.legend(loc="upper right", frameon=False, ncol=3)
    time_ax.set_xticks(list(xs), names)
    time_ax.margins(y=0.15)
    scale = data.get("scale")
    fig.suptitle(f"TPC-DS{f' SF{scale:g}' if scale else ''} star queries on store_sales", fontsize=13)
    _footer(fig, f"{data.get('command', '')}  (load average {data.get('load_average', 0):.1f})")
    return _saved(fig, out / "tpcds_files_read.png", (0, 0.02, 1, 1))


# ------------------------------------------------------------------------------------------ skipping


def plot_skipping(data: dict[str, Any], out: Path) -> Path:
    """Tightness (files kept that hold no match) and the time to evaluate 1,000,000 files' statistics."""
    tight = data["tightness"]
    fig, (tight_ax, time_ax) = plt.subplots(1, 2, figsize=(14, 5.2), gridspec_kw={"width_ratios": [1.1, 1]})
    methods = list(tight["methods"])
    matching, without = tight["files_with_match"], tight["files_without_match"]
    extra = [tight["methods"][m]["kept"] - matching for m in methods]
    labels = [m.replace(", ", "\n") for m in methods]
    tight_ax.barh(labels, [matching] * len(methods), color="#1f6feb", label="kept, holds a matching row")
    tight_ax.barh(labels, extra, left=[matching] * len(methods), color="#f59e0b", label="kept, holds no match")
    for y, (method, wasted) in enumerate(zip(methods, extra, strict=True)):
        skipped = tight["methods"][method]["skipped_without_match"] / max(1, without)
        tight_ax.text(
            matching + wasted,
            y,
            f"  {matching + wasted:,} read:\n  skips {skipped:.1%} of the\n  files without a match",
            va="center",
            fontsize=10,
            fontweight="bold",
        )
    tight_ax.set_xlim(0, max(matching + e for e in extra) * 2.6)
    tight_ax.invert_yaxis()
    tight_ax.set_xlabel(f"files kept, of {tight['files']:,} ({matching:,} hold a matching row)")
    tight_ax.set_title("Tightness: files read that hold no matching row", fontsize=12)
    tight_ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False, fontsize=9)

    short = {
        "sargable select_files (vectorized, Arrow)": ("sargable select_files\n(vectorized, Arrow)", "#1f6feb"),
        "sargable may_match loop (row at a time)": ("sargable may_match\n(a file at a time)", "#93c5fd"),
        "pyiceberg _InclusiveMetricsEvaluator loop": ("pyiceberg inclusive\nmetrics evaluator", "#16a34a"),
    }
    timing = [t for t in data["timing"] if t["method"] in short and t["seconds"] == t["seconds"]]  # NaN: none
    names = [short[t["method"]][0] for t in timing]
    seconds = [t["seconds"] for t in timing]
    colors = [short[t["method"]][1] for t in timing]
    bars = time_ax.bar(names, seconds, color=colors)
    base = timing[0]["seconds"]
    time_ax.bar_label(
        bars,
        labels=[
            f"{s * 1000:,.0f} ms" + ("" if i == 0 else f"\n{s / base:,.0f}x slower") for i, s in enumerate(seconds)
        ],
        fontsize=9,
    )
    time_ax.set_yscale("log")
    time_ax.set_ylabel("seconds (log)")
    time_ax.set_xlabel(f"the loops run on {data['sample']:,} of the files; their times are scaled up", fontsize=9)
    time_ax.set_title(f"Evaluating {data['files']:,} files' statistics (5-leaf predicate)", fontsize=12)
    time_ax.tick_params(axis="x", labelsize=9)
    time_ax.margins(y=0.3)
    fig.suptitle("Data skipping: the same statistics, sargable vs pyiceberg", fontsize=13)
    _footer(fig, f"{data.get('command', '')}   tightness predicate: {tight['predicate']}")
    return _saved(fig, out / "skipping.png", (0, 0.04, 1, 1))


# ------------------------------------------------------------------------------------------ Hive metastore API

HMS_STYLES = {
    ("hive derby", "-"): ("#dc2626", "D", "-", "Hive metastore, Derby"),
    ("hive postgresql", "-"): ("#f59e0b", "D", "-", "Hive metastore, PostgreSQL (direct SQL)"),
    ("sargable sqlite", "warm"): ("#1f6feb", "o", "-", "sargable serve, SQLite"),
    ("sargable sqlite", "cold"): ("#1f6feb", "o", ":", "sargable serve, SQLite, no cache"),
    ("sargable postgresql", "warm"): ("#6f42c1", "s", "-", "sargable serve, PostgreSQL"),
    ("sargable postgresql", "cold"): ("#6f42c1", "s", ":", "sargable serve, PostgreSQL, no cache"),
}


def _hms_panel(ax: Any, series: dict[tuple[str, str], dict[int, float]], title: str, unit: str) -> None:
    """One panel: a line per system (and cache mode), log-log; the speed-up of sargable over the faster Hive."""
    sizes = sorted({size for points in series.values() for size in points})
    for key, (color, marker, style, label) in HMS_STYLES.items():
        points = sorted(series.get(key, {}).items())
        if points:
            ax.plot(*zip(*points, strict=True), color=color, marker=marker, linestyle=style, label=label, ms=5)
    modes = sorted({cache for _, cache in series if cache != "-"}, reverse=True)
    for size in sizes:
        hive = [series[k][size] for k in HMS_STYLES if k[1] == "-" and size in series.get(k, {})]
        for cache in modes:
            ours = [series[k][size] for k in HMS_STYLES if k[1] == cache and size in series.get(k, {})]
            if hive and ours:
                ratio = min(hive) / max(ours)
                ax.annotate(
                    f"{cache} {_ratio_text(ratio)}" if len(modes) > 1 else _ratio_text(ratio),
                    (size, max(ours)),
                    textcoords="offset points",
                    xytext=(0, -13),
                    ha="center",
                    fontsize=8,
                    fontweight="bold",
                    color="#1f6feb" if ratio >= 10 else "#b91c1c",
                )
    ax.set_title(title, fontsize=10)
    _log_log(ax, sizes, 0.3)
    ax.set_ylabel(unit)


def plot_hms(data: dict[str, Any], out: Path) -> Path:
    """The Hive metastore API calls: latency vs partitions, Hive's metastore (Derby, PostgreSQL) vs sargable serve
    (SQLite, PostgreSQL; with and without its reply cache); add time per 1,000 partitions and a Spark SQL query."""
    calls: dict[str, dict[tuple[str, str], dict[int, float]]] = {}
    for cell in data["cells"]:
        calls.setdefault(cell["call"], {}).setdefault((cell["system"], cell["cache"]), {})[cell["size"]] = cell["ms"]
    panels = [(name, series, "ms (log)") for name, series in calls.items()]
    adds: dict[tuple[str, str], dict[int, float]] = {}
    for entry in data["adds"]:
        key = (entry["system"], "-" if entry["system"].startswith("hive") else "warm")
        adds.setdefault(key, {})[entry["size"]] = entry["seconds"] / entry["batches"]
    panels.append((f"add_partitions, s per call of {data['batch']:,}", adds, "s (log)"))
    spark: dict[tuple[str, str], dict[int, float]] = {}
    for entry in data.get("spark", []):
        key = (entry["system"], "-" if entry["system"].startswith("hive") else "warm")
        spark.setdefault(key, {})[entry["size"]] = entry["ms"]
    if spark:
        panels.append(("Spark SQL: selective query", spark, "ms (log)"))
    return _hms_grid(
        panels,
        "Hive metastore API: Hive's own metastore vs sargable serve "
        "(labels: faster Hive / slower sargable backend, with and without sargable's reply cache)",
        f"{data.get('command', '')}  (load average {data.get('load_average', 0):.1f}; folders "
        f"{data.get('folders', '?')})",
        out / "hms.png",
    )


def _hms_grid(panels: list[tuple[str, Any, str]], title: str, footer: str, path: Path) -> Path:
    """Panels of Hive metastore calls (title, series, unit) three to a row, one legend on top, the footer below."""
    cols = 3
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(15, 4.0 * rows), squeeze=False)
    for ax, (name, series, unit) in zip(axes.flat, panels, strict=False):
        _hms_panel(ax, series, name, unit)
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    for ax in axes[-1, :]:
        ax.set_xlabel("partitions (log)")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.965), ncol=3, frameon=False)
    fig.suptitle(title, y=0.995, fontsize=12)
    _footer(fig, footer)
    return _saved(fig, path, (0, 0.02, 1, 0.92))


def plot_hms_cold(data: dict[str, Any], out: Path) -> Path:
    """Cold partition calls (`benchmarks/hms_cold.py`, interleaved): Hive's metastore on PostgreSQL, its partitions
    loaded by SQL, against sargable serve without its reply cache, by table size."""
    calls: dict[str, dict[tuple[str, str], dict[int, float]]] = {}
    for cell in data["cells"]:
        if cell["cache"] == "after an add":  # (the listings right after an add: a table in docs/benchmarks.md)
            continue
        key = (cell["system"], "-" if cell["system"].startswith("hive") else "cold")
        calls.setdefault(cell["call"], {}).setdefault(key, {})[cell["size"]] = cell["ms"]
    loads = data.get("loads", [0, 0])
    return _hms_grid(
        [(name, series, "ms (log)") for name, series in calls.items()],
        "Cold Hive metastore calls, interleaved: Hive's metastore on PostgreSQL vs sargable serve --cache-mb 0 "
        "(labels: Hive / slower sargable backend)",
        f"{data.get('command', '')}  (load average {loads[0]:.1f} at the start, {loads[-1]:.1f} at the end)",
        out / "hms-cold.png",
    )


def plot_hms_e2e(data: dict[str, Any], out: Path) -> Path:
    """Spark SQL end to end (`benchmarks/hms_e2e.py`): each statement's median time through Hive's metastore and
    through sargable serve, the first run in a driver and the runs after it, with the share that was sargable's
    metastore."""
    sizes = sorted({r["size"] for r in data["results"]})
    fig, axes = plt.subplots(len(sizes), 1, figsize=(14, 4.8 * len(sizes)), squeeze=False)
    for ax, size in zip(axes[:, 0], sizes, strict=True):
        queries = list(
            dict.fromkeys(r["query"] for r in data["results"] if r["size"] == size and r["query"] != "warm-up")
        )
        bars = [
            ("hive postgresql", False),
            ("sargable sqlite", False),
            ("hive postgresql", True),
            ("sargable sqlite", True),
        ]
        width = 0.2
        for n, (system, again) in enumerate(bars):
            heights = []
            for query in queries:
                runs = [
                    r["ms"] / 1000
                    for r in data["results"]
                    if (r["size"], r["query"], r["system"], r["again"]) == (size, query, system, again)
                ]
                heights.append(statistics.median(runs) if runs else 0)
            color = "#f59e0b" if system.startswith("hive") else "#1f6feb"
            label = "Hive metastore, PostgreSQL" if system.startswith("hive") else "sargable serve, SQLite, no cache"
            ax.bar(
                [i + (n - 1.5) * width for i in range(len(queries))],
                heights,
                width,
                color=color,
                alpha=1.0 if not again else 0.5,
                label=label + (": next runs in the driver" if again else ": first run in a driver"),
            )
        ax.set_xticks(range(len(queries)), queries, fontsize=9)
        ax.set_yscale("log")
        ax.set_ylabel("s (log)")
        ax.set_title(f"{size:,} partitions", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
    fig.suptitle("Spark SQL end to end with Hive support: Hive's metastore vs sargable serve", fontsize=12)
    loads = data.get("loads", [0, 0])
    _footer(fig, f"{data.get('command', '')}  (load average {loads[0]:.1f} at the start, {loads[-1]:.1f} at the end)")
    return _saved(fig, out / "hms-e2e.png", (0, 0.03, 1, 0.97))


# ------------------------------------------------------------------------------------------ optimize

OPTIMIZE_LAYOUTS = [
    ("before", "#9ca3af", "as appended"),
    ("compacted", "#f59e0b", "sgs.optimize (compaction)"),
    ("clustered", "#1f6feb", "sgs.optimize cluster_by"),
    ("delta-rs", "#d97706", "delta-rs z_order"),
]


def plot_optimize(data: dict[str, Any], out: Path) -> Path:
    """Files read per selective filter (log scale) in each layout, and the times of scans and of optimize itself."""
    filters = data["filters"]
    names = [f["filter"] if len(f["filter"]) <= 34 else f["filter"][:33] + "…" for f in filters]
    fig, (files_ax, time_ax) = plt.subplots(2, 1, figsize=(14, 9.5), gridspec_kw={"height_ratios": [3, 1.3]})
    width = 0.2
    xs = range(len(names))
    for n, (layout, color, label) in enumerate(OPTIMIZE_LAYOUTS):
        values = [max(f[layout]["files"], 0.8) for f in filters]
        median = data["median_files"][layout]
        offsets = [x + (n - 1.5) * width for x in xs]
        files_ax.bar(offsets, values, width, color=color, label=f"{label} (median {median:,.0f})")
    files_ax.set_yscale("log")
    files_ax.set_ylabel("files read (log scale)")
    files_ax.set_xticks(list(xs), names, rotation=60, ha="right", fontsize=8)
    files_ax.set_title("Files a selective filter reads through sgs.read, per layout of the same rows", fontsize=12)
    files_ax.legend(loc="upper left", frameon=False, ncol=2, fontsize=9)

    seconds = data["seconds"]
    bars = [
        ("full scan, as appended", seconds["full_scan"]["before"], "#9ca3af"),
        ("full scan, compacted", seconds["full_scan"]["compacted"], "#f59e0b"),
        ("full scan, clustered", seconds["full_scan"]["clustered"], "#1f6feb"),
        ("median filter, as appended", seconds["median_filter"]["before"], "#9ca3af"),
        ("median filter, clustered", seconds["median_filter"]["clustered"], "#1f6feb"),
        ("plain df.write rewrite", seconds["plain_write"], "#6b7280"),
        ("sgs.optimize compaction", seconds["optimize_compaction"], "#f59e0b"),
        ("sgs.optimize cluster_by", seconds["optimize_clustering"], "#1f6feb"),
        ("delta-rs z_order", seconds["delta_z_order"], "#d97706"),
    ]
    drawn = time_ax.barh([b[0] for b in bars], [b[1] for b in bars], color=[b[2] for b in bars])
    time_ax.bar_label(drawn, labels=[f"{b[1]:.1f} s" for b in bars], fontsize=8, padding=3)
    time_ax.invert_yaxis()
    time_ax.set_xlabel("seconds")
    time_ax.tick_params(axis="y", labelsize=8)
    time_ax.margins(x=0.15)
    config = data["config"]
    fig.suptitle(
        f"{config['rows']:,} rows, {config['days']} days, {config['appends']} appends x "
        f"{config['files_per_append']} files; cluster_by {', '.join(config['cluster_by'])}",
        fontsize=13,
    )
    _footer(fig, f"benchmarks/optimize.py, Spark {config['master']}, target file {config['target_file_bytes']:,} bytes")
    return _saved(fig, out / "optimize_files_read.png", (0, 0.02, 1, 1))


S3_WAYS = (
    ("sargable", "#1f6feb"),
    ("Spark discovery", "#dc2626"),
    ("Spark SQL + sargable serve", "#6f42c1"),
)


def plot_s3(data: dict[str, Any], out: Path) -> Path:
    """Seconds to the first row (cold and warm) and S3 requests by kind per selective read on S3."""
    results = data["results"]
    shapes = list(dict.fromkeys(r["shape"] for r in results))
    by = {(r["shape"], r["way"]): r for r in results}
    fig, (time_ax, req_ax) = plt.subplots(1, 2, figsize=(14, 5.5))
    width = 0.13
    for n, (way, color) in enumerate(S3_WAYS):
        for m, (key, alpha, label) in enumerate((("cold_s", 1.0, "cold"), ("warm_s", 0.45, "warm"))):
            xs = [i + (2 * n + m - 2.5) * width for i in range(len(shapes))]
            values = [by[(shape, way)][key] for shape in shapes]
            bars = time_ax.bar(xs, values, width, color=color, alpha=alpha, label=f"{way}, {label}")
            time_ax.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=7, padding=2)
    time_ax.set_xticks(range(len(shapes)), shapes)
    time_ax.set_ylabel("seconds to the first row")
    time_ax.set_title("Time to the first row of a selective read", fontsize=11)
    time_ax.legend(frameon=False, fontsize=8)
    kinds = ("LIST", "HEAD", "GET")
    labels, bottoms = [], []
    for shape in shapes:
        for way, _ in S3_WAYS:
            labels.append(f"{shape}\n{way}")
            bottoms.append(by[(shape, way)]["cold_requests"])
    left = [0] * len(labels)
    for kind, color in zip(kinds, ("#dc2626", "#f59e0b", "#16a34a")):
        values = [b.get(kind, 0) for b in bottoms]
        req_ax.barh(labels, values, left=left, color=color, label=kind)
        left = [a + b for a, b in zip(left, values)]
    req_ax.invert_yaxis()
    req_ax.tick_params(axis="y", labelsize=8)
    req_ax.set_xlabel("S3 requests (cold run)")
    req_ax.set_title("Requests by kind", fontsize=11)
    req_ax.legend(frameon=False, fontsize=8)
    fig.suptitle(
        f"A table of {data['partitions']:,} partitions on S3 (moto emulator, {data['delay_s'] * 1000:.0f} ms per "
        "request)",
        fontsize=13,
    )
    _footer(fig, data["command"])
    return _saved(fig, out / "s3_selective_read.png", (0, 0.03, 1, 1))


# ------------------------------------------------------------------------------------------ readers

READER_STYLES = (
    ("sargable", "#1f6feb"),
    ("pyiceberg", "#16a34a"),
    ("deltalake", "#d97706"),
    ("duckdb", "#6b7280"),
    ("pyarrow", "#9ca3af"),
)


def _readers_panel(ax: Any, rows: list[dict[str, Any]], phase: str, systems: list[tuple[str, str]]) -> None:
    """Grouped log-scale bars of one phase's medians per filter, sargable's speed-up over the fastest peer above
    its bar."""
    filters = [r["filter"] for r in rows]
    width = 0.8 / len(systems)
    for n, (system, color) in enumerate(systems):
        xs = [i + (n - (len(systems) - 1) / 2) * width for i in range(len(filters))]
        values = [r.get(f"{phase}_{system}_ms") for r in rows]
        shown = [(x, v) for x, v in zip(xs, values) if v is not None]
        ax.bar([x for x, _ in shown], [v for _, v in shown], width, color=color, label=system)
        if system != "sargable":
            continue
        for (x, ours), row in zip(shown, rows):
            peers = [row[f"{phase}_{p}_ms"] for p in ("pyiceberg", "deltalake")]
            ax.annotate(_ratio_text(min(peers) / ours), (x, ours), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=7, color="#1f6feb")
    ax.set_yscale("log")
    ax.set_xticks(range(len(filters)), filters, fontsize=8)
    ax.set_ylabel("ms (median)")


def plot_readers(data: dict[str, Any], out: Path) -> Path | None:
    """Planning and reading to Arrow per filter, sargable against PyIceberg and deltalake (DuckDB and pyarrow
    beside them), one row of panels per table size."""
    sizes = data.get("sizes") or []
    if not sizes:
        return None
    fig, axes = plt.subplots(len(sizes), 2, figsize=(15, 4.6 * len(sizes)), squeeze=False)
    for (plan_ax, read_ax), size in zip(axes, sizes):
        rows = size["filters"]
        _readers_panel(plan_ax, rows, "plan", list(READER_STYLES[:3]))
        _readers_panel(read_ax, rows, "read", list(READER_STYLES))
        load = ", ".join(f"{k} {v:,.0f}" for k, v in size.get("load_ms", {}).items())
        plan_ax.set_title(f"{size['partitions']:,} partitions: planning, tables loaded (load ms: {load})", fontsize=10)
        read_ax.set_title(f"{size['partitions']:,} partitions: reading to one Arrow table", fontsize=10)
        plan_ax.legend(frameon=False, fontsize=8)
        read_ax.legend(frameon=False, fontsize=8, ncol=2)
    fig.suptitle("Reading without Spark: sargable vs PyIceberg and deltalake (x: sargable vs the faster of the two)",
                 fontsize=12)
    _footer(fig, data.get("command", "benchmarks/readers.py"))
    return _saved(fig, out / "readers.png", (0, 0.03, 1, 0.97))


# ------------------------------------------------------------------------------------------ planning over many files

FILE_PLANNING_STYLES = {
    "sargable sqlite": ("#1f6feb", "o", "-", "sargable (SQLite), open + plan"),
    "sargable pg": ("#6f42c1", "s", "-", "sargable (PostgreSQL), open + plan"),
    "pyiceberg (loaded)": ("#16a34a", "v", "-", "pyiceberg, table loaded once"),
    "pyiceberg (load per query)": ("#16a34a", "^", ":", "pyiceberg, table loaded per query"),
}


def _file_planning_cells(data: dict[str, Any]) -> dict[tuple[str, str, int], float]:
    """(system, filter, files) -> median ms of the runs with user_id clustered."""
    return {
        (c["system"], c["filter"], r["size"]): c["ms"]
        for r in data["results"]
        if r["order"] == "clustered"
        for c in r["cells"]
    }


def plot_file_planning(data: dict[str, Any], out: Path, before: dict[str, Any] | None = None) -> Path:
    """Log-log planning time vs files, one panel per query, sargable against PyIceberg (issue 29); the run of
    `before` (file_planning_before.json: the code before the change) dashed when there is one."""
    cells = _file_planning_cells(data)
    old = _file_planning_cells(before) if before else {}
    names = list(dict.fromkeys(name for _, name, _ in cells))
    sizes = sorted({size for _, _, size in cells})
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 4.8), sharex=True, squeeze=False)
    for ax, name in zip(axes.flat, names, strict=True):
        if old:
            points = sorted((size, ms) for (system, n, size), ms in old.items() if (system, n) == (SARGABLE, name))
            ax.plot(*zip(*points, strict=True), color="#93c5fd", marker="o", linestyle="--", label="sargable before")
        for system, (color, marker, style, label) in FILE_PLANNING_STYLES.items():
            points = sorted((size, ms) for (s, n, size), ms in cells.items() if (s, n) == (system, name))
            if points:
                strong = system.startswith("sargable")
                ax.plot(
                    *zip(*points, strict=True),
                    color=color,
                    marker=marker,
                    linestyle=style,
                    label=label,
                    linewidth=2.6 if strong else 1.4,
                )
        for size in sizes:
            own = cells.get((SARGABLE, name, size))
            peers = [cells[(p, name, size)] for p in ("pyiceberg (loaded)", "pyiceberg (load per query)")
                     if (p, name, size) in cells]
            if own and peers:
                ratio = min(peers) / own
                ax.annotate(
                    _ratio_text(ratio),
                    (size, own),
                    textcoords="offset points",
                    xytext=(0, -16),
                    ha="center",
                    fontsize=10,
                    fontweight="bold",
                    color="#1f6feb" if ratio >= 1 else "#b91c1c",
                )
        ax.set_title(name, fontsize=11)
        _log_log(ax, sizes, 0.25)
        ax.set_xlabel("files (log)")
    axes[0, 0].set_ylabel("open + plan, ms (log)")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.93), ncol=len(labels), frameon=False)
    fig.suptitle(
        "Planning over many files, one per partition, vs PyIceberg (labels: speed-up over the faster PyIceberg)",
        y=0.99,
        fontsize=13,
    )
    footer = f"{data.get('command', '')}   commit {data.get('commit', '?')}"
    if before:
        footer += f";  before: commit {before.get('commit', '?')}"
    _footer(fig, footer)
    return _saved(fig, out / "file_planning.png", (0, 0.04, 1, 0.88))


# ------------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results"), help="where the JSON results are")
    parser.add_argument("--out", default=str(ROOT / "docs" / "img"), help="where the PNG plots go")
    args = parser.parse_args(argv)
    results, out = Path(args.results), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plots = [
        ("partition_filter.json", plot_partition_filter),
        ("partition_filter.json", plot_listing),
        ("tpcds.json", plot_tpcds),
        ("skipping.json", plot_skipping),
        ("hms.json", plot_hms),
        ("hms-cold.json", plot_hms_cold),
        ("hms-e2e.json", plot_hms_e2e),
        ("optimize.json", plot_optimize),
        ("s3.json", plot_s3),
        ("readers.json", plot_readers),
        ("file_planning.json", plot_file_planning),
    ]
    for name, plot in plots:
        data = _load(results / name)
        if data is None:
            print(f"skipped {plot.__name__}: no {results / name} (run the benchmark with --json)", file=sys.stderr)
            continue
        if plot is plot_file_planning:
            path = plot(data, out, _load(results / "file_planning_before.json"))
        elif plot is plot_hms_e2e:
            million = _load(results / "hms-e2e-1m.json")  # (a run of its own: its folders take minutes)
            path = plot({**data, "results": data["results"] + (million or {}).get("results", [])}, out)
        else:
            path = plot(data, out)
        if path is None:
            print(f"skipped {plot.__name__}: {results / name} holds nothing it draws", file=sys.stderr)
            continue
        print(f"wrote {path} from {results / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
