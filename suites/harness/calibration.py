"""A probe of what the device can do: peak matmul FLOP/s per dtype and copy bandwidth. The runner
probes at the start and the end of a run and keeps the best of each; every row's `pct_peak` is
measured against these, not against a datasheet."""
from __future__ import annotations

import time

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
    device_type = torch.device(device).type
    best = 0.0
    for n in _MATMUL_SIZES[device_type]:
        a = torch.randn(n, n, device=device).to(DTYPES[dtype])
        b = torch.randn(n, n, device=device).to(DTYPES[dtype])
        seconds = _best_seconds(lambda: torch.mm(a, b), device_type, repeats)
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


def best_peaks(probes: list[dict]) -> dict:
    """The best of several probes, per dtype and for the copy: contention only ever slows a
    probe down, so the fastest reading is the closest to what the device can do."""
    best = dict(probes[0], matmul_tflops={})
    for probe in probes:
        for dtype, value in probe["matmul_tflops"].items():
            best["matmul_tflops"][dtype] = max(value, best["matmul_tflops"].get(dtype, 0.0))
        best["copy_gbps"] = max(best["copy_gbps"], probe["copy_gbps"])
    best["method"] = (f"{probes[0]['method']}; best of {len(probes)} probes "
                      "(start and end of the run)")
    return best


def calibrate(device: str, dtypes) -> dict:
    return {
        "matmul_tflops": {dtype: peak_matmul_tflops(device, dtype) for dtype in dtypes},
        "copy_gbps": peak_copy_gbps(device),
        "method": (f"best of 3 calls and of sizes {_MATMUL_SIZES[torch.device(device).type]}: "
                   "torch.mm per dtype; "
                   f"copy_ of {_COPY_BYTES[torch.device(device).type] // 2**20} MiB (read + write)"),
    }
