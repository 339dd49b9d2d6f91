"""Hive's own metastore (2.3.10, from the jars inside the pyspark package) on embedded Derby: the peer of `sargable
serve` in tests and in benchmarks/hms.py. Started on a free port in its own process group, stopped by group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit
from xml.sax.saxutils import escape

_SITE = """<?xml version="1.0"?>
<configuration>
{properties}
</configuration>
"""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float, process: subprocess.Popen | None = None, log: Path | None = None) -> None:
    """Wait until something accepts connections on 127.0.0.1:`port` (fails early when `process` exits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log is not None and log.exists() else ""
            raise RuntimeError(f"the server exited with status {process.returncode} before listening\n{tail}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {timeout:.0f} s")


def stop_group(process: subprocess.Popen, timeout: float = 20) -> int:
    """SIGTERM the process group `process` leads, then SIGKILL it if it is still there after `timeout` seconds."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return process.wait()


def pyspark_jars() -> Path:
    """The jars folder of the installed pyspark package (Hive 2.3.10's metastore, Derby, DataNucleus, libthrift)."""
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


POSTGRES_JDBC_JAR = Path("/usr/share/java/postgresql.jar")
"""Debian's `libpostgresql-jdbc-java`: the JDBC driver Hive's metastore needs for PostgreSQL (not in pyspark)."""


def postgres_conf(database_url: str) -> dict[str, str]:
    """hive-site.xml settings for a metastore in the PostgreSQL database at `postgresql://user[:pw]@host:port/db`:
    direct SQL on, HikariCP connection pool (its jar ships in pyspark)."""
    parts = urlsplit(database_url)
    return {
        "javax.jdo.option.ConnectionURL": f"jdbc:postgresql://{parts.hostname}:{parts.port or 5432}{parts.path}",
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": unquote(parts.username or ""),
        "javax.jdo.option.ConnectionPassword": unquote(parts.password or ""),
        "hive.metastore.try.direct.sql": "true",
        "datanucleus.connectionPoolingType": "HikariCP",
    }


class HivePeer:
    """`org.apache.hadoop.hive.metastore.HiveMetaStore` on a Derby database under `workdir`, or on PostgreSQL with
    `extra_conf=postgres_conf(url)` and `classpath=[POSTGRES_JDBC_JAR]` (put before the pyspark jars)."""

    def __init__(
        self,
        workdir: Path,
        port: int | None = None,
        *,
        extra_conf: dict[str, str] | None = None,
        classpath: list[Path] | None = None,
        heap: str = "1g",
    ) -> None:
        self.workdir = Path(workdir)
        self.port = port or free_port()
        self.warehouse = self.workdir / "warehouse"
        self.log = self.workdir / "hive-metastore.log"
        """The metastore's stdout and stderr; its own log (log4j) goes to `workdir / "hive.log"`."""
        self.extra_conf = extra_conf or {}
        self.classpath = classpath or []
        self.heap = heap
        """The JVM's -Xmx (Hive's default 1g; a listing of 1,000,000 partitions needs more)."""
        self.process: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def _write_conf(self) -> Path:
        conf = self.workdir / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        settings = {
            "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={self.workdir / 'derby'};create=true",
            "datanucleus.schema.autoCreateAll": "true",
            "hive.metastore.schema.verification": "false",
            "hive.async.log.enabled": "false",
            "hive.metastore.warehouse.dir": str(self.warehouse),
            **self.extra_conf,
        }
        props = "\n".join(
            f"<property><name>{escape(k)}</name><value>{escape(v)}</value></property>" for k, v in settings.items()
        )
        (conf / "hive-site.xml").write_text(_SITE.format(properties=props))
        return conf

    def start(self, timeout: float = 180) -> HivePeer:
        """Start the metastore and wait until it accepts connections (about 10-30 s: the JVM and Derby's schema)."""
        conf = self._write_conf()
        self.warehouse.mkdir(parents=True, exist_ok=True)
        classpath = ":".join([str(conf), *map(str, self.classpath), f"{pyspark_jars()}/*"])
        command = ["java", f"-Xmx{self.heap}", f"-Dhive.log.dir={self.workdir}", "-cp", classpath]
        command.append("org.apache.hadoop.hive.metastore.HiveMetaStore")
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [*command, "-p", str(self.port)],
                cwd=self.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            wait_for_port(self.port, timeout, self.process, self.log)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process)
            self.process = None

    def __enter__(self) -> HivePeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
