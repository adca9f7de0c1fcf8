"""gpu_check section `suites`: the harness end to end, in this process, every suite at its
YAML's reference shape (the series' shape) in bf16 with default timing; then, while the
section's time lasts, the other points the series looked at (EXTRA). Each run's rows become
JSON lines, with the series' structural facts (kernels per call) beside the measured ones.

A run spec is composed from conf/ (suites/config/compose.py, as run_suite.py does) and run by
suites.harness.runner.run, which holds the device lock and writes the run folder as
run_suite.py's runs do; `reproduce` on each run's row is the run_suite.py command for the same
config. The section's deadline stops a run as Ctrl-C does: after the case in flight, with its
rows on disk (harness/stopping.py), and the rows not measured are one `deadline` row.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from suites.harness import case_clock
from suites.harness.runner import run
from suites.harness.stopping import Interrupted, signals_stop_runs
from suites.harness.variant_passes import short_error
from suites.config.compose import compose, override_args, resolved
from suites.results.reader import RunFolder, read_state
from suites.results.tables import MEASUREMENTS_CSV
from suites.config.run_spec import build_run_spec
from suites.config.suite_table import suites

SECTION = "suites"
# Beyond each suite's reference shape in bf16: where the series looked at more (matmul_add's
# overhead-bound end, fp32, the LLM widths of the norms), the reference case left out.
EXTRA = (
    ("matmul_add-small", "matmul_add", {"suite.sizes": [64, 1024],
                                        "suite.dtypes": ["bfloat16", "float32"]}),
    ("matmul_add-fp32", "matmul_add", {"suite.sizes": [4096], "suite.dtypes": ["float32"]}),
    ("linear-fp32", "linear", {"suite.dtypes": ["float32"]}),
    ("norm-more", "norm", {"suite.axes": [{"T": [8192], "D": [4096], "norm": ["layer", "rms"]},
                                          {"T": [8192], "D": [768], "norm": ["rms"]}]}),
)
# What the series measured, kernels per call on CUDA: (fewest, most, what it saw).
SERIES = {
    ("matmul_add", "eager"): (2, 2, "mm + add"),
    ("matmul_add", "addmm"): (1, 1, "one addmm GEMM"),
    ("matmul_add", "compile"): (2, 2, "one GEMM + a DtoD copy"),
    ("mlp", "eager"): (5, 5, "3 GEMMs, gelu, mul"),
    ("mlp", "compile"): (4, 4, "3 GEMMs + fused gelu*mul"),
    ("attention", "naive"): (6, 6, "bmm, mul, clone, masked_fill, softmax, bmm"),
    ("attention", "naive_inplace"): (5, 5, "naive without the clone"),
    ("attention", "sdpa_math"): (15, 25, "about 20: the math decomposition"),
    ("attention", "sdpa_flash"): (1, 1, "one fused kernel"),
    ("attention", "sdpa_efficient"): (1, 1, "one fused kernel"),
    ("attention", "sdpa_cudnn"): (1, 1, "one fused kernel"),
}
# The CPU plumbing: one small run of the first suite, no compile (seconds of C++ per graph).
CPU_RUN = {"suite.sizes": [64], "suite.dtypes": ["float32"],
           "suite.variants": ["eager", "addmm", "triton"], "calibrate": False}
STATUS = {"ok": "ok", "skipped": "skipped", "noisy": "noisy"}  # failed and incorrect: failed
MIN_RUN_S = 30.0  # a CUDA run started with less would be stopped in its first case
FIELDS = ("mean_us", "mean_low_us", "mean_high_us", "median_us", "calls_per_sample", "kernel_us",
          "kernel_low_us", "kernel_high_us", "speedup", "speedup_low", "speedup_high",
          "kernel_speedup", "kernel_speedup_low", "kernel_speedup_high", "n_kernels",
          "device_us", "tflops", "backend")


@dataclass(frozen=True)
class Plan:
    name: str       # the run folder's name
    suite: str
    values: dict = field(default_factory=dict)  # overrides beyond suite, device and timing
    reference: bool = False  # the series' shape: its rows are compared with SERIES


def reference_values(suite: str) -> dict:
    """Overrides that sweep `suite` at its YAML's reference shape, in bfloat16."""
    cfg = resolved(compose({"suite": suite}))["suite"]
    reference = cfg["reference"]
    if "sizes" in cfg:  # every parameter takes the one size (matmul_add: M = N = K)
        shape = {"suite.sizes": [next(iter(reference.values()))]}
    else:
        shape = {"suite.axes": {p: [v] for p, v in reference.items()}}
    return {**shape, "suite.dtypes": ["bfloat16"]}


def plans() -> list[Plan]:
    refs = [Plan(s.name, s.name, reference_values(s.name), True) for s in suites()]
    return refs + [Plan(name, suite, {**reference_values(suite), **values})
                   for name, suite, values in EXTRA]


def overrides(plan: Plan, device: str, cpu_plumbing: bool = False,
              case_timeout_s: float | None = None) -> dict:
    """The plan's full overrides: what compose() and run_suite.py's command line take."""
    out = {"suite": plan.suite, "timing": "quick" if cpu_plumbing else "default",
           "device": device, **plan.values}
    if cpu_plumbing:
        out.update(CPU_RUN)
    if case_timeout_s is not None:
        out["timing.case_timeout_s"] = case_timeout_s
    return out


def _folder(runs_dir: Path, name: str) -> Path:
    """A folder of its own: a run never writes among another run's files."""
    folder, n = runs_dir / name, 1
    while folder.exists() and any(folder.iterdir()):
        n += 1
        folder = runs_dir / f"{name}-{n}"
    return folder


def items(cuda: bool, runs_dir: Path, clock, rec, log):
    """(item, work) pairs, one per planned run; on a CPU only the first runs (small), every
    other plan's spec is built and checked."""
    for index, plan in enumerate(plans()):
        runs = cuda or index == 0

        def work(plan=plan, runs=runs):
            folder = _folder(runs_dir, plan.name)
            if runs and cuda and clock.left() < MIN_RUN_S:  # it would only be killed
                return {"status": "deadline", "error": f"not started: {clock.left():.0f} s "
                        f"left, a run needs {MIN_RUN_S:.0f} s (a compile and a profile)"}
            # A case still running at the deadline fails its last variants rather than hold
            # up the sections after it (timing.case_timeout_s): never more than is left.
            limit = max(1.0, round(clock.left(), 0)) if cuda else None
            given = overrides(plan, "cuda" if cuda else "cpu", runs and not cuda, limit)
            spec = build_run_spec(resolved(compose(given)), folder)
            reproduce = " ".join(["python run_suite.py", *override_args(given),
                                  f"hydra.run.dir={folder}"])
            if not runs:
                return {"status": "skipped", "error": "no CUDA: the spec was built, not run",
                        "cases": len(spec.cases()), "variants": list(spec.suite.variants)}
            return run_plan(plan, spec, clock, rec, log) | {"folder": str(folder),
                                                       "reproduce": reproduce}
        yield plan.name, work


def run_plan(plan: Plan, spec, clock, rec, log) -> dict:
    """Run the spec, stopped at the deadline; its rows recorded; the run's own row returned."""
    fired = threading.Event()

    def deadline():
        fired.set()
        os.kill(os.getpid(), signal.SIGINT)  # harness/stopping.py: stop after this case

    timer = threading.Timer(max(0.0, clock.left()), deadline)
    timer.daemon = True
    error = None
    with signals_stop_runs():
        timer.start()
        # A case or a re-measure under way at the deadline stops at its next step.
        case_clock.hold_until(time.perf_counter() + max(0.0, clock.left()))
        try:
            run(spec, stream=log)
        except Interrupted:
            if not fired.is_set():
                raise  # the user's Ctrl-C or a SIGTERM: stop everything
        except Exception as exc:  # the harness itself failed: keep what it measured
            error = short_error(exc)
        finally:
            case_clock.hold_until(None)
            timer.cancel()
            timer.join()
    record_rows(plan, spec.out_dir, rec)
    state = read_state(spec.out_dir) or {}  # none: stopped while waiting for the device lock
    done, planned = state.get("done", 0), len(spec.cases()) * len(spec.suite.variants)
    fields = {"rows": done, "planned": planned, "run_state": state.get("state")}
    if error:
        return {"status": "failed", "error": error, **fields}
    if fired.is_set() and done != planned:
        return {"status": "deadline", **fields,
                "error": f"stopped at the deadline: {done} of {planned} rows measured"}
    return fields


def series_fact(suite: str, variant: str, n_kernels) -> dict:
    fact = SERIES.get((suite, variant))
    if fact is None:
        return {}
    low, high, seen = fact
    agrees = None if pd.isna(n_kernels) else bool(low <= n_kernels <= high)
    return {"series_kernels": f"{low}" if low == high else f"{low}-{high}",
            "series_saw": seen, "agrees": agrees}


def record_rows(plan: Plan, folder: Path, rec) -> None:
    """One JSON line per (case, variant) row of the run folder's measurements.csv."""
    if not (folder / MEASUREMENTS_CSV).is_file():
        return
    frame = RunFolder(folder).measurements
    for row in frame.to_dict("records"):
        status = STATUS.get(str(row["status"]), "failed")
        fields = {k: row.get(k) for k in FIELDS if k in row and not pd.isna(row.get(k))}
        reason = row.get("reason") or ""
        note = {} if not reason else {"error": reason} if status != "ok" else {"note": reason}
        facts = series_fact(row["suite"], row["variant"], row.get("n_kernels")) \
            if plan.reference else {}
        rec.add(SECTION, f"{plan.name} {row['case_id']} {row['variant']}", status,
                harness_status=row["status"], **fields, **facts, **note)
