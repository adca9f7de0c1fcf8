"""The timing pass: warm-up, then one sample per call until the budget and the minimum count are
met. Never run under the profiler. Raw samples are kept; the summary is median, p10, p90, min."""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from suites.results.row import TimingStats

# Bigger than the L2 of any current GPU (H100/H200: 50-60 MB), so zeroing it evicts the inputs.
_L2_FLUSH_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class TimingSpec:
    preset: str
    budget_s: float  # keep sampling until this much time is spent...
    min_samples: int  # ...and at least this many samples are taken
    max_samples: int
    warmup_calls: int
    compile_warmup_calls: int  # compile variants settle after a few calls (guards, autotune)
    l2_flush: bool  # CUDA: flush L2 between calls, so each call starts cold
    threads: int  # CPU threads, set explicitly (torch.utils.benchmark defaults to 1)


def summarize(samples_us: list[float], cache: str = "n/a") -> TimingStats:
    """Median, p10, p90, min and the spread (IQR / median) of per-call samples."""
    t = torch.tensor(samples_us, dtype=torch.float64)
    median, p25, p75 = (float(t.quantile(q)) for q in (0.5, 0.25, 0.75))
    return TimingStats(
        n_samples=len(samples_us), median_us=median,
        p10_us=float(t.quantile(0.1)), p90_us=float(t.quantile(0.9)), min_us=float(t.min()),
        iqr_rel=(p75 - p25) / median if median else float("nan"), cache=cache,
    )


def sync(device_type: str) -> None:
    if device_type == "cuda":
        torch.cuda.synchronize()


def time_first_call(call, device_type: str) -> float:
    """Milliseconds of the first call: compile, JIT, autotune, allocator and cache warm-up."""
    sync(device_type)
    start = time.perf_counter()
    call()
    sync(device_type)
    return (time.perf_counter() - start) * 1e3


def _enough(n: int, elapsed_s: float, spec: TimingSpec) -> bool:
    return n >= spec.max_samples or (n >= spec.min_samples and elapsed_s >= spec.budget_s)


def _cpu_samples(call, spec: TimingSpec) -> list[float]:
    samples: list[float] = []
    start = time.perf_counter_ns()
    now = start
    while not _enough(len(samples), (now - start) / 1e9, spec):
        t0 = time.perf_counter_ns()
        call()
        now = time.perf_counter_ns()
        samples.append((now - t0) / 1e3)
    return samples


def l2_flusher(spec: TimingSpec, device_type: str):
    """A call that evicts L2 (zeroing a buffer larger than any current L2), or None."""
    if device_type != "cuda" or not spec.l2_flush:
        return None
    buffer = torch.empty(_L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    return buffer.zero_


def _cuda_samples(call, spec: TimingSpec) -> list[float]:
    flush = l2_flusher(spec, "cuda")
    # Estimate the per-call time from a few calls, then take as many as the budget allows.
    probe = _cuda_batch(call, 3, flush)
    per_call_s = max(sorted(probe)[1] / 1e6, 1e-6)
    n = int(min(spec.max_samples, max(spec.min_samples, spec.budget_s / per_call_s)))
    return _cuda_batch(call, n, flush)


def _cuda_batch(call, n: int, flush) -> list[float]:
    """Latency of one call on an idle GPU, host work included.

    The queue is drained before each call: otherwise the 256 MB flush (tens of microseconds of
    GPU time) would still be running when the call's kernels are queued, and the events would
    time only the kernels, hiding the Python, dispatch and launch cost that small calls are
    made of. Elapsed times are read after one final sync.
    """
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for start, end in zip(starts, ends):
        if flush is not None:
            flush()  # outside the timed pair: evicts the previous call's data from L2
        torch.cuda.synchronize()
        start.record()
        call()
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]


def sample_calls(call, device_type: str, spec: TimingSpec, warmup_calls: int) -> list[float]:
    """Per-call samples in microseconds, after `warmup_calls` untimed calls."""
    for _ in range(warmup_calls):
        call()
    sync(device_type)
    if device_type == "cuda":
        return _cuda_samples(call, spec)
    return _cpu_samples(call, spec)
