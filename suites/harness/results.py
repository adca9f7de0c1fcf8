"""The tidy tables of a run: one row per (case, variant) with derived columns, written as CSV.

Conventions (stated in the report): times are per call in microseconds; `tflops` and `gbps`
come from the median time and the op's FLOP and byte model; `pct_peak` is the achieved FLOP/s
over what the roofline allows at this arithmetic intensity, min(peak FLOP/s, intensity x peak
bandwidth), with both peaks measured on this machine (env.json).
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from kernels.base import Case, Op

NAN = float("nan")

LEADING = ["suite", "op", "case_id", "variant", "family", "dtype", "device"]
METRICS = [
    "status", "reason", "threads", "cache", "n_samples", "median_us", "p10_us", "p90_us", "min_us",
    "iqr_rel", "first_call_ms", "compile_ms", "compile_cache", "speedup", "host_us", "device_us",
    "exposed_overhead_us", "idle_frac", "n_kernels", "launch_api_us", "launch_delay_us",
    "n_cpu_ops", "backend", "flops", "bytes", "bytes_unfused", "bytes_moved", "intensity", "tflops",
    "gbps", "pct_peak", "roofline_bound", "max_abs_err", "rel_err", "scaled_err", "tolerance",
    "trace", "table",
]


def base_row(suite: str, case: Case, variant, op: Op) -> dict:
    row = {"suite": suite, "op": case.op, "case_id": case.id, "variant": variant.name,
           "family": variant.family, "dtype": case.dtype, "device": case.device}
    row.update(case.sizes)  # every parameter is its own column
    row.update(flops=op.flops(case), bytes=op.bytes_ideal(case),
               bytes_unfused=op.bytes_unfused(case), bytes_moved=op.bytes_moved(case, variant.name))
    row["intensity"] = row["flops"] / row["bytes"]
    return row


def _roofline(row: dict, peaks: dict | None) -> None:
    median = row.get("median_us", NAN)
    if not median or math.isnan(median):
        return
    seconds = median * 1e-6
    row["tflops"] = row["flops"] / seconds / 1e12
    row["gbps"] = row["bytes"] / seconds / 1e9
    if not peaks:
        return
    peak_tflops = peaks["matmul_tflops"].get(row["dtype"], NAN)
    memory_tflops = row["intensity"] * peaks["copy_gbps"] / 1e3
    row["pct_peak"] = 100.0 * row["tflops"] / min(peak_tflops, memory_tflops)
    row["roofline_bound"] = "compute" if memory_tflops >= peak_tflops else "memory"


def exposed_overhead_us(row: dict) -> float:
    """Time per call in which the device does no work for the call.

    GPU: median - device time (CUPTI's kernel timestamps are not slowed by the profiler).
    CPU: the profiler adds a microsecond or two to every op, which would swamp a 10 us call, so
    the profiled share of compute, device_us / host_us, is applied to the unprofiled median.
    """
    median, device, host = (row.get(k, NAN) for k in ("median_us", "device_us", "host_us"))
    if any(v is None or math.isnan(v) for v in (median, device, host)):
        return NAN
    if row.get("device", "").startswith("cuda"):
        return max(0.0, median - device)
    return median * max(0.0, 1.0 - device / host) if host > 0 else NAN


def derive(row: dict, peaks: dict | None) -> None:
    """Throughput, roofline share, exposed overhead and compile cost of one row, in place (the
    findings read them, so they are set before the findings run)."""
    _roofline(row, peaks)
    median = row.get("median_us", NAN)
    row["exposed_overhead_us"] = exposed_overhead_us(row)
    if row.get("family") == "compile" and "first_call_ms" in row and not math.isnan(median):
        row["compile_ms"] = max(0.0, row["first_call_ms"] - median / 1e3)


def add_speedups(rows: list[dict], baseline: str) -> None:
    """Baseline median / variant median for the same case, in place."""
    base_median = {r["case_id"]: r.get("median_us", NAN) for r in rows if r["variant"] == baseline}
    for row in rows:
        median = row.get("median_us", NAN)
        row["speedup"] = base_median.get(row["case_id"], NAN) / median if median else NAN


def ordered_frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    params = [c for c in frame.columns if c not in LEADING and c not in METRICS]
    columns = LEADING + params + METRICS
    for column in columns:
        if column not in frame.columns:
            frame[column] = NAN
    return frame[columns]


def write_tables(out_dir: Path, rows, kernel_rows, sample_rows, finding_rows) -> pd.DataFrame:
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = ordered_frame(rows)
    frame.to_csv(out_dir / "measurements.csv", index=False)
    kernel_columns = ["suite", "case_id", "variant", "dtype", "kernel", "kind", "calls_per_call",
                      "total_us_per_call", "mean_us"]
    pd.DataFrame(kernel_rows, columns=kernel_columns).to_csv(out_dir / "kernels.csv", index=False)
    pd.DataFrame(sample_rows, columns=["suite", "case_id", "variant", "sample", "time_us"]).to_csv(
        out_dir / "samples.csv", index=False)
    finding_columns = ["suite", "case_id", "variant", "code", "severity", "statement", "evidence"]
    pd.DataFrame(finding_rows, columns=finding_columns).to_csv(out_dir / "findings.csv", index=False)
    return frame
