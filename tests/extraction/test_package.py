"""The package's lazy names are the functions and types, also after their modules loaded."""

from __future__ import annotations

import importlib


def test_names_are_not_shadowed_by_submodules() -> None:
    import haiku.rag.extraction as package

    for name in package.__all__:
        value = getattr(package, name)
        assert not isinstance(value, type(importlib)), f"{name} is a module"
    importlib.import_module("haiku.rag.extraction.filling")
    from haiku.rag.extraction import fill

    assert callable(fill) and fill.__module__ == "haiku.rag.extraction.filling"
