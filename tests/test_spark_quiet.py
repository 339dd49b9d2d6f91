"""Spark stays quiet in sargable's commands: its start-up warnings, log lines and console progress bars go to a log
file (`local_session(log=...)`), and sargable draws its own progress bar from Spark's status tracker."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

SCRIPT = textwrap.dedent(
    """
    import io, sys, time
    from rich.console import Console
    from sargable.spark.progress import spark_progress
    from sargable.spark.session import local_session

    spark = local_session("sargable-quiet", log=sys.argv[1])
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with spark_progress(spark, console, "counting [rows]"):
        total = spark.sparkContext.parallelize(range(12), 12).map(lambda x: time.sleep(0.5) or x).count()
    print(total)
    print("counting [rows]" in screen.getvalue(), "12/12" in screen.getvalue())
    spark.stop()
    """
)


def test_spark_output_goes_to_the_log_and_sargable_draws_its_own_bar(tmp_path: Path) -> None:
    log = tmp_path / "spark.log"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["12", "True", "True"]
    assert done.stderr == ""
    text = log.read_text()
    assert "log4j" in text or "WARN" in text
    assert "[Stage" not in text
