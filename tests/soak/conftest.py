"""Soak tests: minutes-long runs that `make soak` starts with SARGABLE_SOAK=1; deselected from every other run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("SARGABLE_SOAK") == "1":
        return
    soak = [item for item in items if HERE in item.path.parents]
    if soak:
        items[:] = [item for item in items if HERE not in item.path.parents]
        config.hook.pytest_deselected(items=soak)
