"""The rules for device time, in one place: what counts as a GPU, a kernel's own time, and when
a call is overhead-bound. Trace analysis, the findings, the derived columns and the ladder all
ask here, so they cannot disagree.
"""
from __future__ import annotations

from suites.profiling.trace_events import Event, Trace

GPU = "cuda"
# Below this share of a call's span in device work (on a CPU: in compute ops), the device
# mostly waits for the host: the call is overhead-bound.
OVERHEAD_BUSY = 0.5


def on_gpu(device: str) -> bool:
    """A row's device (`cuda`, `cuda:1`) or a trace's mode: is the work on a GPU?"""
    return str(device).split(":")[0] == GPU


def trace_mode(trace: Trace) -> str:
    """`cuda` when the trace holds device activities (kernels, memcpy, memset), else `cpu`: a
    CPU-only trace's "kernels" are its compute ops."""
    return GPU if trace.device else "cpu"


def kernel_us(event: Event, gpu: bool) -> float:
    """A kernel's own time: its duration on a GPU; on a CPU a compute op's self time (children
    excluded; never below 0, which rounding of nested timestamps can give)."""
    return event.dur if gpu else max(0.0, event.self_us)


def overhead_bound(busy_frac: float) -> bool:
    return busy_frac < OVERHEAD_BUSY
