"""A progress line per (case, variant): which one is running, then what it measured."""
from __future__ import annotations

import math
import time

from suites.results.row import ResultRow


class Progress:
    def __init__(self, total: int, enabled: bool, stream):
        self.total, self.enabled, self.stream = total, enabled, stream
        self.done, self.started = 0, 0.0

    def start(self, case_id: str, variant: str) -> None:
        self.started = time.perf_counter()
        if self.enabled:
            width = len(str(self.total))
            print(f"[{self.done + 1:>{width}}/{self.total}] {case_id:<24} {variant:<22}",
                  end="", file=self.stream, flush=True)

    def finish(self, row: ResultRow) -> None:
        self.done += 1
        if not self.enabled:
            return
        seconds = time.perf_counter() - self.started
        median = row.value("median_us")
        if row.ok and not math.isnan(median):
            detail = f"{median:12.1f} us"
        else:
            detail = f"{row.status}: {row.reason}"[:90]
        print(f" {detail}   ({seconds:.1f} s)", file=self.stream, flush=True)
