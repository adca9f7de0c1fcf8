"""How gpu_check's sections share the lease: each in a process of its own, in a window that
holds by construction.

A section's process is killed at the end of its window wherever it is: an illegal-address
error poisons only its own CUDA context, and a kernel that never finishes (blocked in
cudaStreamSynchronize, where no Python signal handler runs) costs only its own window. Inside
the window the section's own clock ends GRACE_S earlier (`grace`), so its items stop and its rows are
written before the kill; every thread's stack is dumped (faulthandler) STACKS_BEFORE_S before
it, so a kill says where the process was.

Windows: a section gets its budget plus what the sections before it left unused, but never the
time promised to the sections after it; where the ones before it overran, it gets a share of
what is left in proportion to its budget. So the sections end by the check's deadline whatever
each one does, and a section given less than MIN_START_S is not started (a row says so) rather
than started to be killed during its imports.
"""
from __future__ import annotations

import faulthandler
import os
import signal
import subprocess
import time
from dataclasses import dataclass

GRACE_S = 10.0          # a section's own clock ends this long before its window: rows written
STACKS_BEFORE_S = 3.0   # every stack dumped this long before the kill
MIN_START_S = 20.0      # imports (torch, triton) and a first item: a window squeezed under
                        # this (and under its budget) by an overrun before it is not used


def grace(window_s: float) -> float:
    """How long before its window's end a section's own clock ends: GRACE_S, or a quarter of
    a short window (a 16 s window would otherwise leave its items 6 s)."""
    return min(GRACE_S, 0.25 * window_s)


def window(budget_s: float, later_s: float, left_s: float) -> float:
    """Seconds a section may run: `left_s` is what the check has left, `later_s` the budgets of
    the sections after this one."""
    if left_s <= 0:
        return 0.0
    spare = left_s - later_s
    if spare >= budget_s:
        return spare  # its budget and the unused time before it; what it leaves goes on
    total = budget_s + later_s
    return left_s * budget_s / total if total > 0 else left_s


@dataclass(frozen=True)
class Ended:
    code: int | None   # the process's exit status (negative: the signal that ended it)
    killed: bool       # killed at the end of its window
    seconds: float


def run_section(command: list[str], window_s: float, log, env: dict | None = None) -> Ended:
    """`command` in a new session (its own process group: Inductor's compile workers and any
    other children go with it), killed with SIGKILL `window_s` seconds after it starts.
    stdout is ours (its rows are echoed live); stderr goes to `log`."""
    started = time.monotonic()
    process = subprocess.Popen(command, stderr=log, env=env, start_new_session=True)
    try:
        code = process.wait(timeout=max(0.0, window_s))
        return Ended(code, False, time.monotonic() - started)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        code = process.wait()
        return Ended(code, True, time.monotonic() - started)
    except BaseException:  # our own Ctrl-C or kill: the section's process does not outlive us
        _kill_group(process.pid)
        process.wait()
        raise


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def watch_stacks(until_epoch: float, log) -> None:
    """In a section's process: every thread's stack into `log` shortly before the kill."""
    seconds = until_epoch - time.time() - STACKS_BEFORE_S
    if seconds > 0:
        faulthandler.dump_traceback_later(seconds, exit=False, file=log)


def ended_row(name: str, ended: Ended, window_s: float) -> dict | None:
    """The row a section's process leaves beyond its items' own, or None when it ended well."""
    if ended.killed:
        return {"status": "deadline", "seconds": round(ended.seconds, 1),
                "error": f"the section's process was killed at the end of its window "
                         f"({window_s:.0f} s); every thread's stack is in log.txt"}
    if ended.code:
        how = (f"ended by signal {-ended.code}" if ended.code < 0
               else f"exited with status {ended.code}")
        return {"status": "failed", "seconds": round(ended.seconds, 1),
                "error": f"the section's process {how}; its traceback is in log.txt"}
    return None
