"""The launch floors a run measures once, at its start (env.json `launch_floors`), so a finding
can say how far a call's exposed overhead is from the cheapest launch on this machine and
build: the eager dispatcher's floor (an in-place add on a one-element tensor) and, on CUDA with
Triton, an empty Triton kernel through the JIT's dispatch (kernels/triton/nop.py).

Cheap on purpose, a few tens of milliseconds (plus, on CUDA, the empty kernel's first compile
if Triton's cache lacks it): calls back to back in blocks, the median block. Back to back is
what each op of a call adds to its host path, so the floor reads against exposed overhead; the
`launch` suite times every path properly, in rounds with intervals, one call at a time.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

BLOCKS = 15
CALLS = 200  # a block: long enough for perf_counter_ns and a sync to vanish in it
EAGER_METHOD = (f"x.add_(1) on a one-element float32 tensor, {CALLS} calls back to back a "
                f"block, the median of {BLOCKS} blocks (perf_counter_ns; on CUDA each block ends "
                "in a synchronize): the host cost of one op through the dispatcher")
PROFILER_METHOD = (f"the same x.add_(1) under torch.profiler as the profiling pass records (CPU "
                   f"activity, shapes, and on a CPU memory), {CALLS} calls back to back a block, "
                   f"the median of {BLOCKS} blocks; extra_us is that minus the eager floor: "
                   "what the profiler adds to each op it records")
TRITON_METHOD = (f"an empty Triton kernel with one pointer argument launched by kernel[grid](x), "
                 f"{CALLS} launches back to back a block, the median of {BLOCKS} blocks, each "
                 "ending in a synchronize: the host cost of one launch through the JIT")


def _per_call_us(call: Callable[[], object], sync: Callable[[], None]) -> dict:
    """Microseconds a call: the median block, with the fastest and slowest beside it."""
    for _ in range(CALLS):  # warm: caches, the allocator, branch predictors
        call()
    sync()
    blocks = []
    for _ in range(BLOCKS):
        start = time.perf_counter_ns()
        for _ in range(CALLS):
            call()
        sync()
        blocks.append((time.perf_counter_ns() - start) / CALLS / 1e3)
    return {"us": statistics.median(blocks), "min_us": min(blocks), "max_us": max(blocks),
            "blocks": BLOCKS, "calls_per_block": CALLS}


def _triton_floor(x: torch.Tensor, sync: Callable[[], None]) -> dict:
    from kernels.triton.runtime import kernels_interpreted, triton_installed

    if not triton_installed():
        return {"skipped": "triton is not installed"}
    if kernels_interpreted():
        return {"skipped": "TRITON_INTERPRET=1: Triton kernels run interpreted, never timed"}
    from kernels.triton.nop import jit_launch

    start = time.perf_counter()
    call = jit_launch(x)  # compiles the empty kernel (or loads it from Triton's cache)
    sync()
    first_ms = (time.perf_counter() - start) * 1e3
    return {**_per_call_us(call, sync), "first_launch_ms": first_ms, "method": TRITON_METHOD}


def _profiler_floor(x: torch.Tensor, sync: Callable[[], None], eager_us: float) -> dict:
    """What the profiler adds to one recorded op: the profile guard's allowance for a profiled
    call that runs longer than its timed one (profile_guard.py)."""
    from torch.profiler import ProfilerActivity, profile

    from suites.harness.profile_pass import native_stderr_captured

    with native_stderr_captured(), profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                                           profile_memory=x.device.type == "cpu"):
        found = _per_call_us(lambda: x.add_(1), sync)
    return {**found, "extra_us": max(0.0, found["us"] - eager_us), "method": PROFILER_METHOD}


def measure_floors(device: str, profiled: bool = True) -> dict:
    """{floor name: {us, min_us, max_us, ..., method}} or {floor name: {skipped: reason}}; the
    profiler's floor only for a run that profiles (the profiler's first start costs seconds)."""
    on_cuda = torch.device(device).type == "cuda"
    sync = torch.cuda.synchronize if on_cuda else (lambda: None)
    x = torch.zeros(1, device=device)
    with torch.no_grad():
        floors = {"eager_dispatch": {**_per_call_us(lambda: x.add_(1), sync),
                                     "method": EAGER_METHOD}}
        floors["profiler_op"] = (_profiler_floor(x, sync, floors["eager_dispatch"]["us"])
                                 if profiled else {"skipped": "the run does not profile"})
        floors["triton_launch"] = _triton_floor(x, sync) if on_cuda else {
            "skipped": "a CPU run launches no Triton kernel (Triton only interprets there)"}
    return floors


def recorded_floors(device: str, profiled: bool = True) -> dict:
    """measure_floors for env.json: a probe that fails is recorded as its error, never raised,
    since the run's rows matter more than a reference point for its findings."""
    try:
        return measure_floors(device, profiled)
    except Exception as exc:
        return {"error": f"the launch floor probe failed: {type(exc).__name__}: {exc}"}
