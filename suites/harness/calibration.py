"""A probe of what the device can do: peak matmul FLOP/s per dtype and copy bandwidth. The runner
probes at the start and the end of a run and keeps the best of each; every row's `pct_peak` is
measured against these, not against a datasheet.

On a CPU the copy is probed at each cache level too (a working set of half the level: source
and destination both fit), so a row whose working set fits in a cache is judged against that
cache's bandwidth, not DRAM's (a norm at 229% of a DRAM roof was running from L2). On a GPU the
timing flushes L2 before every call by default, so DRAM's roof is the right one there."""
from __future__ import annotations

import time
from pathlib import Path

import torch

from kernels.base import DTYPES
from suites.harness.timing import sync

# Large enough to reach the device's steady state, small enough to take about a second; the
# best of several sizes, since one size can sit on a slow tile or blocking boundary (on a CPU a
# 512 matmul that stays in cache can beat the larger ones, and rows would run above the peak).
_MATMUL_SIZES = {"cpu": (512, 1024, 2048), "cuda": (4096, 8192)}
_COPY_BYTES = {"cpu": 128 * 2**20, "cuda": 2 * 2**30}


def _best_seconds(fn, device_type: str, repeats: int) -> float:
    fn()  # warm-up: library handles, page faults
    best = float("inf")
    for _ in range(repeats):
        sync(device_type)
        start = time.perf_counter()
        fn()
        sync(device_type)
        best = min(best, time.perf_counter() - start)
    return best


def peak_matmul_tflops(device: str, dtype: str, repeats: int = 3) -> float:
    """The best of torch.mm and F.linear at each size: the two can take different libraries.
    On a CPU without bf16 instructions (AVX2) torch.mm in bf16 ran at 1.2 GFLOP/s and F.linear
    at 8-9 (oneDNN), so a probe of torch.mm alone put the bf16 block rows at 700-760% of it."""
    device_type = torch.device(device).type
    best = 0.0
    for n in _MATMUL_SIZES[device_type]:
        a = torch.randn(n, n, device=device).to(DTYPES[dtype])
        b = torch.randn(n, n, device=device).to(DTYPES[dtype])
        for product in (lambda: torch.mm(a, b), lambda: torch.nn.functional.linear(a, b)):
            seconds = _best_seconds(product, device_type, repeats)
            best = max(best, 2.0 * n**3 / seconds / 1e12)
    return best


def peak_copy_gbps(device: str, repeats: int = 3) -> float:
    """Bytes read plus bytes written per second by a large device-to-device copy."""
    device_type = torch.device(device).type
    numel = _COPY_BYTES[device_type] // 4
    src = torch.randn(numel, device=device)
    dst = torch.empty_like(src)
    seconds = _best_seconds(lambda: dst.copy_(src), device_type, repeats)
    return 2.0 * src.nbytes / seconds / 1e9


_SYS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")
_PROBE_S = 0.002  # each timed repeat of a small copy loops this long at least


def cache_sizes(root: Path = _SYS_CACHE) -> dict[str, int]:
    """{"L1": bytes, "L2": ..., "L3": ...}: the data and unified caches of CPU 0 (sysfs)."""
    sizes = {}
    for index in sorted(root.glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or not text[:-1].isdigit():
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1], 1)
        sizes[f"L{level}"] = int(text[:-1]) * scale if scale != 1 else int(text)
    return sizes


def copy_gbps_at(working_set: int, repeats: int = 3) -> float:
    """Read + write GB/s of a CPU copy whose source and destination together are `working_set`
    bytes, looped so each timing lasts a couple of milliseconds."""
    src = torch.randn(max(256, working_set // 8))
    dst = torch.empty_like(src)
    start = time.perf_counter()
    dst.copy_(src)
    loops = max(1, int(_PROBE_S / max(time.perf_counter() - start, 1e-7)))

    def loop():
        for _ in range(loops):
            dst.copy_(src)
    return 2.0 * src.nbytes * loops / _best_seconds(loop, "cpu", repeats) / 1e9


def cache_copy_gbps(sizes: dict[str, int] | None = None) -> list[list[float]]:
    """[[largest working set, GB/s], ...] per cache level from L2 up, smallest first (CPU). Not
    L1: a copy that fits it takes less time than torch's dispatch of it, so the probe would
    time the dispatch (and calls that small are overhead-bound whatever their roof)."""
    sizes = cache_sizes() if sizes is None else sizes
    return [[size // 2, copy_gbps_at(size // 2)] for level, size in sorted(sizes.items())
            if level != "L1"]


def best_peaks(probes: list[dict]) -> dict:
    """The best of several probes, per dtype and for the copy: contention only ever slows a
    probe down, so the fastest reading is the closest to what the device can do."""
    best = dict(probes[0], matmul_tflops={})
    for probe in probes:
        for dtype, value in probe["matmul_tflops"].items():
            best["matmul_tflops"][dtype] = max(value, best["matmul_tflops"].get(dtype, 0.0))
        best["copy_gbps"] = max(best["copy_gbps"], probe["copy_gbps"])
        if probe.get("cache_copy_gbps") and best.get("cache_copy_gbps"):
            best["cache_copy_gbps"] = [[fits, max(a, b)] for (fits, a), (_, b) in
                                       zip(best["cache_copy_gbps"], probe["cache_copy_gbps"])]
    best["method"] = (f"{probes[0]['method']}; best of {len(probes)} probes "
                      "(start and end of the run)")
    return best


# A half-precision product can always be computed in float32 (a CPU without bf16 instructions
# converts and runs fp32 kernels: bf16 flash attention here ran at 37 GFLOP/s against 9 for the
# best bf16 GEMM), so the float32 peak bounds them from below.
_HALF = ("bfloat16", "float16")


def matmul_peaks(device: str, dtypes) -> dict[str, float]:
    """Per dtype, its probed peak; a half type's at least float32's."""
    peaks = {dtype: peak_matmul_tflops(device, dtype) for dtype in dtypes}
    if any(d in _HALF for d in dtypes):
        fp32 = peaks.get("float32") or peak_matmul_tflops(device, "float32")
        peaks.update({d: max(peaks[d], fp32) for d in dtypes if d in _HALF})
    return peaks


def calibrate(device: str, dtypes) -> dict:
    cpu = torch.device(device).type == "cpu"
    return {
        "matmul_tflops": matmul_peaks(device, dtypes),
        "copy_gbps": peak_copy_gbps(device),
        **({"cache_copy_gbps": cache_copy_gbps()} if cpu else {}),
        "method": (f"best of 3 calls and of sizes {_MATMUL_SIZES[torch.device(device).type]}: "
                   "torch.mm and F.linear per dtype, a half type at least float32's; "
                   f"copy_ of {_COPY_BYTES[torch.device(device).type] // 2**20} MiB (read + write)"),
    }
