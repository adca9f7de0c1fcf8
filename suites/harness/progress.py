"""A progress line per case: which case is running, then what each variant measured."""
from __future__ import annotations

import math
import time

from suites.results.row import ResultRow


class Progress:
    def __init__(self, total: int, enabled: bool, stream):
        self.total, self.enabled, self.stream = total, enabled, stream
        self.done, self.started = 0, 0.0

    def _print(self, text: str, **kwargs) -> None:
        if self.enabled:
            print(text, file=self.stream, flush=True, **kwargs)

    def start(self, case_id: str, n_variants: int) -> None:
        self.started = time.perf_counter()
        width = len(str(self.total))
        self._print(f"[{self.done + 1:>{width}}-{min(self.total, self.done + n_variants):>{width}}"
                    f"/{self.total}] {case_id}")
        self.done += n_variants

    def again(self, case_id: str) -> None:
        self.started = time.perf_counter()
        self._print(f"[re-measure] {case_id}: too few clean timing rounds, timed again")

    def finish(self, rows: list[ResultRow]) -> None:
        for row in rows:
            median = row.value("median_us")
            if row.ok and not math.isnan(median):
                detail = f"{median:12.1f} us   {row.value('rounds'):.0f} clean rounds"
            else:
                detail = f"{row.status}: {row.reason}"[:100]
            self._print(f"    {row.variant:<22} {detail}")
        self._print(f"    ({time.perf_counter() - self.started:.1f} s)")
