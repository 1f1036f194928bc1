"""Moved to :mod:`gluonbench.data.store` (the object stores sit below the data formats that read
them, which removed a ``data`` <-> ``sources`` import cycle); this alias keeps old imports working."""

from gluonbench.data.store import LocalStore, ObjectInfo, Store, open_store, safe_key

__all__ = ["LocalStore", "ObjectInfo", "Store", "open_store", "safe_key"]
