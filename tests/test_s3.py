"""Tables on S3 without Spark (issue 28), against the test session's S3 server (moto behind a counting front).

One object has two spellings (`s3a://`, `s3://`): the metastore keeps `s3a://` and accepts both. sargable's pyarrow
side finds the endpoint and credentials in the AWS_* variables (or `sargable.s3.configure`), never in the
metastore. Vacuum and the deleter delete only what an unfinished write of the table made (the keys it recorded, and
those named by its id, `part-<write id>-...`): never a key planted under the prefix, whatever its name, nor one
outside it, whatever the keys hold (`..`, `//`, percent-encoding, unicode, a key named like the table itself): a
property test over random key sets against an oracle, on both backends. Listings are flat (one LIST per 1,000
keys; vacuum makes one), planning makes no request at all.
"""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import sargable as sg
from metastore_fixtures import BACKENDS, fresh_url
from s3_fixtures import SECRET_KEY
from sargable import s3
from sargable.cli import main
from sargable.deletion import Deleter
from sargable.folders import folder_files
from sargable.fs import FileSystem, direct_name, direct_write_id
from sargable.metastore import Metastore
from sargable.paths import canonical_location
from sargable.types import parse_type
from sargable.vacuum import vacuum


def put(client: Any, bucket: str, key: str, body: bytes = b"PAR1") -> None:
    client.put_object(Bucket=bucket, Key=key, Body=body)


def keys_of(client: Any, bucket: str) -> set[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {o["Key"] for page in pages for o in page.get("Contents", [])}


@pytest.fixture(scope="module")
def bucket(s3_server) -> str:
    return s3_server.bucket()


@pytest.fixture
def ms(metastore_url, tmp_path, bucket):
    with Metastore.open(metastore_url, warehouse=tmp_path / "warehouse") as opened:
        opened.create_database("db")
        yield opened


def test_the_counting_front_tells_each_kind_of_request(s3_server, bucket) -> None:
    client = s3_server.client()
    with s3_server.counted() as requests:
        put(client, bucket, "front/a")
        client.copy_object(Bucket=bucket, Key="front/b", CopySource={"Bucket": bucket, "Key": "front/a"})
        client.head_object(Bucket=bucket, Key="front/b")
        client.get_object(Bucket=bucket, Key="front/b")["Body"].read()
        client.list_objects_v2(Bucket=bucket, Prefix="front/")
        client.delete_object(Bucket=bucket, Key="front/a")
        client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "front/b"}]})
    assert [e["kind"] for e in requests.entries] == ["PUT", "COPY", "HEAD", "GET", "LIST", "DELETE", "DELETE"]
    assert requests.count("LIST", under=f"{bucket}/front") == 1
    assert requests.count("LIST", under=f"{bucket}/fron") == 0
    assert requests.count("PUT", under=f"{bucket}/front") == 1


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("s3://bkt/t", "s3a://bkt/t"),
        ("S3A://bkt/t/", "s3a://bkt/t"),
        ("s3://bkt//t/./u", "s3a://bkt/t/u"),
        ("s3a://bkt/t/../u", "s3a://bkt/u"),
        ("s3://bkt/t/a%2Fb", "s3a://bkt/t/a%2Fb"),
    ],
)
def test_one_object_two_spellings(given: str, canonical: str) -> None:
    assert canonical_location(given) == canonical
    assert canonical_location(canonical) == canonical


def test_the_metastore_keeps_s3a_and_finds_both_spellings(ms: Metastore, bucket: str) -> None:
    table = ms.create_table("db", "two", [("x", "int")], [("ds", "string")], location=f"s3://{bucket}/two")
    assert table.location == f"s3a://{bucket}/two"
    ms.commit("db", "two", add_files=[sg.FileStats(f"s3://{bucket}/two/ds=a/f.parquet", 1, 4, partition={"ds": "a"})])
    [stored] = ms.list_files("db", "two")
    assert stored.path == f"s3a://{bucket}/two/ds=a/f.parquet"
    assert ms.tables_listing(f"s3a://{bucket}/two/ds=a/f.parquet") == ["db.two"]
    with pytest.raises(sg.SargableError):
        ms.create_table("db", "again", [("x", "int")], [("ds", "string")], location=f"s3a://{bucket}/two/ds=a")


def test_settings_come_from_the_environment_or_code_and_never_reach_the_metastore(
    s3_server, bucket: str, tmp_path
) -> None:
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    with Metastore.open(url, warehouse=f"s3a://{bucket}/wh") as opened:
        opened.create_database("db")
        opened.create_table("db", "t", [("x", "int")], [("ds", "string")])
        location = opened.get_table("db", "t").location
        assert location == f"s3a://{bucket}/wh/db.db/t"
    fs = FileSystem.at(location)
    with fs.fs.open_output_stream(fs.native(f"{location}/ds=a/f.parquet")) as out:
        out.write(b"PAR1")
    assert FileSystem.at(location).file_entry(f"{location}/ds=a/f.parquet").size == 4
    try:
        s3.configure(endpoint_url="http://127.0.0.1:9")
        with pytest.raises(OSError):
            FileSystem.at(location).file_entry(f"{location}/ds=a/f.parquet")
    finally:
        s3.configure()
    assert FileSystem.at(location).file_entry(f"{location}/ds=a/f.parquet") is not None
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("meta.db*"))
    assert s3_server.endpoint.encode() not in stored
    assert SECRET_KEY.encode() not in stored
    with pytest.raises(sg.SargableError, match="not an http"):
        s3.configure(endpoint_url="127.0.0.1:9")


def test_a_walk_is_one_flat_listing_and_a_file_check_one_head(s3_server, bucket: str) -> None:
    client = s3_server.client()
    prefix = f"walk-{uuid.uuid4().hex[:6]}"
    for folder in range(30):
        put(client, bucket, f"{prefix}/t/ds={folder}/f.parquet")
    put(client, bucket, f"{prefix}/t/_hidden/x/f.parquet")
    put(client, bucket, f"{prefix}/t2/f.parquet")
    fs = FileSystem.at(f"s3a://{bucket}/{prefix}/t")
    with s3_server.counted() as requests:
        entries = list(fs.walk(fs.location, lambda e: not e.path.endswith("_hidden")))
        missing = fs.file_entry(f"{fs.location}/ds=0")
    files = sorted(e.path for e in entries if e.kind == "file")
    assert files == sorted(f"s3a://{bucket}/{prefix}/t/ds={i}/f.parquet" for i in range(30))
    assert f"s3a://{bucket}/{prefix}/t/_hidden" in {e.path for e in entries}
    assert missing is None
    assert requests.kinds == {"LIST": 1, "HEAD": 1}


def test_partition_folders_on_s3_are_listed_with_their_footers(s3_server, bucket: str) -> None:
    fs = s3.filesystem()
    root = f"{bucket}/folders-{uuid.uuid4().hex[:6]}/ds=a"
    pq.write_table(pa.table({"x": pa.array([3, 1, 2], pa.int32())}), f"{root}/part-0.parquet", filesystem=fs)
    pq.write_table(pa.table({"x": pa.array([9], pa.int32())}), f"{root}/sub/part-1.parquet", filesystem=fs)
    pq.write_table(pa.table({"x": pa.array([7], pa.int32())}), f"{root}/_tmp/part-2.parquet", filesystem=fs)
    with s3_server.counted() as requests:
        found = folder_files(f"s3://{root}", {"ds": "a"}, [("x", parse_type("int"))])
    assert requests.count("LIST") == 1 and requests.count("HEAD") == 2, "one listing, one status per file read"
    assert [(f.path, f.row_count, f.columns["x"].min, f.columns["x"].max) for f in found] == [
        (f"s3a://{root}/part-0.parquet", 3, 1, 3),
        (f"s3a://{root}/sub/part-1.parquet", 1, 9, 9),
    ]


def test_planning_and_the_cli_make_no_request(s3_server, ms: Metastore, bucket: str, metastore_url: str) -> None:
    ms.create_table("db", "cli", [("x", "int")], [("ds", "string")], location=f"s3://{bucket}/cli")
    files = [sg.FileStats(f"s3a://{bucket}/cli/ds={d}/f.parquet", 1, 4, partition={"ds": d}) for d in "abc"]
    ms.commit("db", "cli", add_files=files)
    out = io.StringIO()
    with s3_server.counted() as requests, contextlib.redirect_stdout(out):
        assert main(["--metastore", metastore_url, "describe", "db.cli"]) == 0
        assert main(["--metastore", metastore_url, "partitions", "db.cli", "--filter", "ds > 'a'"]) == 0
        assert main(["--metastore", metastore_url, "explain", "db.cli", "ds = 'b'"]) == 0
        scan = ms.table("db.cli").scan("ds = 'b'")
    assert requests.entries == []
    assert f"s3a://{bucket}/cli" in out.getvalue()
    assert "ds=b" in out.getvalue() and "ds=c" in out.getvalue()
    assert [f.path for f in scan.files] == [f"s3a://{bucket}/cli/ds=b/f.parquet"]


def test_sargable_vacuum_on_a_bucket_lists_once_and_deletes_only_what_an_unfinished_write_made(
    s3_server, ms: Metastore, bucket: str, metastore_url: str
) -> None:
    """Garbage on a bucket: the keys an unfinished write recorded, and those named by its id (`part-<write id>-`,
    found with the one listing the unlisted report shares); planted keys are foreign, whatever their names."""
    client = s3_server.client()
    prefix = f"cli-vacuum-{uuid.uuid4().hex[:6]}"
    ms.create_table("db", "vac", [("x", "int")], [("ds", "string")], location=f"s3a://{bucket}/{prefix}/t")
    handle = ms.table("db", "vac")
    write = handle.begin_write().write_id
    kept = [f"{prefix}/t/ds={d}/listed.parquet" for d in "ab"]
    garbage = [f"{prefix}/t/ds=a/{direct_name(write, '0-00000')}.parquet", f"{prefix}/t/ds=b/recorded.parquet"]
    handle.record_write(write, [f"s3://{bucket}/{garbage[1]}", f"s3a://{bucket}/{prefix}/t/ds=c/never.parquet"])
    others = [
        f"{prefix}/t/ds=a/left.parquet",
        f"{prefix}/t/ds=a/{direct_name(uuid.uuid4().hex, '0-00000')}.parquet",
        f"{prefix}/t/_sargable_staging/{write}/ds=a/part.parquet",
        f"{prefix}/t/ds=a/_SUCCESS",
        f"{prefix}/t2/ds=a/{direct_name(write, '0-00000')}.parquet",
    ]
    for key in [*kept, *garbage, *others]:
        put(client, bucket, key)
    listed = [sg.FileStats(f"s3://{bucket}/{key}", 1, 4, partition={"ds": key.split("ds=")[1][0]}) for key in kept]
    ms.commit("db", "vac", add_files=listed)
    out = io.StringIO()
    with s3_server.counted() as dry, contextlib.redirect_stdout(out):
        assert main(["--metastore", metastore_url, "vacuum", "db.vac", "--older-than", "0", "--json"]) == 0
    assert dry.count("LIST") == 1 and dry.count("DELETE") == 0
    assert sorted(json.loads(out.getvalue())["files"]) == sorted(f"s3a://{bucket}/{key}" for key in garbage)
    with s3_server.counted() as deleting, contextlib.redirect_stdout(out):
        assert main(["--metastore", metastore_url, "vacuum", "db.vac", "--older-than", "0", "--delete"]) == 0
    assert deleting.count("LIST") == deleting.count("LIST", under=f"{bucket}/{prefix}/t") == 1
    assert sorted(unquote(e["path"]).lstrip("/") for e in deleting.of("DELETE")) == sorted(
        f"{bucket}/{key}" for key in garbage
    )
    left = keys_of(client, bucket)
    assert {*kept, *others} <= left and not set(garbage) & left
    assert ms.table("db", "vac").write_intents() == ([], {}), "the write ended: nothing of it is left"


def test_the_deleter_refuses_the_key_named_like_the_table(s3_server, ms: Metastore, bucket: str) -> None:
    client = s3_server.client()
    prefix = f"self-{uuid.uuid4().hex[:6]}"
    table = ms.create_table("db", "self", [("x", "int")], [("ds", "string")], location=f"s3a://{bucket}/{prefix}/t")
    put(client, bucket, f"{prefix}/t")
    put(client, bucket, f"{prefix}/t2/x.parquet")
    deleter = Deleter(ms, table)
    assert "table location" in deleter.delete(f"s3a://{bucket}/{prefix}/t")
    assert "not under the table location" in deleter.delete(f"s3a://{bucket}/{prefix}/t2/x.parquet")
    assert "not under the table location" in deleter.delete(f"s3://{bucket}/{prefix}/t/../t2/x.parquet")
    assert deleter.remove_folder(f"s3a://{bucket}/{prefix}/t/ds=a") is None
    assert keys_of(client, bucket) >= {f"{prefix}/t", f"{prefix}/t2/x.parquet"}


# ------------------------------------------------------------------------------------------ the deletion property

WRITE_ID, STRANGER, ENDED = "<write id>", "<stranger>", "<ended>"
"""Placeholders: the id of the case's unfinished write, a random id no write has, the id of a write that ended."""
INSIDE = ["ds=1", "ds=2", "a b", "é", "%2F", "%2E%2E", "..%2F..", "_tmp", ".hidden", "_sargable_staging", WRITE_ID]
ODD = ["..", ".", ""]
"""Components of keys under the table prefix; ODD ones make keys sargable never writes (their canonical path names
another key)."""
LEAVES = ["f.parquet", "g", "_SUCCESS", f"part-{WRITE_ID}-0-00000.parquet", f"part-{STRANGER}-0-00000.parquet",
          f"part-{ENDED}-0-00000.parquet"]
OUTSIDE = ["t2/x.parquet", "t", "t%2Fx.parquet", "t.parquet", "u/t/x.parquet", "t2/../t/x",
           f"t2/part-{WRITE_ID}-0-00000.parquet", f"t%2Fpart-{WRITE_ID}-0-00000.parquet", f"t/../part-{WRITE_ID}-0"]
"""Keys beside the table prefix `t`: none of them may ever be deleted (some carry the live write's id)."""
PROBES = ["t2/x.parquet", "t/../t2/x.parquet", "t%2F..%2Ft2/x.parquet", "t", "t/", "t/..", "./t2/x.parquet",
          f"t2/part-{WRITE_ID}-0-00000.parquet", f"t/../t2/part-{WRITE_ID}-0-00000.parquet",
          f"t%2Fpart-{WRITE_ID}-0-00000.parquet"]
"""Paths (below the case's prefix) handed to the deleter directly, in both spellings."""


@pytest.fixture(scope="module", params=BACKENDS)
def scratch(request, tmp_path_factory, s3_server):
    root = tmp_path_factory.mktemp("s3-vacuum-property")
    postgres = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    with Metastore.open(fresh_url(request.param, root, postgres), warehouse=root / "warehouse") as opened:
        opened.create_database("db")
        yield opened, s3_server, s3_server.bucket("vacuum")


def _plain(parts: list[str]) -> bool:
    return all(p not in ODD for p in parts)


@settings(max_examples=25)
@given(
    tree=st.lists(
        st.tuples(
            st.lists(st.sampled_from(INSIDE + ODD), max_size=3),
            st.sampled_from(LEAVES),
            st.sampled_from([None, "s3a", "s3"]),
        ),
        min_size=1,
        max_size=10,
    ),
    registered=st.lists(st.tuples(st.integers(0, 9), st.sampled_from(["s3a", "s3"])), max_size=5),
    outside=st.lists(st.tuples(st.sampled_from(OUTSIDE), st.booleans()), min_size=1, max_size=4),
    probes=st.lists(st.tuples(st.sampled_from(PROBES), st.sampled_from(["s3a", "s3"])), max_size=3),
)
def test_vacuum_on_s3_deletes_exactly_what_an_unfinished_write_made_and_nothing_else(
    scratch, tree, registered, outside, probes
):
    """Keys planted under the table prefix (also named `part-<hex>-...` like a write's, also under
    `_sargable_staging/<write id>/`) and keys beside it are never deleted, by vacuum or by the deleter handed them
    directly; the garbage is exactly what the registered unfinished write made (the keys it recorded, in either
    spelling, and those named by its id) that no commit lists, deleted with one DELETE each after one listing."""
    ms, server, bucket = scratch
    client = server.client()
    case = uuid.uuid4().hex[:10]
    name = f"t{case}"
    location = f"s3a://{bucket}/{case}/t"
    table = ms.create_table("db", name, [("x", "int")], [("ds", "string")], location=location)
    handle = ms.table("db", name)
    ended = handle.begin_write().write_id
    handle.end_write(ended)
    write = handle.begin_write().write_id
    ids = {WRITE_ID: write, STRANGER: uuid.uuid4().hex, ENDED: ended}

    def named(text: str) -> str:
        for placeholder, value in ids.items():
            text = text.replace(placeholder, value)
        return text

    inside: dict[str, str | None] = {}
    for parts, leaf, scheme in tree:
        inside.setdefault(named("/".join([*parts, leaf])), scheme)
    for key in inside:
        put(client, bucket, f"{case}/t/{key}")
    outside_keys = {f"{case}/{named(key)}" for key, _ in outside}
    for key in outside_keys:
        put(client, bucket, key)
    plain = sorted(k for k in inside if _plain(k.split("/")))
    recorded = {k for k in plain if inside[k] is not None}
    spelled = [f"{inside[k]}://{bucket}/{case}/t/{k}" for k in recorded]
    spelled += [f"s3a://{bucket}/{key}" for (_, record), key in zip(outside, outside_keys) if record]
    handle.record_write(write, spelled)
    made = recorded | {k for k in plain if direct_write_id(k.split("/")[-1]) == write}
    listed = set()
    for index, scheme in registered:
        if plain and (key := plain[index % len(plain)]) not in listed:
            path = f"{scheme}://{bucket}/{case}/t/{key}"
            ms.commit("db", name, add_files=[sg.FileStats(path, 1, 4, partition={"ds": "p"})])
            listed.add(key)
    garbage = made - listed
    planted = set(inside) - made
    deleter = Deleter(ms, table)
    for key in [named(p) for p, _ in probes] + [f"t/{k}" for k in sorted(planted) if k in plain]:
        for scheme in ("s3a", "s3"):
            deleter.delete(f"{scheme}://{bucket}/{case}/{key}")
    before = keys_of(client, bucket)
    assert before >= outside_keys | {f"{case}/t/{k}" for k in inside}, "a probe deleted a planted key"
    event(f"garbage: {bool(garbage)}; odd keys: {len(inside) > len(plain)}; planted: {bool(planted)}")
    with server.counted() as requests:
        result = vacuum(ms, "db", name, dry_run=False)
    after = {k for k in keys_of(client, bucket) if not k.endswith("/") or k in before}
    assert before - after == {f"{case}/t/{k}" for k in garbage}
    assert after - before == set()
    assert sorted(result.deleted) == sorted(f"{location}/{k}" for k in garbage)
    assert requests.count("LIST") == requests.count("LIST", under=f"{bucket}/{case}/t") == 1
    assert sorted(unquote(e["path"]).lstrip("/") for e in requests.of("DELETE")) == sorted(
        f"{bucket}/{case}/t/{k}" for k in garbage
    )
