"""sargable's own progress bar for Spark jobs: tasks done of the stages a block runs, from Spark's status tracker.

It replaces Spark's console progress bars (`[Stage 11:=====> (107 + 2) / 731]`), which `local_session(log=...)`
turns off: one bar per step, drawn by rich on the step's console and gone when the step ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sargable.spark.session import is_connect

if TYPE_CHECKING:  # rich draws on the driver only: a Python worker imports this module without it
    from rich.console import Console
    from rich.progress import Progress

POLL_SECONDS = 0.2


@contextmanager
def spark_progress(spark: Any, console: Console | None, description: str) -> Iterator[None]:
    """Show `description` and a bar of the Spark tasks finished (of those known) while the block runs; a spinner
    alone on a Connect session (it has no status tracker); nothing without a console or on one that is no terminal."""
    if console is None or not console.is_terminal:
        yield
        return
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task(escape(description), total=None)
        if is_connect(spark):
            yield
            return
        stop = threading.Event()
        tracker = spark.sparkContext.statusTracker()
        stages: dict[int, tuple[int, int]] = {}
        before = set(tracker.getActiveStageIds())
        poller = threading.Thread(target=_poll, args=(tracker, before, stages, stop, progress, task), daemon=True)
        poller.start()
        try:
            yield
        finally:
            stop.set()
            poller.join()
        if stages:
            total = sum(count for count, _ in stages.values())
            progress.update(task, total=total, completed=total)


def _poll(
    tracker: Any,
    before: set[int],
    stages: dict[int, tuple[int, int]],
    stop: threading.Event,
    progress: Progress,
    task: Any,
) -> None:
    """Keep `stages` (id -> tasks, tasks done) of the stages active since `before` and the bar up to date, until
    `stop`; a stage that left the active list counts as done."""
    while not stop.wait(POLL_SECONDS):
        active = set(tracker.getActiveStageIds()) - before
        for stage_id in stages.keys() - active:
            stages[stage_id] = (stages[stage_id][0], stages[stage_id][0])
        for stage_id in active:
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                stages[stage_id] = (info.numTasks, info.numCompletedTasks)
        if stages:
            total, done = (sum(counts) for counts in zip(*stages.values()))
            progress.update(task, total=total, completed=done)
