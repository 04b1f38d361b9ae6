"""Where a table's run spends its time: each phase's seconds in its result (summary `timings_s`)."""
import time

from ..core.summary import TableResult


class Clock:
    """Adds the time of a `with` block to one phase of the table's result."""

    def __init__(self, result: TableResult, phase: str) -> None:
        self.result, self.phase = result, phase

    def __enter__(self) -> "Clock":
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.result.add_time(self.phase, time.monotonic() - self.t0)
