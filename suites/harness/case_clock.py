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


# A deadline for every case of this process (time.perf_counter's clock), or None: a caller
# with a hard end of its own (gpu_check's section) sets it, so a case, or a re-measure that
# starts late, stops at that end instead of a fresh case_timeout_s after its own start.
_process_deadline: float | None = None


def hold_until(deadline: float | None) -> None:
    """Every case clock made from now on also stops at `deadline` (perf_counter seconds)."""
    global _process_deadline
    _process_deadline = deadline


def deadline_passed() -> bool:
    """The process's deadline (hold_until) has passed: nothing new should start."""
    return _process_deadline is not None and time.perf_counter() > _process_deadline


class CaseClock:
    def __init__(self, limit_s: float):
        self.limit_s = limit_s  # 0: no limit
        self.started = time.perf_counter()
        self.deadline = _process_deadline

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline

    def over(self) -> bool:
        return (self.limit_s > 0 and self.elapsed() > self.limit_s) or self.past_deadline()

    def reason(self, left_out: str) -> str:
        """`the case ran past timing.case_timeout_s=60 s (73 s): <left_out>`."""
        if self.past_deadline() and not (self.limit_s > 0 and self.elapsed() > self.limit_s):
            return f"the run's deadline passed during the case ({self.elapsed():.0f} s in): " \
                   f"{left_out}"
        return (f"the case ran past timing.case_timeout_s={self.limit_s:g} s "
                f"({self.elapsed():.0f} s): {left_out}")


NO_LIMIT = CaseClock(0)
