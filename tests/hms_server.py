"""`sargable serve` as a subprocess on a free port (own process group, log to a file), and a raw Thrift client of
the Hive metastore API built from the bindings package alone (no sargable code on the client side)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hive_peer import free_port, stop_group, wait_for_port


class SargableServe:
    """`sargable --metastore URL serve --create --port P --warehouse W [--read-only] [ARGS...]`."""

    def __init__(
        self,
        workdir: Path,
        metastore_url: str,
        *,
        read_only: bool = False,
        port: int | None = None,
        args: Sequence[str] = (),
    ) -> None:
        self.workdir = Path(workdir)
        self.metastore_url = metastore_url
        self.read_only = read_only
        self.args = list(args)
        self.port = port or free_port()
        self.warehouse = self.workdir / "warehouse"
        self.log = self.workdir / f"serve-{self.port}.log"
        self.process: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> SargableServe:
        self.workdir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "sargable.cli", "--metastore", self.metastore_url, "serve", "--create"]
        command += ["--port", str(self.port), "--warehouse", str(self.warehouse)]
        if self.read_only:
            command.append("--read-only")
        command += self.args
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        try:
            wait_for_port(self.port, timeout, self.process, self.log)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> int | None:
        """SIGTERM the server's group; its exit status (0 after a clean stop)."""
        if self.process is None:
            return None
        status = stop_group(self.process)
        self.process = None
        return status

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def calls(self) -> list[str]:
        """The server's per-call log lines so far (method first)."""
        lines = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return [line.split(" INFO ", 1)[1] for line in lines if " sargable.hms INFO " in line]

    def __enter__(self) -> SargableServe:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def self_signed_certificate(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM files in `folder`), made by the openssl command
    (the test is skipped without it)."""
    import pytest

    if shutil.which("openssl") is None:
        pytest.skip("no openssl command")
    cert, key = folder / f"{name}.pem", folder / f"{name}-key.pem"
    command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}"]
    subprocess.run(
        [*command, "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


def peak_rss_mb(pid: int) -> float:
    """A process's peak resident memory so far (VmHWM), in MiB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


@contextmanager
def thrift_client(port: int, *, framed: bool = False, timeout_ms: int = 30_000) -> Iterator[Any]:
    """pymetastore's generated `ThriftHiveMetastore.Client` on the plain Thrift runtime (buffered or framed)."""
    from pymetastore.hive_metastore import ThriftHiveMetastore
    from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
    from thrift.transport import TSocket, TTransport

    sock = TSocket.TSocket("127.0.0.1", port)
    sock.setTimeout(timeout_ms)
    transport = TTransport.TFramedTransport(sock) if framed else TTransport.TBufferedTransport(sock)
    transport.open()
    try:
        yield ThriftHiveMetastore.Client(TBinaryProtocolAccelerated(transport))
    finally:
        transport.close()
