"""Running the app's qasync loop in tests until something becomes true."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


def run_until(loop: asyncio.AbstractEventLoop, predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    """Run the qasync loop (and so Qt's events) until ``predicate()`` is true."""

    async def poll() -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout} s")
            await asyncio.sleep(0.02)

    loop.run_until_complete(poll())
