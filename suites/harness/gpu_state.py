"""What else the GPU was doing during a round, through NVML where `pynvml` is installed: other
processes using it, its SM clock against the maximum, and what holds the clock down (NVML's
clock event reasons: a power cap, thermal slowdown, a hardware slowdown or power brake). Every
query returns None when NVML cannot answer (no pynvml, no driver access): unknown, never
guessed."""
from __future__ import annotations

import os

# NVML's clock event (throttle) reason bits (nvml.h, nvmlClocksEventReason*), by name. The GPU
# idling is not a limit: a share's last reading comes after its calls finished.
_REASONS = {0x2: "application clocks setting", 0x4: "power cap (software)",
            0x8: "hardware slowdown", 0x10: "sync boost", 0x20: "thermal slowdown (software)",
            0x40: "thermal slowdown (hardware)", 0x80: "power brake (hardware)",
            0x100: "display clock setting"}
# The limits that are the machine's state, not the variant's load: cooling, the board's power
# supply, a hardware protection. A power cap reached by the variant's own work (a dense GEMM
# draws the board to its limit) is named but is what that variant costs.
MACHINE_LIMITS = frozenset({0x8, 0x20, 0x40, 0x80})


def clock_limits(mask: int) -> tuple[str, ...]:
    """The names of the reasons set in an NVML reason mask, in bit order."""
    return tuple(name for bit, name in _REASONS.items() if mask & bit)


def machine_limits(mask: int) -> tuple[str, ...]:
    return tuple(_REASONS[bit] for bit in sorted(MACHINE_LIMITS) if mask & bit)


def _own_handle(nvml, device_index: int):
    """The NVML handle of torch's device `device_index`. NVML numbers GPUs by PCI order and
    ignores CUDA_VISIBLE_DEVICES, so the device is found by its UUID (or PCI bus id) first."""
    import torch

    props = torch.cuda.get_device_properties(device_index)
    uuid = getattr(props, "uuid", None)
    for key in ([str(uuid), f"GPU-{uuid}"] if uuid is not None else []):
        try:
            return nvml.nvmlDeviceGetHandleByUUID(key)
        except Exception:
            continue
    bus = getattr(props, "pci_bus_id", None)
    if bus is not None:
        domain, device = getattr(props, "pci_domain_id", 0), getattr(props, "pci_device_id", 0)
        try:
            return nvml.nvmlDeviceGetHandleByPciBusId(f"{domain:08x}:{bus:02x}:{device:02x}.0")
        except Exception:
            pass
    return nvml.nvmlDeviceGetHandleByIndex(device_index)


def count_others(pids: set[int], busy: set[int] | None, own: int) -> int:
    """Other processes that used the GPU. In a container NVML reports host PIDs, so this
    process's own PID is not among them: then one of them is this process and is not counted.
    `busy`: the PIDs that used the SMs lately (None when NVML cannot say): an idle context
    (an open notebook) is not contention."""
    counted = busy if busy is not None else pids
    others = len(counted - {own})
    if own not in pids and pids and (busy is None or counted):
        others -= 1
    return max(0, others)


class GpuState:
    def __init__(self, device_index: int):
        self.handle, self.last_seen = None, 0
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = _own_handle(pynvml, device_index)
            self.max_clock = pynvml.nvmlDeviceGetMaxClockInfo(self.handle, pynvml.NVML_CLOCK_SM)
        except Exception:
            self.handle = None

    def _busy_pids(self) -> set[int] | None:
        try:
            samples = self.nvml.nvmlDeviceGetProcessUtilization(self.handle, self.last_seen)
        except Exception:  # not supported on this GPU or driver, or no sample yet
            return None
        if samples:
            self.last_seen = max(s.timeStamp for s in samples)
        return {s.pid for s in samples if s.smUtil > 0}

    def other_processes(self) -> int | None:
        if self.handle is None:
            return None
        try:
            procs = self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)
        except Exception:
            return None
        return count_others({p.pid for p in procs}, self._busy_pids(), os.getpid())

    def sm_clock_mhz(self) -> int | None:
        if self.handle is None:
            return None
        try:
            return self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
        except Exception:
            return None

    def clock_ratio(self, clock: int | None) -> float | None:
        return clock / self.max_clock if clock is not None and self.max_clock else None

    def reason_mask(self) -> int | None:
        """The clock event reasons in force now (newer NVML names them clocks event reasons,
        older ones throttle reasons: the same bits)."""
        if self.handle is None:
            return None
        for name in ("nvmlDeviceGetCurrentClocksEventReasons",
                     "nvmlDeviceGetCurrentClocksThrottleReasons"):
            query = getattr(self.nvml, name, None)
            if query is None:
                continue
            try:
                return int(query(self.handle))
            except Exception:  # named in the binding, missing in the driver: try the older one
                continue
        return None
