"""How much CPU this process may really use: physical cores within its affinity mask, and the
container's CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`), with the time the quota
throttled it (`cpu.stat`).

Why: `os.sched_getaffinity` counts SMT siblings as cores (twice what torch's own default takes)
and knows nothing of a quota, so inside a 4-CPU quota on a 64-core host `threads=auto` was 63:
the team ran out of quota every period and the stall was blamed on "another process". Every
reader takes its root folders as arguments, so the tests feed it a fake /sys.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

SYS_CPU = Path("/sys/devices/system/cpu")
CGROUP = Path("/sys/fs/cgroup")


def physical_cores(cpus: set[int], sys_cpu: Path = SYS_CPU) -> int:
    """Distinct (package, core) among `cpus`; len(cpus) where the topology cannot be read."""
    cores = set()
    for cpu in cpus:
        topology = sys_cpu / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
        except OSError:
            return len(cpus)
        cores.add((package, core))
    return len(cores) or len(cpus)


def cpu_quota(cgroup: Path = CGROUP) -> float | None:
    """CPUs' worth of time the container may use per period, or None without a quota."""
    try:  # cgroup v2: "max 100000" or "400000 100000"
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:  # cgroup v1: quota -1 means none
        quota = int((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 or period <= 0 else quota / period
    except (OSError, ValueError):
        return None


def throttled_s(cgroup: Path = CGROUP) -> float | None:
    """Seconds the quota has throttled this container so far (v2 throttled_usec, v1
    throttled_time in ns), or None where there is no such count."""
    for stat, key, scale in ((cgroup / "cpu.stat", "throttled_usec", 1e-6),
                             (cgroup / "cpu" / "cpu.stat", "throttled_time", 1e-9)):
        try:
            for line in stat.read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value) * scale
        except (OSError, ValueError):
            continue
    return None


@dataclass(frozen=True)
class CpuBudget:
    logical: int           # CPUs in the affinity mask
    physical: int          # distinct cores among them
    quota: float | None    # the container's CPU quota, in CPUs

    @property
    def cores(self) -> int:
        """Cores a team of threads may keep busy: physical cores, within the quota."""
        limit = self.physical if self.quota is None else min(self.physical,
                                                             max(1, math.floor(self.quota)))
        return max(1, limit)

    def describe(self) -> str:
        parts = [f"{self.physical} physical core{'s' * (self.physical != 1)}"]
        if self.logical != self.physical:
            parts.append(f"of {self.logical} logical CPUs (SMT siblings not counted)")
        if self.quota is not None:
            parts.append(f"within a CPU quota of {self.quota:g}")
        return " ".join(parts)


def cpu_budget(cpus: set[int], sys_cpu: Path = SYS_CPU, cgroup: Path = CGROUP) -> CpuBudget:
    return CpuBudget(len(cpus), physical_cores(cpus, sys_cpu), cpu_quota(cgroup))
