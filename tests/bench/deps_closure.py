"""Installed size of the runtime dependency closure of two pyproject.toml files, measured on the
packages installed in the running environment (issue 33, item 6: what dropping a dependency
saves, what adding one costs).

Usage: python tests/bench/deps_closure.py OLD_PYPROJECT NEW_PYPROJECT
(an old one: ``git show 1bd86a5:pyproject.toml > /tmp/old.toml``). Environment markers are
evaluated for this machine; a package missing from the environment is named on stderr and
left out. Sizes are the files each distribution's RECORD lists."""

from __future__ import annotations

import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution

from packaging.requirements import Requirement


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def closure(requirements: list[str]) -> set[str]:
    """Every distribution the requirements pull in here (extras followed)."""
    seen: dict[str, set[str]] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker and not req.marker.evaluate({"extra": ""}):
            continue
        name = _norm(req.name)
        if name in seen and set(req.extras) <= seen[name]:
            continue
        try:
            dist = distribution(req.name)
        except PackageNotFoundError:
            print("missing", name, file=sys.stderr)
            continue
        seen[name] = seen.get(name, set()) | set(req.extras)
        for line in dist.requires or []:
            sub = Requirement(line)
            if sub.marker:
                if not any(sub.marker.evaluate({"extra": e}) for e in (seen[name] or {""})):
                    continue
                sub.marker = None
            todo.append(sub)
    return set(seen)


def size_mb(names: set[str] | list[str]) -> float:
    total = 0
    for name in names:
        files = distribution(name).files or []
        total += sum(f.size or 0 for f in files)
    return total / 1e6


def main(old_path: str, new_path: str) -> None:
    closures = []
    for path in (old_path, new_path):
        with open(path, "rb") as handle:
            closures.append(closure(tomllib.load(handle)["project"]["dependencies"]))
    old, new = closures
    print(f"old closure {len(old)} packages {size_mb(old):.1f} MB; new {len(new)} packages {size_mb(new):.1f} MB")
    for label, names in (("removed", sorted(old - new)), ("added", sorted(new - old))):
        parts = ", ".join(f"{n} {size_mb([n]):.1f}" for n in names)
        print(f"{label}: {parts} = {size_mb(names):.1f} MB")


if __name__ == "__main__":
    main(*sys.argv[1:3])
