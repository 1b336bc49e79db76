"""What code is refused before it reaches the interpreter.

The boundary is the interpreter itself: pydantic-monty has no access to the host except
through the calls ``filesystem`` and ``runtime`` answer. These checks come first so a refusal
names what was refused and why, and so code cannot import modules beyond the allowed ones,
directly or through ``exec``/``eval``.
"""

from __future__ import annotations

import ast
import re

# The modules the interpreter provides that computing over text needs (pydantic-monty 1.4 has
# no statistics, heapq, string or textwrap); os, sys and the rest are refused.
ALLOWED_MODULES = frozenset(
    {
        "asyncio",
        "base64",
        "bisect",
        "collections",
        "copy",
        "csv",
        "dataclasses",
        "datetime",
        "decimal",
        "functools",
        "hashlib",
        "itertools",
        "json",
        "math",
        "pathlib",
        "random",
        "re",
        "time",
        "typing",
        "unicodedata",
    }
)

# Names that run code given as a string (which would dodge the import check) or reach the
# interpreter's internals.
REFUSED_NAMES = frozenset(
    {"exec", "eval", "compile", "__import__", "__builtins__", "globals", "locals", "vars", "breakpoint"}
)
# Dunder attributes that classes need; every other dunder attribute is refused.
ALLOWED_DUNDER_ATTRIBUTES = frozenset({"__init__", "__name__", "__doc__"})

_IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\b|import\s+([\w.,\s]+))", re.M)


class CodeRefused(ValueError):
    """Code that is not run; the message says why."""


def check_code(code: str) -> None:
    """Raise ``CodeRefused`` for code the sandbox will not run."""
    try:
        tree = compile(code, "<analysis>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:
        # Syntax this Python cannot parse may still be valid for the interpreter (newer
        # grammar): check the imports line by line and let the interpreter judge the rest.
        _check_imports_by_line(code)
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                _check_module(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise CodeRefused("Relative imports are not available in the sandbox.")
            _check_module(node.module or "")
        elif isinstance(node, ast.Name) and node.id in REFUSED_NAMES:
            raise CodeRefused(f"`{node.id}` is not available in the sandbox.")
        elif isinstance(node, ast.Attribute) and _refused_attribute(node.attr):
            raise CodeRefused(
                f"The attribute `{node.attr}` is not available in the sandbox (it reaches the "
                "interpreter's internals)."
            )


def _refused_attribute(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and name not in ALLOWED_DUNDER_ATTRIBUTES


def _check_module(name: str) -> None:
    top = name.split(".")[0]
    if top not in ALLOWED_MODULES:
        raise CodeRefused(
            f"Importing `{name}` is not allowed in the sandbox. Available modules: "
            f"{', '.join(sorted(ALLOWED_MODULES))}."
        )


def _check_imports_by_line(code: str) -> None:
    for match in _IMPORT_LINE.finditer(code):
        if match.group(1):
            _check_module(match.group(1))
        else:
            for part in match.group(2).split(","):
                words = part.split()
                if words:
                    _check_module(words[0])
