"""The rules for device time, in one place: what counts as a GPU, a kernel's own time, and when
a call is overhead-bound. Trace analysis, the findings, the derived columns and the ladder all
ask here, so they cannot disagree.
"""
from __future__ import annotations

import re

from suites.traces.events import Event, Trace
from suites.traces.gpu_specs import unnamed_device
from suites.traces.op_kinds import is_gpu_op_name, names_cpu_kernel

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
    device categories this tool does not read, an op only a GPU job runs, device properties);
    else `cpu`: a CPU-only trace's "kernels" are its compute ops.

    Device properties alone say only that the machine has a GPU: Kineto built with CUPTI writes
    them whatever activities were recorded. So an op that names its CPU kernel (CPU SDPA's
    `_for_cpu`, Inductor's C++ kernels) outweighs them: the work ran on the CPU, as in a run
    with device=cpu on a GPU machine; without such an op the trace stays host-only."""
    if trace.device:
        return GPU
    if trace.runtime or unread_device_categories(trace) or gpu_job_hint(trace):
        return HOST_ONLY
    if _device_properties(trace.meta) and not cpu_kernel_hint(trace):
        return HOST_ONLY
    return "cpu"


def cpu_kernel_hint(trace: Trace) -> str:
    """The first op that names its CPU kernel (op_kinds.names_cpu_kernel), or ""."""
    for event in trace.cpu_ops:
        if names_cpu_kernel(event.name):
            return event.name
    return ""


def gpu_job_hint(trace: Trace) -> str:
    """Why the trace is a GPU job's though it holds no device activity, or "": its process
    group's backend, or an op only a GPU job's host side runs (op_kinds.is_gpu_op_name; never
    one a CPU computes, as CPU SDPA's aten::_scaled_dot_product_flash_attention_for_cpu). One
    reading per job: a trace of a GPU job recorded without its device side reads as one with
    device metadata does, whatever metadata was kept."""
    info = trace.meta.get("distributedInfo")
    backend = str(info.get("backend", "")) if isinstance(info, dict) else ""
    if re.search(r"nccl|xccl|hccl|mtia", backend, re.I):  # an accelerator's collectives
        return f"its process group's backend is {info['backend']}"
    for event in trace.cpu_ops:
        if is_gpu_op_name(event.name):
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
