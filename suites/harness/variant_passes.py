"""One (case, variant) before and after the timing rounds: support check, first call, warm-up
and correctness (`prepare`), then the profiling pass (`profile`); every pass in one grad mode
(`pass_scope`).

Whatever happens, the result is a row: `skipped` with the reason the variant or the harness
gave, `failed` with the exception, `incorrect` with the error numbers (and not timed); the
rest become contenders in the case's timing rounds (suites/harness/case_run.py).
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

from kernels.base import Case, Op, Variant
from kernels.triton.runtime import kernels_interpreted
from suites.harness import compile_counters, compile_partition, correctness, grad_check, timing, training
from suites.harness.training import Step, as_leaves
from suites.harness.derived import new_row
from suites.harness.rounds import SELF_WARMING_US, Contender
from suites.traces.call_profile import CallProfile
from suites.harness.profile_pass import capture
from suites.harness.profile_guard import MAX_TAKES, ProfileGuard
from suites.traces.memory import peak_mb
from suites.traces.op_kinds import sdpa_backend
from suites.traces.steps import analyze
from suites.traces.events import read_trace
from suites.results.columns import Status
from suites.results.journal import disk_full
from suites.results.row import NAN, ProfileStats, ResultRow
from suites.harness.spec import RunSpec

# Triton's interpreter runs kernels orders of magnitude slower than compiled code: correct
# answers, meaningless times. A run never times it, so off CUDA the Triton rows are skipped.
NOT_TIMED_INTERPRETED = ("Triton kernels need a CUDA GPU to be timed; on CPU they run only under "
                         "TRITON_INTERPRET=1, for correctness tests")
NOT_TIMED_INTERPRETER_ON = ("TRITON_INTERPRET=1 is set: the Triton kernels run interpreted, "
                            "which is never timed; unset it to time them on the GPU")


@dataclass
class Prepared:
    """A variant after its first call and correctness check: either a final row (skipped,
    failed, incorrect) or a contender for the timing rounds."""

    row: ResultRow
    variant: Variant
    contender: Contender | None = None


def not_timed_here(variant: Variant, case: Case) -> str | None:
    """The harness's own rule, on top of what the variant supports: it never times a kernel
    that can only run interpreted here."""
    if variant.family != "triton":
        return None
    if case.device_type != "cuda":
        return NOT_TIMED_INTERPRETED
    return NOT_TIMED_INTERPRETER_ON if kernels_interpreted() else None


# The draw of a case's inputs (case.seed * 1000 + this): the one a run's check has always used, so
# a run's inputs and errors are those of earlier versions.
INPUTS_DRAW = 1
GRAD_DRAW = 2  # the gradient fed to backward in a training mode


def case_generator(case: Case, offset: int) -> torch.Generator:
    return torch.Generator(device=case.device).manual_seed(case.seed * 1000 + offset)


def short_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


def _fx_cache_counts() -> tuple[int, int]:
    from torch._dynamo.utils import counters

    return counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]


def _graph_count() -> int:
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


def cuda_peak_mb(call) -> float:
    """What one call allocates at its peak beyond what was allocated before it (the inputs):
    the allocator's high-water mark around the call, reset first."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    call()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 2 ** 20


def _fx_cache_outcome(before: tuple[int, int], after: tuple[int, int]) -> str:
    """Whether the first call compiled from scratch or loaded Inductor's cached graph: a warm
    cache makes compile_ms several times smaller, so the row says which it was."""
    hits, misses = after[0] - before[0], after[1] - before[1]
    return "miss" if misses else ("hit" if hits else "none")


def artifact_paths(out_dir: Path, case: Case, variant: str) -> tuple[Path, Path]:
    stem = f"{case.id}__{variant}"
    return out_dir / "traces" / f"{stem}.json.gz", out_dir / "tables" / f"{stem}.txt"


def prepare(op: Op, variant: Variant, case: Case, spec: RunSpec,
            baseline_err: float | None, baseline_grads: dict[str, float] | None = None
            ) -> Prepared:
    """Support check, inputs, the first call, the warm-up calls and the correctness check."""
    row = new_row(spec.suite.name, case, variant, op, spec.timing.threads)
    reason = not_timed_here(variant, case) or variant.supports(case) or no_backward(variant,
                                                                                      case)
    if reason:
        row.status, row.reason = Status.SKIPPED, reason
        return Prepared(row, variant)
    try:
        with pass_scope(variant, case.trains):
            call = _prepare(op, variant, case, spec, baseline_err, row, baseline_grads)
    except Exception as exc:  # a crash in one variant is a row, and the sweep goes on
        row.status, row.reason = Status.FAILED, short_error(exc)
        return Prepared(row, variant)
    if call is None:
        return Prepared(row, variant)
    return Prepared(row, variant, Contender(variant.name, call,
                                            lambda: pass_scope(variant, case.trains)))


def no_backward(variant: Variant, case: Case) -> str | None:
    if case.trains and variant.training_prepare() is None:
        return (f"mode {case.mode}: {variant.name} has no backward (its kernels are forward "
                "only; a training form wires a backward through torch.autograd.Function)")
    return None


@contextmanager
def pass_scope(variant: Variant, trains: bool = False):
    """Every pass of a variant (first call, warm-up, check, timing rounds, profile): its own
    settings, in one grad mode: inference, or grad recording for a training mode. Dynamo
    guards on grad mode: a check under no_grad and timing with grad on compiled two graphs,
    and the timed one was never checked."""
    with (torch.enable_grad() if trains else torch.no_grad()), variant.scope():
        yield


def _prepare(op, variant, case, spec, baseline_err, row: ResultRow, baseline_grads=None):
    device_type = case.device_type
    # The inputs are final before prepare: the check, the timing and the profile use them as
    # they are (kernels/api.py), so set-up derived from them stays valid.
    inputs = op.make_inputs(case, case_generator(case, INPUTS_DRAW))
    if case.trains:
        leaves = as_leaves(inputs)
        forward = variant.training_prepare()(case, inputs)
        call = Step(case.mode, forward, inputs, leaves, case_generator(case, GRAD_DRAW))
    else:
        call = variant.prepare(case, inputs)
    outputs = []  # the last output before the check: the check overwrites it (correctness.py)

    def kept():
        outputs[:] = [call()]
        return outputs[0]

    before, graphs, counts = _fx_cache_counts(), _graph_count(), compile_counters.snapshot()
    row.first_call_ms = timing.time_first_call(kept, device_type)
    if variant.family == "compile":
        row.compile_cache = _fx_cache_outcome(before, _fx_cache_counts())

    if variant.family == "compile":  # guards, autotuning and CUDA-graph capture settle
        timing.warm_up(kept, device_type, spec.timing.compile_warmup_calls)
    else:
        timing.warm_up(kept, device_type, spec.timing.warmup_calls, stop_after_us=SELF_WARMING_US)
    # Checked after the warm-up, so the checked call is one like the timed ones: for
    # mode='reduce-overhead', a replay of the captured CUDA graph, not a recording call.
    if case.trains:
        row.check, row.grad_by_tensor, _ = grad_check.check_step(op, case, call, baseline_err,
                                                                 baseline_grads)
        row.grad_errors = grad_check.errors_text(row.grad_by_tensor)
        row.grad_max_err = max((e for e in row.grad_by_tensor.values() if e == e), default=NAN)
    else:
        row.check = correctness.check_call(op, case, inputs, call, baseline_err,
                                           earlier=outputs[0])
    outputs.clear()
    if variant.family == "compile":  # one per shape: a fresh dynamo per case (case_run.py)
        row.compile_graphs = _graph_count() - graphs
        counts = compile_counters.since(counts)
        row.graph_breaks, row.inductor_kernels = counts.graph_breaks, counts.inductor_kernels
        row.recompiles = compile_counters.recompiles(getattr(call, "forward", call))
    if case.trains:  # after the graphs are counted: a forward under hooks may compile anew
        try:
            row.activation_mb, row.saved_tensors = training.saved_bytes(call.forward, inputs)
        except Exception as exc:  # the row stands; its activation memory is unknown
            row.reason = f"activation memory not measured: {short_error(exc)}"
    if case.trains and variant.family == "compile":  # after the graphs are counted, as above
        read_partition(row, call.forward)
    if not row.check.passed:
        row.status, row.reason = Status.INCORRECT, row.check.problem
        return None
    if device_type == "cuda" and not variant.replays:  # a CPU run reads the profile's events
        # A CUDA-graph replay allocates nothing: its memory is the pool its capture took.
        try:
            row.peak_mem_mb = cuda_peak_mb(call)
        except Exception as exc:  # a checked row stays one: its peak is unknown, and says why
            row.reason = f"peak memory not measured: {short_error(exc)}"
    return call


def read_partition(row: ResultRow, forward) -> None:
    """A compile variant's partition of its training graph into the row (compile_partition.py):
    what its forward saves, what its backward recomputes. One that cannot be read leaves the
    columns empty and says why in the row's reason; the row stands."""
    try:
        found = compile_partition.read_call(forward)
    except Exception as exc:
        note = f"compile partition not read: {short_error(exc)}"
        row.reason = f"{row.reason}; {note}" if row.reason else note
        return
    row.bwd_graphs, row.bwd_graph_ops = found.graphs, found.bwd_ops
    row.recomputed_ops, row.recomputed = found.recomputed_ops, found.recomputed_text
    row.partition_saved, row.partition_saved_mb = found.saved, found.saved_mb


def _before_each(call, spec: RunSpec, case: Case):
    """What runs before each profiled call, outside its range: the L2 flush (CUDA) and a
    training step's reset (its gradients, and bwd's forward), as in the timing pass."""
    flush, reset = timing.l2_flusher(spec.timing, case.device_type), training.reset_of(call)
    if reset is None:
        return flush
    if flush is None:
        return reset
    return lambda: (flush(), reset())


def profile(prepared: Prepared, case: Case, spec: RunSpec, guard: ProfileGuard | None = None,
            timed_us: float = NAN) -> CallProfile | None:
    """The profiling pass of a timed variant: the trace, its table and the row's profile part.
    With a guard, each take is judged like a timing round against the call's timed time
    (`timed_us`): one that is not clean is taken again, up to MAX_TAKES, and the last stands,
    marked (profile_guard.py). A failure leaves the timing standing and says why the profile
    columns are empty."""
    row, contender = prepared.row, prepared.contender
    if not spec.profile.enabled or contender is None or contender.failed:
        return None
    trace_path, table_path = artifact_paths(spec.out_dir, case, row.variant)
    try:
        for take in range(1, (MAX_TAKES if guard is not None else 1) + 1):
            with contender.scope():
                # The same cold L2 as the timing pass, so device time and the median compare;
                # the guard's meter over the profiled steps alone.
                load = capture(contender.call, row.variant, case.device_type, spec.profile,
                               trace_path, table_path,
                               before_call=_before_each(contender.call, spec, case),
                               meter=guard.meter if guard is not None else None)
            shapes = prepared.variant.gemm_shapes(case) if prepared.variant.gemm_shapes else ()
            result = CallProfile(analyze(read_trace(trace_path), label=row.variant,
                                         device=case.device_type), gemm_shapes=shapes)
            metrics = result.metrics()
            judged = guard.judge(load, result.call_us(), timed_us, metrics["n_cpu_ops"]) \
                if guard is not None else None
            if judged is None or judged.clean:
                break
        if case.device_type == "cpu":  # NaN where the trace holds no memory event in a call
            row.peak_mem_mb = peak_mb(trace_path, row.variant, "cpu")
        row.profile = ProfileStats(**metrics,
                                   backend=sdpa_backend(result.ops_per_call()),
                                   trace=str(trace_path.relative_to(spec.out_dir)),
                                   table=str(table_path.relative_to(spec.out_dir)),
                                   profile_state=judged.state if judged else None,
                                   profile_reason=judged.reason if judged else None,
                                   profile_takes=take if judged else NAN)
        return result
    except Exception as exc:
        if disk_full(exc):  # not this variant's failure: every later write fails too
            raise
        row.reason = f"profiling failed: {short_error(exc)}"
        return None


def release(case: Case) -> None:
    """After a case: free its tensors before the next case allocates."""
    gc.collect()
    if case.device_type == "cuda":
        torch.cuda.empty_cache()
