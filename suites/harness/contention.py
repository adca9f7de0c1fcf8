"""What else ran while a round was timed.

CPU: the cores other processes kept busy, from /proc/stat's busy time of all CPUs minus this
process's own CPU time over the same wall time (the load average cannot tell this process from
the others, and lags by a minute). GPU: other processes holding the device and the SM clock
against its maximum, from NVML where `pynvml` is installed (unknown otherwise, never guessed).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class RoundLoad:
    """The machine while one variant's share of a round was timed."""

    wall_s: float
    others_cores: float | None = None       # CPU cores other processes kept busy, on average
    gpu_other_processes: int | None = None  # other processes with a context on the GPU
    sm_clock_ratio: float | None = None     # SM clock / its maximum, at the end of the share


def cpu_times() -> tuple[int, int] | None:
    """(busy, total) ticks of all CPUs from /proc/stat, or None off Linux."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def others_cores(busy_ticks: float, own_cpu_s: float, wall_s: float) -> float | None:
    """Cores kept busy by everything but this process: (all busy time - own CPU time) / wall."""
    if wall_s <= 0:
        return None
    return max(0.0, (busy_ticks / _TICKS_PER_S - own_cpu_s) / wall_s)


class _Nvml:
    """NVML handles for the GPU being timed; every query returns None when NVML is missing."""

    def __init__(self, device_index: int):
        self.handle = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
            self.max_clock = pynvml.nvmlDeviceGetMaxClockInfo(self.handle, pynvml.NVML_CLOCK_SM)
        except Exception:  # no pynvml, no driver access, an index NVML numbers differently
            self.handle = None

    def other_processes(self) -> int | None:
        if self.handle is None:
            return None
        try:
            procs = self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)
        except Exception:
            return None
        return sum(1 for p in procs if p.pid != os.getpid())

    def clock_ratio(self) -> float | None:
        if self.handle is None or not self.max_clock:
            return None
        try:
            return self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM) / self.max_clock
        except Exception:
            return None


class LoadMeter:
    """start() before a variant's share of a round, stop() after: what else ran meanwhile."""

    def __init__(self, device_type: str, device_index: int = 0):
        self.nvml = _Nvml(device_index) if device_type == "cuda" else None
        self._start = None

    def start(self) -> None:
        self._start = (time.perf_counter(), time.process_time(), cpu_times())

    def stop(self) -> RoundLoad:
        wall0, own0, ticks0 = self._start
        wall, own, ticks = time.perf_counter() - wall0, time.process_time() - own0, cpu_times()
        others = (others_cores(ticks[0] - ticks0[0], own, wall)
                  if ticks is not None and ticks0 is not None else None)
        if self.nvml is None:
            return RoundLoad(wall, others)
        return RoundLoad(wall, others, self.nvml.other_processes(), self.nvml.clock_ratio())
