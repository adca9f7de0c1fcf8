"""What else the GPU was doing during a round, through NVML where `pynvml` is installed: other
processes using it, and its SM clock against the maximum. Every query returns None when NVML
cannot answer (no pynvml, no driver access): unknown, never guessed."""
from __future__ import annotations

import os


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

    def clock_ratio(self) -> float | None:
        if self.handle is None or not self.max_clock:
            return None
        try:
            clock = self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
        except Exception:
            return None
        return clock / self.max_clock
