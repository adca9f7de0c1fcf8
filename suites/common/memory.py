"""What memory a case may take on a device now: free GPU memory (with what torch's allocator
holds cached), or on a CPU MemAvailable, capped by the container's cgroup limit. Shared by the
harness's memory probe (suites/harness/memory_probe.py) and `--suggest`'s replay
(suites/suggest/replay.py), which must not allocate a shape past it."""
from __future__ import annotations

import os
from pathlib import Path

import torch

MEMINFO = Path("/proc/meminfo")
CGROUP = Path("/sys/fs/cgroup")


def _meminfo_available(path: Path = MEMINFO) -> int | None:
    try:
        for line in path.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_room(root: Path = CGROUP) -> int | None:
    """What the container's memory limit leaves (limit - usage), or None without a limit."""
    for limit_file, usage_file in (("memory.max", "memory.current"),  # cgroup v2
                                   ("memory/memory.limit_in_bytes",
                                    "memory/memory.usage_in_bytes")):  # v1
        try:
            limit = (root / limit_file).read_text().strip()
            usage = int((root / usage_file).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit == "max" or not limit.isdigit() or int(limit) >= 2**60:  # v1's "no limit"
            return None
        return max(0, int(limit) - usage)
    return None


def available_memory(device: str) -> tuple[int, str]:
    """(bytes, what they are) a case may take on `device` now."""
    if torch.device(device).type == "cuda":
        free, _ = torch.cuda.mem_get_info(torch.device(device))
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return free + cached, "free on the GPU"
    room, what = _meminfo_available(), "available (MemAvailable)"
    if room is None:
        room = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        what = "of physical memory (no MemAvailable)"
    cgroup = _cgroup_room()
    if cgroup is not None and cgroup < room:
        room, what = cgroup, "left under the container's memory limit"
    return room, what
