"""A case's time limit (`timing.case_timeout_s`): a case that runs too long becomes failed rows
with the reason, and the sweep goes on.

The limit is checked between steps: before each variant is prepared, before each timing round
and before each profile. A step that has started runs to its end: stopping a Python thread in
the middle of torch.compile or a device call is not safe (an exception raised from a signal
handler there is dropped, see stopping.py), and a call that never returns cannot be stopped
from inside the process at all: the launcher's own time limit (SLURM `timeout_min`) is for
that, and a resume finishes the sweep. So a case can overrun its limit by one step.
"""
from __future__ import annotations

import time


class CaseClock:
    def __init__(self, limit_s: float):
        self.limit_s = limit_s  # 0: no limit
        self.started = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def over(self) -> bool:
        return self.limit_s > 0 and self.elapsed() > self.limit_s

    def reason(self, left_out: str) -> str:
        """`the case ran past timing.case_timeout_s=60 s (73 s): <left_out>`."""
        return (f"the case ran past timing.case_timeout_s={self.limit_s:g} s "
                f"({self.elapsed():.0f} s): {left_out}")


NO_LIMIT = CaseClock(0)
