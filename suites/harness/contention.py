"""What else ran while a round was timed.

CPU, two readings: how long this process's threads sat runnable but not running (the kernel's
per-thread run-queue delay, /proc/self/task/*/schedstat, in nanoseconds: exact even over a few
milliseconds, and exactly the cost another process imposes on the timing), and the cores other
processes kept busy (/proc/stat's busy time of the CPUs this process may run on, minus its own
CPU time; the load average cannot tell this process from the others and lags by a minute). GPU: other
processes using the device, its SM clock against the maximum and what limits the clock
(suites/harness/gpu_state.py), read at the end of every share.
"""
from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

from suites.harness.cpu_budget import throttled_s
from suites.harness.gpu_state import GpuState

_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class RoundLoad:
    """The machine while one variant's share of a round was timed."""

    wall_s: float
    others_cores: float | None = None       # CPU cores other processes kept busy, on average
    wait_frac: float | None = None          # this process's threads' run-queue wait / wall
    gpu_other_processes: int | None = None  # other processes with a context on the GPU
    sm_clock_ratio: float | None = None     # SM clock / its maximum, at the end of the share
    page_faults: int | None = None          # this process's page faults (minor + major)
    throttled_frac: float | None = None     # share of the wall time the CPU quota throttled
    sm_clock_mhz: int | None = None         # the SM clock at the end of the share
    clock_reasons: int | None = None        # NVML's clock event reasons then (gpu_state.py)


def usable_cpus() -> set[int]:
    """The CPUs this process may run on (a cpuset or taskset can allow fewer than the machine's)."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def cpu_times(cpus: set[int] | None = None) -> tuple[int, int] | None:
    """(busy, total) ticks from /proc/stat, of `cpus` (all CPUs when None), or None off Linux."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    busy = total = 0
    for line in lines:
        name, *values = line.split()
        if not name.startswith("cpu"):
            break  # the cpu lines come first
        if (name != "cpu") if cpus is None else (name[3:] == "" or int(name[3:]) not in cpus):
            continue
        fields = [int(v) for v in values]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        busy, total = busy + sum(fields) - idle, total + sum(fields)
    return (busy, total) if total else None


def run_delay_s() -> float | None:
    """Seconds this process's threads have spent runnable but waiting for a CPU, all threads
    summed (threads that ended are gone from the sum: the rounds' threads are long-lived)."""
    total, seen = 0, False
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
                seen = True
        except (OSError, ValueError, IndexError):  # a thread that just ended; no schedstat
            continue
    return total / 1e9 if seen else None


def others_cores(busy_ticks: float, own_cpu_s: float, wall_s: float) -> float | None:
    """Cores kept busy by everything but this process: (all busy time - own CPU time) / wall."""
    if wall_s <= 0:
        return None
    return max(0.0, (busy_ticks / _TICKS_PER_S - own_cpu_s) / wall_s)


def page_faults() -> int:
    """This process's page faults so far, minor and major (getrusage): a call that touches
    memory no call touched since it was unmapped pays one per page."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt + usage.ru_majflt


class LoadMeter:
    """start() before a variant's share of a round, stop() after: what else ran meanwhile."""

    def __init__(self, device_type: str, device_index: int = 0):
        self.nvml = GpuState(device_index) if device_type == "cuda" else None
        self.cpus = usable_cpus()
        self._start = None

    def start(self) -> None:
        self._start = (time.perf_counter(), time.process_time(), cpu_times(self.cpus),
                       run_delay_s(), page_faults(), throttled_s())

    def stop(self) -> RoundLoad:
        wall0, own0, ticks0, delay0, faults0, throttled0 = self._start
        wall, own = time.perf_counter() - wall0, time.process_time() - own0
        faults = page_faults() - faults0
        throttled = throttled_s()
        quota = (max(0.0, throttled - throttled0) / wall
                 if throttled is not None and throttled0 is not None and wall > 0 else None)
        ticks = cpu_times(self.cpus)
        delay = run_delay_s()
        others = (others_cores(ticks[0] - ticks0[0], own, wall)
                  if ticks is not None and ticks0 is not None else None)
        if others is not None:  # ticks over a short share can read past the cores there are
            others = min(others, float(len(self.cpus)))
        wait = (max(0.0, delay - delay0) / wall
                if delay is not None and delay0 is not None and wall > 0 else None)
        if self.nvml is None:
            return RoundLoad(wall, others, wait, page_faults=faults, throttled_frac=quota)
        clock = self.nvml.sm_clock_mhz()
        return RoundLoad(wall, others, wait, self.nvml.other_processes(),
                         self.nvml.clock_ratio(clock), faults, quota, clock,
                         self.nvml.reason_mask())
