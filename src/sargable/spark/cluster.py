"""Spark processes on this machine, started from the pyspark package: a standalone cluster and a Spark Connect server.

    with StandaloneCluster(workers=2) as cluster:          # a master and two workers on 127.0.0.1
        spark = local_session(master=cluster.master_url)   # executors run this interpreter's Python
    with ConnectServer() as server:                          # `SparkSession.builder.remote(server.url)`
        ...

Both use the launchers that ship in pyspark (`bin/spark-class`, `bin/spark-submit`), free ports on 127.0.0.1, and
a log file per process. Each process is started in its own process group and stopped by that group's id (SIGTERM,
then SIGKILL), which also ends the executors and Python workers a worker started; `leftovers()` names the groups
that still have a process. `python -m sargable.spark.cluster demo` runs `sargable demo` on such a cluster (`make
cluster-demo`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sargable.errors import SargableError

HOST = "127.0.0.1"
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark package (it holds `bin/` and `jars/`)."""
    try:
        import pyspark
    except ImportError:
        raise SargableError("Spark processes need pyspark: pip install 'sargable[spark]'") from None
    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class SparkProcess:
    """One launched JVM (the leader of its own process group) and its log file."""

    name: str
    popen: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM to the process group, SIGKILL to what is left after `timeout` seconds; reaps the leader."""
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.popen.wait(timeout=0.2)
                if self.popen.poll() is not None and not _group_alive(self.pid):
                    return

    @property
    def alive(self) -> bool:
        return _group_alive(self.pid)


def _launch(name: str, argv: list[str], env: dict[str, str], log_dir: Path) -> SparkProcess:
    log = log_dir / f"{name}.log"
    with log.open("ab") as out:
        popen = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    return SparkProcess(name, popen, log)


def _environment(python: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP=HOST,
        SPARK_DAEMON_MEMORY="512m",
        PYSPARK_PYTHON=python,
        PYSPARK_DRIVER_PYTHON=python,
    )
    for variable in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", "SPARK_CONF_DIR"):
        env.pop(variable, None)
    return env


@dataclass
class _Processes:
    """Processes started by one object, stopped in reverse order."""

    directory: Path
    processes: list[SparkProcess] = field(default_factory=list)

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()

    def leftovers(self) -> list[str]:
        return [f"{p.name} (process group {p.pid})" for p in self.processes if p.alive]

    def failure(self, message: str) -> SargableError:
        logs = "\n".join(f"--- {p.name} ({p.log}):\n{p.log_tail()}" for p in self.processes)
        return SargableError(f"{message}\n{logs}")


class StandaloneCluster:
    """A Spark standalone master and `workers` workers on 127.0.0.1, each worker with `cores` cores and `memory`.

    Executors run `python` (default: this interpreter) for Python code, so they import the same sargable.
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        cores: int = 1,
        memory: str = "1g",
        python: str | None = None,
        directory: str | os.PathLike | None = None,
    ) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise SargableError(f"workers must be a positive integer, got {workers!r}")
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.python = python or sys.executable
        self._own_directory = directory is None
        root = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="sargable-cluster-"))
        root.mkdir(parents=True, exist_ok=True)
        self._procs = _Processes(root)
        self.port = 0
        self.web_port = 0

    @property
    def directory(self) -> Path:
        """Where the logs and the workers' work directories (executor logs) are."""
        return self._procs.directory

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    @property
    def web_url(self) -> str:
        return f"http://{HOST}:{self.web_port}"

    @property
    def processes(self) -> list[SparkProcess]:
        return list(self._procs.processes)

    def state(self) -> dict[str, Any]:
        """The master's JSON status page (workers, applications)."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as response:
            return json.load(response)

    def start(self, timeout: float = 120.0) -> StandaloneCluster:
        """Start the master, then the workers; return once every worker is registered and ALIVE."""
        env = _environment(self.python)
        spark_class = str(spark_home() / "bin" / "spark-class")
        self.port, self.web_port = free_port(), free_port()
        try:
            master = [spark_class, "org.apache.spark.deploy.master.Master", "--host", HOST]
            master += ["--port", str(self.port), "--webui-port", str(self.web_port)]
            self._procs.processes.append(_launch("master", master, env, self.directory))
            self._wait(lambda: _listening(self.port) and _listening(self.web_port), timeout, "the master to listen")
            for index in range(self.workers):
                work = self.directory / f"worker-{index}"
                work.mkdir(exist_ok=True)
                worker = [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", HOST]
                worker += ["--port", str(free_port()), "--webui-port", str(free_port())]
                worker += ["--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work)]
                worker.append(self.master_url)
                self._procs.processes.append(_launch(f"worker-{index}", worker, env, self.directory))
            self._wait(lambda: self.alive_workers() >= self.workers, timeout, f"{self.workers} workers to register")
        except BaseException:
            self.stop()
            raise
        return self

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")
        except OSError:
            return 0

    def _wait(self, ready: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [p.name for p in self._procs.processes if p.popen.poll() is not None]
            if dead or time.monotonic() > deadline:
                reason = f"{', '.join(dead)} exited" if dead else f"timed out after {timeout:.0f} s"
                raise self._procs.failure(f"waiting for {what}: {reason}")
            time.sleep(0.3)

    def stop(self) -> None:
        """Stop the workers (and their executors), then the master, each by its process group id."""
        self._procs.stop()

    def leftovers(self) -> list[str]:
        """The processes started here whose process group still has a live process (empty once stopped)."""
        return self._procs.leftovers()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ConnectServer:
    """The Spark Connect server of the pyspark package on 127.0.0.1 (a `local[2]` Spark unless `master` is given).

    `url` is what `SparkSession.builder.remote(...)` takes. Python code (UDFs, the `sargable` data source) runs
    in workers of the server's Spark, with `python` (default: this interpreter).
    """

    def __init__(
        self,
        *,
        master: str = "local[2]",
        python: str | None = None,
        directory: str | os.PathLike | None = None,
        conf: dict[str, str] | None = None,
    ) -> None:
        self.master = master
        self.python = python or sys.executable
        self.conf = {
            "spark.driver.memory": "1g",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.python.filterPushdown.enabled": "true",
            **(conf or {}),
        }
        root = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="sargable-connect-"))
        root.mkdir(parents=True, exist_ok=True)
        self._procs = _Processes(root)
        self.port = 0

    @property
    def url(self) -> str:
        return f"sc://{HOST}:{self.port}"

    @property
    def processes(self) -> list[SparkProcess]:
        return list(self._procs.processes)

    def start(self, timeout: float = 120.0) -> ConnectServer:
        """Launch the server with spark-submit; return once its gRPC port accepts connections."""
        self.port = free_port()
        conf = {
            **self.conf,
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.pyspark.python": self.python,
        }
        argv = [str(spark_home() / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS, "--master", self.master]
        argv += ["--name", "sargable Spark Connect server"]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        try:
            process = _launch("connect-server", argv, _environment(self.python), self._procs.directory)
            self._procs.processes.append(process)
            deadline = time.monotonic() + timeout
            while not _listening(self.port):
                if process.popen.poll() is not None or time.monotonic() > deadline:
                    raise self._procs.failure("the Spark Connect server did not start")
                time.sleep(0.3)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server (and its Python workers) by its process group id."""
        self._procs.stop()

    def leftovers(self) -> list[str]:
        """The processes started here whose process group still has a live process (empty once stopped)."""
        return self._procs.leftovers()

    def __enter__(self) -> ConnectServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _demo(args: argparse.Namespace) -> None:
    """`sargable demo` on a standalone cluster of this machine, against the metastore `args.metastore`."""
    from sargable.spark.demo import run_demo
    from sargable.spark.session import local_session

    cluster = StandaloneCluster(workers=args.workers, cores=1, memory=args.worker_memory).start()
    try:
        print(f"Spark standalone master {cluster.master_url}, {args.workers} workers, logs in {cluster.directory}")
        executor_memory = {"spark.executor.memory": args.executor_memory}
        log = cluster.directory / "driver.log"
        spark = local_session("sargable-cluster-demo", master=cluster.master_url, log=log, **executor_memory)
        try:
            run_demo(args.warehouse, rebuild=True, spark=spark, metastore=args.metastore)
        finally:
            spark.stop()
    finally:
        cluster.stop()
    left = cluster.leftovers()
    if left:
        raise SargableError(f"processes left running: {left}")
    print("stopped the master and the workers")


def main(argv: list[str] | None = None) -> int:
    """`python -m sargable.spark.cluster demo [--metastore URL] [--warehouse DIR]`."""
    parser = argparse.ArgumentParser(prog="python -m sargable.spark.cluster", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the demo on a standalone master and workers started here")
    demo.add_argument("--metastore", default=None, help="metastore URL (default: SQLite in the warehouse)")
    demo.add_argument("--warehouse", default="./warehouse/cluster", help="where the demo tables go (emptied first)")
    demo.add_argument("--workers", type=int, default=2)
    demo.add_argument("--worker-memory", default="1g")
    demo.add_argument("--executor-memory", default="1g")
    args = parser.parse_args(argv)
    try:
        _demo(args)
    except SargableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
