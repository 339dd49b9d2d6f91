"""Shared fixtures: the PostgreSQL server that `make test` starts, the S3 server (s3_fixtures), hypothesis profiles."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], derandomize=True
)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """URL of the PostgreSQL server started by scripts/postgres.sh; never skipped in CI."""
    url = os.environ.get("SARGABLE_TEST_POSTGRES_URL")
    if not url:
        message = "SARGABLE_TEST_POSTGRES_URL is not set: run the tests with `make test` (scripts/postgres.sh)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return url


pytest_plugins = ["metastore_fixtures", "s3_fixtures"]
