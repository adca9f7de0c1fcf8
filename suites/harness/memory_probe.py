"""A case's peak memory, estimated before it runs: a case that would not fit in the memory
available now has each of its rows `skipped` with the numbers, and the sweep goes on, instead of
failing every variant (on a CPU: the kernel's OOM killer ending the whole sweep) through it.

The rule, per case, before any variant is prepared (`MemoryGuard.check`; `memory_probe: off` in
conf/config.yaml switches it off):

1. No probe for an ordinary case: one whose byte model (the larger of op.bytes_ideal and the
   probe variant's bytes_moved, which holds the unfused form's intermediates, naive attention's
   (S, S) scores) times QUICK_FACTOR (16 for inference, 24 for a training mode) is under an
   eighth of the memory available now (QUICK_SHARE). The factors are generous by measurement:
   the largest default CPU case of every suite held at most 10x its byte model at its peak
   (inference; 12.3x in fwd_bwd: linear in bfloat16, whose float64 reference and its check
   dwarf the inputs), the other variants' held bytes included at most ~14x. Such a case costs
   one read of /proc/meminfo (or cudaMemGetInfo) and the formulas, well under a millisecond.
   Every case of the default matmul_add grid on a CPU passes here with 16 GiB free.
2. Otherwise a probe: the baseline variant (or, where it does not run the case, the first
   variant that does), in the case's mode and dtype, at a probe shape of the same op: every size
   parameter scaled by one factor (rounded, at least 1) so the byte model there is about
   PROBE_BYTES (2 MiB), the categorical parameters as they are. The probe goes through what the
   harness does to one variant (variant_passes.prepare's steps: inputs, a first call, a second
   call while the first output is held, the correctness check against the float64 reference,
   in a training mode the gradient check and the activation read, a reset and one more call)
   and measures, from before the inputs are made:
   - peak: the most bytes held at once;
   - held: the bytes still held with the prepared call alive (its inputs, gradients, state),
     which each variant keeps while the next one is prepared and through the timing rounds.
   CUDA: torch.cuda.reset_peak_memory_stats, then max_memory_allocated and memory_allocated
   against memory_allocated before. CPU: the CPU allocator's `[memory]` events (an allocation
   is +bytes, a free -bytes) inside the probe's record_function range under torch.profiler with
   profile_memory=True (the events peak_mem_mb reads, traces/memory.py), taken from the
   profiler's events without writing a trace: the running sum's maximum is the peak, its value
   at the range's end what is held (tests/test_memory_probe.py checks it to the byte).
   Probes are cached per (op, device, dtype, mode, categorical parameters, variant) within a
   run: a sweep pays one probe per such series, not one per case.
3. The estimate: (peak + (variants that run - 1) x held) x the byte model's ratio between the
   case and the probe shape (the larger of bytes_ideal's and bytes_moved's ratios, so a term
   that grows like either is covered) x HEADROOM (1.5).
4. Compared with the memory available now: CUDA, the free bytes of cudaMemGetInfo plus what
   PyTorch's caching allocator holds unallocated; CPU, MemAvailable from /proc/meminfo, capped
   by the container's cgroup limit less its usage where there is one, else the physical memory.
   An estimate over it: every row of the case is skipped with "not enough memory: needs ~41 GiB
   (probe of eager at T452-D339-fp32: 12.3 MiB peak + 3 x 2.1 MiB held by the other variants,
   scaled by the byte model x3.3k, x1.5 headroom), 22 GiB free on the GPU".

How close it is (CPU, the largest default case of each suite, the probe's peak scaled against
the peak measured at the case itself, before the headroom): matmul_add and linear 1.00,
attention 1.02-1.04, block 0.65-0.76: its (S, S) terms (the float64 reference's scores) grow
like S^2 H where its byte model grows like S D, and are too small at the probe shape to show, so
the block's estimate is low by up to ~1.5x, which the headroom covers. Otherwise what it cannot
know: the estimate is the probe variant's, usually the baseline, the hungriest (eager keeps
intermediates a fused kernel never writes); a variant that holds more than it (a CUDA-graph
pool, a compiled kernel's workspace) is covered by the headroom only, as is any other term of
the peak that grows faster, under one scale factor for every size, than both byte models.

A probe that fails (it raises, or finds no probe shape the op accepts) never fails the case:
the case runs as it would without the probe, and each of its rows that ran says in its reason
"memory probe failed (...): ran without a memory estimate".
"""
from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from kernels.base import Case, Op, Variant
from suites.common.memory import available_memory
from suites.common.numbers import num, plain
from suites.harness import correctness, grad_check, training
from suites.harness.training import Step, as_leaves, reset_of
from suites.harness.variant_passes import (GRAD_DRAW, INPUTS_DRAW, case_generator,
                                           no_backward, not_timed_here, pass_scope,
                                           short_error)

SETTINGS = ("auto", "off")  # conf/config.yaml memory_probe
PROBE_BYTES = 2 * 2**20  # the byte model at the probe shape: a few MiB, milliseconds to run
HEADROOM = 1.5  # on the estimate: what the byte model's scaling and the other variants miss
# Case.trains -> a generous bound on a case's peak over its byte model (the docstring's 1.).
QUICK_FACTOR = {False: 16, True: 24}
QUICK_SHARE = 1 / 8  # no probe while the generous bound is under this share of what is free
LABEL = "memory_probe"  # the probe's record_function range (CPU)


class ProbeError(RuntimeError):
    """No probe could be made or read (no shape the op accepts, no memory event recorded)."""


# The byte model and the probe shape ------------------------------------------------------------

def _models(op: Op, case: Case, variant: str) -> tuple[float, float | None]:
    """(bytes_ideal, bytes_moved of `variant` or None)."""
    return op.bytes_ideal(case), op.bytes_moved(case, variant)


def model_bytes(op: Op, case: Case, variant: str) -> float:
    ideal, moved = _models(op, case, variant)
    return max(ideal, moved or 0.0)


def scale_ratio(op: Op, case: Case, probe: Case, variant: str) -> float:
    """How much larger the case is than the probe by the byte model: the larger of bytes_ideal's
    ratio and (where modelled) bytes_moved's."""
    (ideal, moved), (ideal_p, moved_p) = _models(op, case, variant), _models(op, probe, variant)
    ratios = [ideal / ideal_p]
    if moved and moved_p:
        ratios.append(moved / moved_p)
    return max(ratios)


def _scaled(op: Op, case: Case, factor: float) -> Case:
    params = {}
    for name, value in case.params:
        if not isinstance(value, str):
            value = max(1, round(value * factor))
            if op.optional.get(name) == value:  # at its default: off the id, as a sweep writes it
                continue
        params[name] = value
    return Case.make(op.name, params, case.dtype, case.device, case.seed, case.mode)


def probe_case(op: Op, case: Case, variant: str, target: float = PROBE_BYTES) -> Case:
    """The case with every size scaled by the largest one factor that keeps the byte model at
    most `target` (the case itself when it is that small), and a shape the op accepts."""
    if model_bytes(op, case, variant) <= target:
        return case
    low, high = 0.0, 1.0  # the model grows with the factor: bisect for the largest that fits
    for _ in range(40):
        middle = (low + high) / 2
        if model_bytes(op, _scaled(op, case, middle), variant) <= target:
            low = middle
        else:
            high = middle
    factor = low
    for _ in range(60):  # a shape the op refuses (block: D % H): a little smaller, until one is
        probe = _scaled(op, case, factor)
        if op.shape_problem(probe.values) is None:
            return probe
        factor *= 0.95
    raise ProbeError(f"no probe shape below {case.id} that {op.name} accepts")


# Measuring the probe ---------------------------------------------------------------------------

@dataclass
class Reading:
    peak: float = float("nan")  # bytes: the most held at once, from the start of the range
    held: float = float("nan")  # bytes held at its end


def cpu_reading(events, label: str = LABEL) -> Reading:
    """Peak and end value of the running sum of the CPU allocator's memory events inside the
    `label` range, from the profiler's kineto events."""
    cpu = torch.autograd.DeviceType.CPU
    spans = [(e.start_ns(), e.start_ns() + e.duration_ns()) for e in events if e.name() == label]
    if not spans:
        raise ProbeError(f"the profiler recorded no {label} range")
    start, end = spans[0]
    memory = sorted((e.start_ns(), e.nbytes()) for e in events
                    if e.name() == "[memory]" and e.device_type() == cpu
                    and start <= e.start_ns() <= end)
    if not memory:
        raise ProbeError("the profiler recorded no memory event in the probe")
    held = peak = 0.0
    for _, nbytes in memory:
        held += nbytes
        peak = max(peak, held)
    return Reading(peak, held)


@contextmanager
def measured(device_type: str):
    """A Reading of what the block allocates: peak and held at its end (see the docstring)."""
    reading = Reading()
    if device_type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        yield reading
        torch.cuda.synchronize()
        reading.peak = float(torch.cuda.max_memory_allocated() - before)
        reading.held = float(torch.cuda.memory_allocated() - before)
        return
    from torch.profiler import ProfilerActivity, profile, record_function

    from suites.harness.profile_pass import native_stderr_captured

    # Kineto's `USDT: ... profiler_start` lines go to fd 2: held back, as the profile pass does.
    with native_stderr_captured(), profile(activities=[ProfilerActivity.CPU],
                                           profile_memory=True) as prof:
        with record_function(LABEL):
            yield reading
    found = cpu_reading(prof.profiler.kineto_results.events())
    reading.peak, reading.held = found.peak, found.held


def run_probe(op: Op, variant: Variant, case: Case) -> Reading:
    """What prepare does to one variant (inputs, first call, warm-up, check; in a training mode
    the gradient check and the activation read), then one call as the timing rounds make it,
    measured; the prepared call and its inputs alive at the end (`held`)."""
    with measured(case.device_type) as reading, pass_scope(variant, case.trains):
        inputs = op.make_inputs(case, case_generator(case, INPUTS_DRAW))
        if case.trains:
            leaves = as_leaves(inputs)
            call = Step(case.mode, variant.training_prepare()(case, inputs), inputs, leaves,
                        case_generator(case, GRAD_DRAW))
        else:
            call = variant.prepare(case, inputs)
        outputs = [call()]
        outputs[:] = [call()]  # a warm-up call as prepare's: the next made while one is held
        if case.trains:
            grad_check.check_step(op, case, call, None, None)
            training.saved_bytes(call.forward, inputs)
        else:
            correctness.check_call(op, case, inputs, call, None, earlier=outputs[0])
        outputs.clear()
        reset = reset_of(call)
        if reset is not None:
            reset()
        call()
    del call, inputs
    return reading


# The guard -------------------------------------------------------------------------------------

def refusal(variant: Variant, case: Case) -> str | None:
    """Why prepare would skip the variant on the case (its support checks), or None."""
    try:
        return not_timed_here(variant, case) or variant.supports(case) or no_backward(variant,
                                                                                        case)
    except Exception:  # prepare will say why; count it as running
        return None


def runs(variant: Variant, case: Case) -> bool:
    """Whether the variant will allocate for the case."""
    return refusal(variant, case) is None


def gib(nbytes: float) -> str:
    """`2,260 GiB`, `41 GiB`, `12.3 MiB`, `640 KiB`: three significant figures in the unit that
    fits."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(nbytes) >= size:
            return f"{plain(nbytes / size)} {unit}"
    return f"{nbytes:.0f} B"


@dataclass(frozen=True)
class Probe:
    """A series' reading at its probe shape."""

    variant: str
    case: Case  # the probe shape
    reading: Reading
    ms: float


@dataclass(frozen=True)
class Verdict:
    skip: str = ""  # the reason every row of the case is skipped with; empty: it runs
    note: str = ""  # what the rows that ran must say (a probe that failed)
    need: float | None = None  # the estimate in bytes, headroom included, where probed


def _release(device_type: str) -> None:
    gc.collect()
    if device_type == "cuda":
        torch.cuda.empty_cache()


@dataclass
class MemoryGuard:
    """One per run: the probes it made, cached per series (see the module docstring)."""

    setting: str = "auto"
    probes: dict[tuple, Probe | str] = field(default_factory=dict)  # a str: why it failed
    records: list[dict] = field(default_factory=list)  # each probe made, for env.json

    def check(self, op: Op, variants: list[Variant], case: Case, baseline: str) -> Verdict:
        """Whether the case fits (the module docstring's rule)."""
        if self.setting == "off":
            return Verdict()
        running = [v for v in variants if runs(v, case)]
        if not running:
            return Verdict()
        variant = next((v for v in running if v.name == baseline), running[0])
        try:
            model = model_bytes(op, case, variant.name)
        except Exception:  # an op whose model cannot say: nothing to scale by, it runs as before
            return Verdict()
        available, what = available_memory(case.device)
        if model * QUICK_FACTOR[case.trains] <= QUICK_SHARE * available:
            return Verdict()
        key = (op.name, case.device, case.dtype, case.mode,
               tuple((k, v) for k, v in case.params if isinstance(v, str)), variant.name)
        if key not in self.probes:
            self.probes[key] = self._probe(op, variant, case)
            available, what = available_memory(case.device)  # with the probe's memory freed
        probe = self.probes[key]
        if isinstance(probe, str):
            return Verdict(note=f"memory probe failed ({probe}): ran without a memory estimate")
        ratio = scale_ratio(op, case, probe.case, variant.name)
        peak, held, others = probe.reading.peak, probe.reading.held, len(running) - 1
        need = (peak + others * held) * ratio * HEADROOM
        if need <= available:
            return Verdict(need=need)
        kept = f" + {others} x {gib(held)} held by the other variants" if others else ""
        return Verdict(skip=(
            f"not enough memory: needs ~{gib(need)} (probe of {probe.variant} at "
            f"{probe.case.id}: {gib(peak)} peak{kept}, scaled by the byte model "
            f"x{num(ratio, 3)}, x{HEADROOM:g} headroom), {gib(available)} {what}"), need=need)

    def _probe(self, op: Op, variant: Variant, case: Case) -> Probe | str:
        where = f"{variant.name} at {case.id}"
        started = time.perf_counter()
        try:
            small = probe_case(op, case, variant.name)
            where = f"{variant.name} at {small.id}"
            reading = run_probe(op, variant, small)
            if not reading.peak >= 0 or not reading.held == reading.held:
                raise ProbeError(f"no reading (peak {reading.peak}, held {reading.held})")
        except Exception as exc:
            failed = f"{where}: {short_error(exc)}"
            self.records.append({"case": case.id, "variant": variant.name, "failed": failed})
            return failed
        finally:
            _release(case.device_type)
        reading.held = max(0.0, reading.held)
        probe = Probe(variant.name, small, reading, (time.perf_counter() - started) * 1e3)
        self.records.append({"case": case.id, "variant": variant.name, "probe": small.id,
                             "peak_mib": round(reading.peak / 2**20, 3),
                             "held_mib": round(reading.held / 2**20, 3),
                             "ms": round(probe.ms, 1)})
        return probe
