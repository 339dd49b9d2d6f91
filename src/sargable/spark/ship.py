"""What sargable hands Spark's Python workers carries sargable's own source: workers need pyspark and pyarrow only.

Spark pickles the functions and classes it runs in Python workers (the writer's footer job, the data source's
planning and its reader) with pyspark's cloudpickle, which pickles sargable's by reference: a worker without
sargable installed fails with `No module named 'sargable'`. So each of them travels as a `Shipped` value: the
object pickled, next to sargable's source zipped. Unpickled in a worker, it loads the object only when used, after
making sargable importable: the worker's own installation if it has one, else the shipped source (written once to
a zip file in the temporary folder and put first on `sys.path`). This module imports nothing of sargable, and
cloudpickle pickles it by value (`register_pickle_by_value`), so a worker needs nothing to unpickle it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import io
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, DataSourceReader

_SOURCE: list[bytes] = []
"""sargable's source zipped, built once per process. Only functions that are never pickled refer to it."""


def package_source() -> bytes:
    """sargable's `.py` files as a zip (the package folder `sargable/` at its root), built once per process; in a
    worker that imported sargable from a shipped zip, that zip."""
    if not _SOURCE:
        root = Path(importlib.import_module("sargable").__file__ or "").parent
        if not root.is_dir():
            _SOURCE.append(root.parent.read_bytes())
            return _SOURCE[0]
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(root.rglob("*.py")):
                info = zipfile.ZipInfo(str(Path("sargable") / path.relative_to(root)), date_time=(2000, 1, 1, 0, 0, 0))
                archive.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
        _SOURCE.append(buffer.getvalue())
    return _SOURCE[0]


def make_importable(source: bytes) -> None:
    """Make `import sargable` work: a no-op where it does; else the zipped `source` goes first on `sys.path`."""
    if importlib.util.find_spec("sargable") is not None:
        return
    path = os.path.join(tempfile.gettempdir(), f"sargable-{hashlib.sha256(source).hexdigest()[:16]}.zip")
    if not os.path.exists(path):
        fd, partial = tempfile.mkstemp(suffix=".partial", dir=os.path.dirname(path))
        with os.fdopen(fd, "wb") as out:
            out.write(source)
        os.replace(partial, path)
    sys.path.insert(0, path)
    importlib.invalidate_caches()


class Shipped:
    """An object pickled, with sargable's source zipped: `value()` (or a call) loads it where it is used."""

    def __init__(self, payload: bytes, source: bytes) -> None:
        self._payload = payload
        self._source = source
        self._value: list[Any] = []

    def value(self) -> Any:
        if not self._value:
            make_importable(self._source)
            self._value.append(cloudpickle.loads(self._payload))
        return self._value[0]

    def __call__(self, *args: Any) -> Any:
        return self.value()(*args)

    def __reduce__(self) -> tuple[Any, ...]:
        return Shipped, (self._payload, self._source)


def ship(obj: Any) -> Shipped:
    """`obj` (a function, a class, any picklable value) as a `Shipped` value."""
    return Shipped(cloudpickle.dumps(obj), package_source())


def revive(shipped: Shipped) -> Any:
    """An object from its class and state, shipped: what `shipped_instance` pickles to."""
    cls, state = shipped.value()
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


def shipped_instance(obj: Any) -> tuple[Any, ...]:
    """A `__reduce__` value for `obj` (a plain instance with a `__dict__`) that ships sargable with it."""
    return revive, (ship((type(obj), obj.__dict__)),)


class ShippedDataSource(DataSource):
    """A Python data source whose implementation is shipped: a subclass sets `format` and `implementation`."""

    format = ""
    implementation: Shipped

    @classmethod
    def name(cls) -> str:
        return cls.format

    def _delegate(self) -> DataSource:
        return self.implementation.value()(self.options)

    def schema(self) -> Any:
        return self._delegate().schema()

    def reader(self, schema: Any) -> DataSourceReader:
        return self._delegate().reader(schema)


def shipped_data_source(format_name: str, implementation: type[DataSource]) -> type[DataSource]:
    """A data source class to register under `format_name` that runs `implementation` in workers, with or without
    sargable."""
    attributes = {"format": format_name, "implementation": ship(implementation), "__module__": __name__}
    return type(f"Shipped{implementation.__name__}", (ShippedDataSource,), attributes)


cloudpickle.register_pickle_by_value(sys.modules[__name__])
