"""The rules for device time, in one place: what counts as a GPU, a kernel's own time, and when
a call is overhead-bound. Trace analysis, the findings, the derived columns and the ladder all
ask here, so they cannot disagree.
"""
from __future__ import annotations

import re

from suites.traces.events import Event, Trace
from suites.traces.gpu_specs import unnamed_device

GPU = "cuda"
# A trace from a machine with a device whose activities this tool does not read (a CUPTI
# range-profiler trace, another accelerator's categories, runtime calls with no activities):
# only the host side can be analysed, and it must never pass for a CPU run.
HOST_ONLY = "host-only"
# Categories of host-side events the analysis does not need; any other unread category is
# taken to be a device's, and reported as not analysed.
# (gpu_user_annotation repeats user annotations on the device's rows; cuda_sync marks waits
# there: neither is an activity.)
HOST_CATEGORIES = frozenset({"python_function", "overhead", "trace", "cpu_instant_event",
                             "fwdbwd", "ac2g", "flow", "python_overhead", "external_correlation",
                             "gpu_user_annotation", "cuda_sync"})
# Below this share of a call's span in device work (on a CPU: in compute ops), the device
# mostly waits for the host: the call is overhead-bound.
OVERHEAD_BUSY = 0.5


def on_gpu(device: str) -> bool:
    """A row's device (`cuda`, `cuda:1`) or a trace's mode: is the work on a GPU?"""
    return str(device).split(":")[0] == GPU


def trace_mode(trace: Trace) -> str:
    """`cuda` when the trace holds device activities (kernels, memcpy, memset; CUDA's or
    ROCm's); `host-only` when it shows a device but none of its activities (runtime calls,
    device properties, device categories this tool does not read); else `cpu`: a CPU-only
    trace's "kernels" are its compute ops."""
    if trace.device:
        return GPU
    if (trace.runtime or unread_device_categories(trace) or _device_properties(trace.meta)
            or gpu_job_hint(trace)):
        return HOST_ONLY
    return "cpu"


# Names only a GPU job's host side records: its ops (the fused attention kernels' wrappers, cuDNN,
# stream handling) and its collectives. One reading per job: a trace of a GPU job recorded
# without its device side reads as one with device metadata does, whatever metadata was kept.
_GPU_OP_NAMES = re.compile(r"cuda|cudnn|nccl|rccl|_flash_attention|_efficient_attention|"
                           r"record_stream", re.IGNORECASE)


def gpu_job_hint(trace: Trace) -> str:
    """Why the trace is a GPU job's though it holds no device activity, or ""."""
    info = trace.meta.get("distributedInfo")
    backend = str(info.get("backend", "")) if isinstance(info, dict) else ""
    if re.search(r"nccl|xccl|hccl|mtia", backend, re.I):  # an accelerator's collectives
        return f"its process group's backend is {info['backend']}"
    for event in trace.cpu_ops:
        if _GPU_OP_NAMES.search(event.name):
            return f"it runs {event.name}"
    return ""


def unread_device_categories(trace: Trace) -> dict[str, int]:
    """category -> events of categories that are not host-side and that the analysis does not
    read: another accelerator's activities, CUPTI range-profiler ranges, cuda_sync events."""
    return {cat: n for cat, n in trace.other_categories.items() if cat not in HOST_CATEGORIES}


def device_name(meta: dict) -> str:
    """The trace's (first) device's name from its deviceProperties, "" where none is given; a
    device listed without a name is said by its version and size (gpu_specs.unnamed_device)."""
    props = meta.get("deviceProperties")
    if isinstance(props, dict):  # some writers give one object, not a list
        props = [props]
    first = props[0] if isinstance(props, list) and props else None
    if not isinstance(first, dict):
        return ""
    name = str(first.get("name") or "").strip()
    return name or unnamed_device(first)


def on_rocm(trace: Trace) -> bool:
    """Whether the trace's runtime calls are HIP's (hipLaunchKernel...): advice then names ROCm's
    forms (HIP graphs, MIOpen's switches)."""
    return any(c.name.startswith("hip") for c in trace.runtime[:50])


def job_line(meta: dict) -> str:
    """The process's place in a distributed job, from the trace's distributedInfo: "rank 0 of 8
    (nccl)"; "" for a job of one process, or where the trace does not say."""
    info = meta.get("distributedInfo")
    if not isinstance(info, dict):
        return ""
    rank, size = info.get("rank"), info.get("world_size")
    if type(rank) is not int or type(size) is not int or size < 2:
        return ""
    backend = str(info.get("backend") or "").strip()
    return f"rank {rank} of {size}" + (f" ({backend})" if backend else "")


def _device_properties(meta: dict) -> bool:
    props = meta.get("deviceProperties")
    return bool(props) and isinstance(props, (list, dict))


def kernel_us(event: Event, gpu: bool) -> float:
    """A kernel's own time: its duration on a GPU; on a CPU a compute op's self time (children
    excluded; never below 0, which rounding of nested timestamps can give)."""
    return event.dur if gpu else max(0.0, event.self_us)
