"""Printed output of one sandbox call: kept up to a size, then cut with a marker.

A program that keeps printing far past the limit (an output flood) is stopped rather than left
to run out its time: nothing it prints from then on would be kept.
"""

from __future__ import annotations

from typing import Literal

FLOOD_FACTOR = 20  # printed output this many times the limit stops the program


class OutputFlood(RuntimeError):
    """Raised from the print callback; the interpreter ends the program with it."""


class OutputCollector:
    """A pydantic-monty print callback keeping the first ``max_chars`` characters."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.flood_chars = max_chars * FLOOD_FACTOR
        self._parts: list[str] = []
        self._kept = 0
        self.total = 0
        self.flooded = False

    def __call__(self, stream: Literal["stdout", "stderr"], text: str) -> None:
        self.add(text)
        if self.total > self.flood_chars:
            self.flooded = True
            raise OutputFlood(
                f"output limit: the program printed more than {self.flood_chars} characters "
                "and was stopped"
            )

    def add(self, text: str) -> None:
        self.total += len(text)
        room = self.max_chars - self._kept
        if room > 0:
            kept = text[:room]
            self._parts.append(kept)
            self._kept += len(kept)

    @property
    def truncated(self) -> bool:
        return self.total > self._kept

    def text(self) -> str:
        out = "".join(self._parts)
        if self.truncated:
            out += (
                f"\n... (output truncated: {self.total - self._kept} more characters; print "
                "less, or summarise in code)"
            )
        return out
