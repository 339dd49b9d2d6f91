"""The Hive metastore's Thrift bindings (pymetastore's, generated from Hive 3.1's IDL) and the Thrift runtime.

The one place that names the bindings package, so replacing it touches one file. Needs the `hms` extra:
`pip install 'sargable[hms]'`.
"""

from __future__ import annotations

from sargable.errors import SargableError

try:
    from pymetastore.hive_metastore import ThriftHiveMetastore, ttypes
    from thrift.protocol import TBinaryProtocol
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise SargableError(
        f"sargable.hms needs the Thrift runtime and the Hive metastore bindings ({exc.name} is missing): "
        "pip install 'sargable[hms]'"
    ) from None

try:
    from thrift.protocol import fastbinary  # noqa: F401  (the C-accelerated binary protocol)

    ACCELERATED = True
except ImportError:  # pragma: no cover - the runtime built without its C extension
    ACCELERATED = False

__all__ = ["ACCELERATED", "TBinaryProtocol", "ThriftHiveMetastore", "ttypes"]
