"""`sargable serve` against hostile patterns and filters (issue 26 rows 4, 5, 6 and item 3's deadline), through an
independent Thrift client. Before, each hostile call below froze the whole server (a backtracking `re` call holds
the GIL) or grew it by gigabytes; the client's socket timeout (30 s) then failed the test instead of freezing it.

Timing-independent: the deadline case is a call that needs far more CPU than `--call-timeout` allows, refused with
a clear MetaException, and a second client is served while it runs.
"""

from __future__ import annotations

import threading

import pytest

from hms_server import SargableServe, peak_rss_mb, thrift_client
from metastore_fixtures import fresh_url

pytest.importorskip("pymetastore")
from pymetastore.hive_metastore import ttypes

CALL_TIMEOUT = 4
LONG_NAME = "a" * 100
VALUES = ["a" * 60, "a" * 59 + "b", "x" * 60, *(f"v{i:04d}" for i in range(297))]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    with SargableServe(tmp, fresh_url("sqlite", tmp, None), args=["--call-timeout", str(CALL_TIMEOUT)]) as serve:
        with thrift_client(serve.port) as client:
            client.create_database(ttypes.Database(name="h", locationUri=f"file:{tmp}/h.db"))
            for name, keys in (("t", [ttypes.FieldSchema("ds", "string", None)]), (LONG_NAME, [])):
                table = ttypes.Table(tableName=name, dbName="h", sd=_sd(f"file:{tmp}/h.db/{name}"), partitionKeys=keys)
                client.create_table(table)
            parts = [ttypes.Partition(values=[v], dbName="h", tableName="t", sd=_sd(None)) for v in VALUES]
            client.add_partitions_req(ttypes.AddPartitionsRequest("h", "t", parts, True, True))
        yield serve
        assert serve.stop() == 0


def _sd(location: str | None) -> ttypes.StorageDescriptor:
    return ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema("x", "int", None)],
        location=location,
        serdeInfo=ttypes.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", {}),
    )


def _names(client, text: str) -> list[str]:
    return [p.values[0] for p in client.get_partitions_by_filter("h", "t", text, -1)]


def test_backtracking_like_patterns_answer_at_once(server) -> None:
    """Row 4: `.*` 39 times then `x` (80 bytes), and `(a+)+b`, over 60-character values."""
    with thrift_client(server.port) as client:
        assert _names(client, 'ds like "' + ".*" * 39 + 'x"') == ["x" * 60]
        assert _names(client, 'ds like "(a+)+b"') == ["a" * 59 + "b"]
        assert _names(client, 'ds like "(a|aa)+"') == ["a" * 60]
        with pytest.raises(ttypes.MetaException) as info:
            client.get_partitions_by_filter("h", "t", 'ds like "(a)\\1"', -1)
        assert "it has a back-reference, which can't be matched in time linear in the value" in info.value.message
        assert "h" in client.get_all_databases()


def test_backtracking_name_patterns_answer_at_once(server) -> None:
    """Row 5: `**********y` is no longer ten nested `.*`; a 100,001-character pattern is refused by its length."""
    with thrift_client(server.port) as client:
        assert client.get_tables("h", "**********y") == []
        assert client.get_tables("h", "*" * 20 + "t|*a*a*a*a*a*a*a*a") == sorted([LONG_NAME, "t"])
        with pytest.raises(ttypes.MetaException) as info:
            client.get_databases("*" * 100_000 + "x")
        assert "a name pattern of 100,001 characters is longer than the limit of 1,024" in info.value.message
        assert "h" in client.get_databases("H|*x*|")


def test_a_4_mb_filter_is_refused_without_growing_the_server(server) -> None:
    """Row 6: 4 MB of valid filter text cost 1 GB of peak memory before; now it is refused before parsing."""
    assert server.process is not None
    before = peak_rss_mb(server.process.pid)
    text = " or ".join(f"ds = 'v{i % 297:04d}'" for i in range(4 * 10**6 // 16))
    with thrift_client(server.port) as client:
        with pytest.raises(ttypes.MetaException) as info:
            client.get_partitions_by_filter("h", "t", text, -1)
        assert "over the hive dialect's limit of 1,048,576" in info.value.message
        assert _names(client, "ds = 'v0001'") == ["v0001"]
    assert peak_rss_mb(server.process.pid) - before < 200


def test_a_call_past_its_deadline_is_refused_while_others_are_served(server) -> None:
    """Item 3: 20,000 distinct patterns over 300 partitions need minutes of CPU; `--call-timeout 4` stops the call
    with a MetaException, and a second client is answered while it runs."""
    hostile = " or ".join(f'ds like "a.*b{i}"' for i in range(20_000))
    outcome: list[BaseException | list] = []

    def long_call() -> None:
        with thrift_client(server.port, timeout_ms=300_000) as client:
            try:
                outcome.append(client.get_partitions_by_filter("h", "t", hostile, -1))
            except ttypes.MetaException as exc:
                outcome.append(exc)

    thread = threading.Thread(target=long_call)
    thread.start()
    try:
        with thrift_client(server.port) as other:
            for _ in range(3):
                assert _names(other, "ds = 'v0002'") == ["v0002"]
                assert "h" in other.get_all_databases()
        served_during = thread.is_alive()
    finally:
        thread.join(300)
    assert served_during, "the second client was answered only after the long call"
    assert len(outcome) == 1 and isinstance(outcome[0], ttypes.MetaException), outcome
    assert f"past its deadline of {CALL_TIMEOUT} s" in outcome[0].message
    assert server.alive()
