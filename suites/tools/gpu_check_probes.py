"""gpu_check section `environment`: the measurements a first contact with a GPU should make,
each a few seconds at most, before anything is timed for a result.

- `cupti probe`: a tiny op's host time per call before and after one empty profiler session.
  With CUPTI left attached after a session (TEARDOWN_CUPTI=0) every later launch pays its
  callbacks; the harness keeps it attached only for runs with a variant that replays a CUDA
  graph (suites/harness/cuda_graphs.py), and this row says what that costs on this machine.
- `sm clock`: the SM clock after a tiny call and after a large one (a GPU idles down between
  calls and boosts under load: a small call timed cold runs at the lower clock).
- `l2 flush kinds`: one small memory-bound kernel timed after no flush, after a flush that
  writes a buffer larger than L2 (its dirty lines are written back during the next kernel) and
  after one that reads it (clean lines: what the harness's flush does, suites/harness/timing.py).
"""
from __future__ import annotations

import os
import statistics
import time

import torch

PROBE_CALLS = 200       # tiny ops per side of the CUPTI probe
FLUSH_PAIRS = 30        # timed kernels per flush kind
_L2_BYTES = 256 * 1024 * 1024


def _host_us_per_call(call, n: int) -> float:
    """Host time of `n` calls, us each, the queue drained before and after (median of 3)."""
    times = []
    for _ in range(3):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            call()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(times)


def cupti_probe() -> dict:
    """A tiny op before and after one empty profiler session, host us per call."""
    from torch.profiler import ProfilerActivity, profile

    x = torch.zeros(1, device="cuda")
    call = lambda: x.add_(1.0)  # noqa: E731
    _host_us_per_call(call, 20)  # warm: the first launches load the module
    before = _host_us_per_call(call, PROBE_CALLS)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        pass
    after = _host_us_per_call(call, PROBE_CALLS)
    return {"before_us": round(before, 3), "after_us": round(after, 3),
            "after_over_before": round(after / before, 3) if before > 0 else None,
            "TEARDOWN_CUPTI": os.environ.get("TEARDOWN_CUPTI")}


def sm_clocks() -> dict:
    """The SM clock (NVML) after a tiny call and after about a second of large GEMMs."""
    from suites.harness.gpu_state import GpuState

    state = GpuState(torch.cuda.current_device())
    if state.handle is None:
        return {"status": "skipped", "error": "NVML not available (pip install nvidia-ml-py)"}
    x = torch.zeros(1, device="cuda")
    time.sleep(0.5)  # idle first: the clock a lone small call meets
    x.add_(1.0)
    torch.cuda.synchronize()
    tiny = state.sm_clock_mhz()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    deadline = time.perf_counter() + 1.0
    while time.perf_counter() < deadline:
        a @ a
        torch.cuda.synchronize()
    large = state.sm_clock_mhz()
    return {"after_tiny_mhz": tiny, "after_large_mhz": large, "max_mhz": state.max_clock}


def _kernel_us_after(flush, kernel) -> float:
    """Median event time of `kernel`, each run right after `flush` (outside the timed pair)."""
    times = []
    for _ in range(FLUSH_PAIRS):
        if flush is not None:
            flush()
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        kernel()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def flush_kinds() -> dict:
    """A 16 MB copy (fits in an H100/H200's L2) after each kind of flush, us."""
    src = torch.randn(4 * 1024 * 1024, device="cuda")
    dst = torch.empty_like(src)
    kernel = lambda: dst.copy_(src)  # noqa: E731
    buffer = torch.zeros(_L2_BYTES // 4, device="cuda")
    total = torch.zeros((), device="cuda")
    kinds = {"none": None, "write (zero_)": buffer.zero_,
             "read (sum)": lambda: torch.sum(buffer, out=total)}
    kernel()
    return {f"{name} us": round(_kernel_us_after(flush, kernel), 3)
            for name, flush in kinds.items()}


def items(cuda: bool):
    """(name, work) pairs of the probes; on a CPU each is a skipped row."""
    for name, work in (("cupti probe", cupti_probe), ("sm clock", sm_clocks),
                       ("l2 flush kinds", flush_kinds)):
        if cuda:
            yield name, work
        else:
            yield name, lambda: {"status": "skipped", "error": "no CUDA"}
