"""Scan planning (seed 000): a partition predicate as key ranges over the order-preserving key, and their execution.

`plan_key_ranges` turns a bound predicate into a `FilterPlan` (sorted, disjoint `ScanPlan` ranges between
`ScanMarker` bounds, each with the key filter it still needs); `execute` runs a plan over a store and `explain`
reports what it cost. Modules: `scan` (markers, scans, printing), `filterplan` (the plan and its AND/OR
algebra), `order` (value order and domains), `ranges` (range union), `boxes` / `leaves` / `planner` (planning),
`keyfilter` (filters on raw key bytes), `execute` (running plans).
"""

from sargable.plan.execute import (
    GET_BATCH,
    ExecutionStats,
    Explain,
    execute,
    execute_blocks,
    execute_pages,
    explain,
    scan_bounds,
)
from sargable.plan.filterplan import FilterPlan
from sargable.plan.keyfilter import compile_key_filter
from sargable.plan.planner import DEFAULT_MAX_SCANS, plan_key_ranges
from sargable.plan.scan import ScanMarker, ScanPlan

__all__ = [
    "DEFAULT_MAX_SCANS",
    "GET_BATCH",
    "ExecutionStats",
    "Explain",
    "FilterPlan",
    "ScanMarker",
    "ScanPlan",
    "compile_key_filter",
    "execute",
    "execute_blocks",
    "execute_pages",
    "explain",
    "plan_key_ranges",
    "scan_bounds",
]
