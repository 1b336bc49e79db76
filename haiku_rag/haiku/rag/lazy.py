"""A package's public names loaded from their modules on first use (PEP 562).

A package whose modules are heavy (Pydantic AI, LanceDB) stays cheap to import: its
``__init__`` lists which module each name lives in and sets
``__getattr__ = lazy_exports(globals(), {"name": "module", ...})``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(namespace: dict[str, Any], homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` for the package whose globals are ``namespace``: a name in
    ``homes`` is imported from ``<package>.<homes[name]>`` on first use and kept in the package,
    so later lookups are plain attribute reads; any other name is an ``AttributeError``."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    return __getattr__
