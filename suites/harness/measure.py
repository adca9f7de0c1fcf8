"""One (case, variant): support check, first call, correctness, timing, profiling.

Whatever happens, the result is a row: `skipped` with the reason the variant or the harness
gave, `failed` with the exception, `incorrect` with the error numbers (and not timed), or `ok`.
"""
from __future__ import annotations

import gc
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kernels.base import Case, Op, Variant
from kernels.triton.runtime import kernels_interpreted
from suites.harness import correctness, timing
from suites.harness.derived import new_row
from suites.profiling.call_profile import CallProfile
from suites.profiling.capture import capture
from suites.profiling.op_kinds import sdpa_backend
from suites.profiling.trace_analysis import analyze
from suites.profiling.trace_events import read_trace
from suites.results.columns import Status
from suites.results.row import ProfileStats, ResultRow
from suites.spec import RunSpec

# Triton's interpreter runs kernels orders of magnitude slower than compiled code: correct
# answers, meaningless times. A run never times it, so off CUDA the Triton rows are skipped.
NOT_TIMED_INTERPRETED = ("Triton kernels need a CUDA GPU to be timed; on CPU they run only under "
                         "TRITON_INTERPRET=1, for correctness tests")
NOT_TIMED_INTERPRETER_ON = ("TRITON_INTERPRET=1 is set: the Triton kernels run interpreted, "
                            "which is never timed; unset it to time them on the GPU")


@dataclass
class Outcome:
    row: ResultRow
    samples_us: list[float] = field(default_factory=list)
    profile: CallProfile | None = None


def not_timed_here(variant: Variant, case: Case) -> str | None:
    """The harness's own rule, on top of what the variant supports: it never times a kernel
    that can only run interpreted here."""
    if variant.family != "triton":
        return None
    if case.device_type != "cuda":
        return NOT_TIMED_INTERPRETED
    return NOT_TIMED_INTERPRETER_ON if kernels_interpreted() else None


def _generator(case: Case, offset: int) -> torch.Generator:
    return torch.Generator(device=case.device).manual_seed(case.seed * 1000 + offset)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


def _fx_cache_counts() -> tuple[int, int]:
    from torch._dynamo.utils import counters

    return counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]


def _fx_cache_outcome(before: tuple[int, int], after: tuple[int, int]) -> str:
    """Whether the first call compiled from scratch or loaded Inductor's cached graph: a warm
    cache makes compile_ms several times smaller, so the row says which it was."""
    hits, misses = after[0] - before[0], after[1] - before[1]
    return "miss" if misses else ("hit" if hits else "none")


def artifact_paths(out_dir: Path, case: Case, variant: str) -> tuple[Path, Path]:
    stem = f"{case.id}__{variant}"
    return out_dir / "traces" / f"{stem}.json.gz", out_dir / "tables" / f"{stem}.txt"


def measure(op: Op, variant: Variant, case: Case, spec: RunSpec,
            baseline_err: float | None) -> Outcome:
    row = new_row(spec.suite.name, case, variant, op, spec.timing.threads)
    reason = not_timed_here(variant, case) or variant.supports(case)
    if reason:
        row.status, row.reason = Status.SKIPPED, reason
        return Outcome(row)
    try:
        with variant.scope():
            return _measure(op, variant, case, spec, baseline_err, row)
    except Exception as exc:  # a crash in one variant is a row, and the sweep goes on
        row.status, row.reason = Status.FAILED, _short(exc)
        return Outcome(row)
    finally:
        gc.collect()
        if case.device_type == "cuda":
            torch.cuda.empty_cache()


def _measure(op, variant, case, spec, baseline_err, row: ResultRow) -> Outcome:
    device_type = case.device_type
    inputs = op.make_inputs(case, _generator(case, 0))
    call = variant.prepare(case, inputs)
    before = _fx_cache_counts()
    row.first_call_ms = timing.time_first_call(call, device_type)
    if variant.family == "compile":
        row.compile_cache = _fx_cache_outcome(before, _fx_cache_counts())

    row.check = correctness.check_call(op, case, inputs, call, baseline_err, _generator(case, 1))
    if not row.check.passed:
        row.status, row.reason = Status.INCORRECT, row.check.problem
        return Outcome(row)

    warmup = spec.timing.compile_warmup_calls if variant.family == "compile" else spec.timing.warmup_calls
    samples = timing.sample_calls(call, device_type, spec.timing, warmup)
    cache = ("cold" if spec.timing.l2_flush else "hot") if device_type == "cuda" else "n/a"
    row.timing = timing.summarize(samples, cache)

    profile = None
    if spec.profile.enabled:
        trace_path, table_path = artifact_paths(spec.out_dir, case, variant.name)
        try:
            # The same cold L2 as the timing pass, so device time and the median compare.
            capture(call, variant.name, device_type, spec.profile, trace_path, table_path,
                    before_call=timing.l2_flusher(spec.timing, device_type))
            profile = CallProfile(analyze(read_trace(trace_path), label=variant.name))
            row.profile = ProfileStats(**profile.metrics(),
                                       backend=sdpa_backend(profile.ops_per_call()),
                                       trace=str(trace_path.relative_to(spec.out_dir)),
                                       table=str(table_path.relative_to(spec.out_dir)))
        except Exception as exc:  # the timing stands; say why the profile columns are empty
            row.reason = f"profiling failed: {_short(exc)}"
    return Outcome(row, samples, profile)
