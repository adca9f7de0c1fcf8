"""Replay first: each mapped group run alone as the trace ran it (the block's variant of the
trace's form: `aten::linear` is the linear block's eager, `addmm` matmul_add's addmm, an SDPA
call attention's sdpa, `aten::layer_norm` norm's functional, the GeGLU MLP's ops its eager), at
the trace's shapes and dtype, its time per call set beside the trace's time per instance. Only
where this machine is the trace's kind of device: a GPU trace read on a CPU is not replayed.

Timed by the harness, as the suites time their variants (suites/harness/rounds.py): the groups
are one case's contenders, timed in interleaved rounds, the load measured around each share
(LoadMeter), the rounds judged (round_checks.judge: a contended, stalled or off round dropped),
and a replay's time the mean of its clean rounds with its 95% interval (timing.summarize; on
CUDA the kernels' own time, timing.kernel_summary, the trace's device time being the kernels').
A group with too few clean rounds is timed once more in new rounds; still short, it states no
time and says why (case_run.noisy_reason). A verdict whose interval cannot tell states no time
either (verdict.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from kernels import registry
from kernels.base import Case
from suites.common.memory import available_memory
from suites.harness import timing
from suites.harness.case_run import MIN_CLEAN_ROUNDS, noisy_reason
from suites.harness.contention import LoadMeter, usable_cpus
from suites.harness.round_checks import MIN_SHARE_WALL_S, Limits, Slot, judge
from suites.harness.rounds import Contender, time_rounds
from suites.harness.variant_passes import pass_scope, short_error
from suites.suggest import verdict as judged
from suites.suggest.profiler_cost import profiler_us_per_op
from suites.traces.suggest.groups import Group
from suites.traces.suggest.scaling import scaled

SHARE_S = 0.05    # one group's share of one round
ROUNDS = 7        # the suites' quick preset has 3; a replay needs 3 clean ones of these
MIN_SAMPLES = 3   # calls in a share at least (a call of 60 ms: 0.18 s a share)
MAX_SAMPLES = 500
HEADROOM = 4      # a replay's memory: its ideal bytes times this (intermediates, output)


@dataclass
class Replay:
    """One group's replay: the row suggest.csv and the console read (verdict.py judges it)."""

    variant: str
    trace_us: float           # the trace's time per instance of the group
    threads: int = 0
    scaled_by: float = 1.0    # --scale: the replay's shape this many times smaller
    us: float = math.nan      # stated only with a STATED verdict
    low_us: float = math.nan
    high_us: float = math.nan
    rounds: int = 0           # clean rounds
    dropped: int = 0          # rounds judged not clean
    ratio_low: float = math.nan
    ratio_high: float = math.nan
    verdict: str = judged.NOT_REPLAYED
    why: str = ""             # why no time is stated (not replayed, noisy)
    strided_inputs: int = 0
    ops_per_call: float = math.nan
    profiler_us: tuple[float, float, float] = (math.nan, math.nan, math.nan)  # us, low, high
    slots: list[Slot] = field(default_factory=list)

    def row(self) -> dict:
        """suggest.csv's replay columns, the cause decided from them (verdict.cause_of)."""
        stated = self.verdict in judged.STATED
        row = {"replay_variant": self.variant, "replay_verdict": self.verdict,
               "trace_us_per_instance": self.trace_us,
               "replay_us": self.us if stated else math.nan,
               "replay_low_us": self.low_us if stated else math.nan,
               "replay_high_us": self.high_us if stated else math.nan,
               "trace_over_replay": self.trace_us / self.us if stated else math.nan,
               "trace_over_replay_low": self.ratio_low, "trace_over_replay_high": self.ratio_high,
               "replay_rounds": self.rounds, "replay_rounds_dropped": self.dropped,
               "replay_threads": self.threads, "replay_scaled_by": self.scaled_by,
               "strided_inputs": self.strided_inputs,
               "profiled_ops_per_call": self.ops_per_call,
               "profiler_us_per_op": self.profiler_us[0],
               "profiler_us_per_op_low": self.profiler_us[1],
               "profiler_us_per_op_high": self.profiler_us[2]}
        row["replay_cause"] = judged.cause_of(row)
        said = judged.verdict_words(row) if self.verdict != judged.NOISY else ""
        cause = judged.cause_words(row)
        row["replay_note"] = (self.why or said) + (f": {cause}" if cause else "")
        return row


def _device(trace_device: str) -> str | None:
    if trace_device == "cpu":
        return "cpu"
    return "cuda" if torch.cuda.is_available() else None


def strided_inputs(g: Group) -> int:
    """The inputs the group's notes say the trace recorded as strided views (patterns.py)."""
    return sum("is a strided view" in note for note in g.notes)


def _contender(g: Group, device: str, scale: float, held: float) -> tuple[Contender, float,
                                                                          float]:
    """(the group's call ready to time, the factor its shape was scaled by, the bytes it
    holds). A shape past what is free, beside the replays already held, is said, never
    allocated: an out-of-memory kill takes the whole command."""
    op = registry.get_op(g.suite)
    variant = registry.get_variant(g.suite, g.replay)
    values, applied = scaled(g.suite, g.values, scale)
    case = Case.make(g.suite, values, g.dtype, device)
    problem = variant.supports(case)
    if problem:
        raise RuntimeError(problem)
    need = op.bytes_ideal(case) * HEADROOM
    room, what = available_memory(device)
    if need + held > room:
        raise MemoryError(f"needs ~{need / 2**30:.3g} GiB, {room / 2**30:.3g} GiB {what}")
    inputs = op.make_inputs(case, torch.Generator(device=device).manual_seed(0))
    with pass_scope(variant):
        call = variant.prepare(case, inputs)
        call()  # the first call (allocation, dispatch caches) is no replay's figure
    return Contender(g.label(), call, lambda: pass_scope(variant)), applied, need


def _spec(threads: int, groups: int) -> timing.TimingSpec:
    # A round as long as the contention check reads (round_checks: twice MIN_SHARE_WALL_S),
    # however few groups share it.
    share = max(SHARE_S, 2 * MIN_SHARE_WALL_S / max(1, groups))
    return timing.TimingSpec(preset="replay", budget_s=share * ROUNDS,
                             min_samples=MIN_SAMPLES * ROUNDS, max_samples=MAX_SAMPLES * ROUNDS,
                             warmup_calls=1, compile_warmup_calls=1, l2_flush=True,
                             threads=threads, rounds=ROUNDS)


def _timed(contenders: list[Contender], device: str, threads: int) -> list[Slot]:
    """Every share of every round, judged; the groups short of clean rounds timed once more."""
    spec, meter = _spec(threads, len(contenders)), LoadMeter(device)
    limits = Limits(len(usable_cpus()), threads if device == "cpu" else 1)
    slots = judge(time_rounds(contenders, spec, device, meter, on_error=short_error), limits)
    short = [c for c in contenders if not c.failed and sum(
        s.clean for s in slots if s.variant == c.name) < MIN_CLEAN_ROUNDS]
    if short:
        first = max((s.round for s in slots), default=-1) + 1
        slots = judge(slots + time_rounds(short, spec, device, meter, first, short_error), limits)
    return slots


def _stated(r: Replay, mine: list[Slot], device: str) -> None:
    """The replay's time from its clean rounds, its ratio to the trace and the verdict; with too
    few clean rounds, why none is stated."""
    clean = [s for s in mine if s.clean]
    r.slots, r.rounds, r.dropped = mine, len(clean), len(mine) - len(clean)
    if len(clean) < MIN_CLEAN_ROUNDS:
        r.verdict = judged.NOISY
        r.why = "no time stated: " + noisy_reason(mine, len(clean), MIN_CLEAN_ROUNDS)
        return
    if device == "cuda":
        mean, low, high = timing.kernel_summary(clean)
    else:
        stats = timing.summarize(clean, rounds=len(clean), rounds_dropped=r.dropped)
        mean, low, high = stats.mean_us, stats.mean_low_us, stats.mean_high_us
    r.us, r.low_us, r.high_us = (x * r.scaled_by for x in (mean, low, high))
    r.ratio_low, r.ratio_high = judged.ratio_interval(r.trace_us, r.low_us, r.high_us)
    r.verdict = judged.verdict(r.ratio_low, r.ratio_high)


def figure(slot: Slot, device: str) -> float | None:
    """A round's figure for the replay: the mean call (CPU), the kernels' mean (CUDA)."""
    return slot.kernel_mean_us if device == "cuda" else slot.mean_us


def replay_all(groups: list[Group], trace_device: str,
               scale: float = 1.0) -> dict[int, Replay]:
    """id(group) -> its Replay, for every mapped group with a replay variant."""
    device = _device(trace_device)
    out, contenders, held = {}, {}, 0.0
    for g in groups:
        if not g.mapped or not g.replay:
            continue
        r = out[id(g)] = Replay(g.replay, g.device_us / max(1, g.instances),
                                strided_inputs=strided_inputs(g),
                                ops_per_call=g.recorded_ops / max(1, g.instances))
        if device is None:
            r.why = f"not replayed: the trace ran on {trace_device}, this machine has no CUDA"
            continue
        r.threads = torch.get_num_threads() if device == "cpu" else 1
        try:
            contenders[id(g)], r.scaled_by, need = _contender(g, device, scale, held)
            held += need
        except Exception as exc:  # a shape this machine cannot hold or build: said, not raised
            r.why = f"not replayed: {short_error(exc)[:200]}"
    if contenders:
        slots = _timed(list(contenders.values()), device, torch.get_num_threads())
        for key, c in contenders.items():
            if c.failed:
                out[key].why = f"not replayed: timing failed: {c.failed}"
                continue
            _stated(out[key], [s for s in slots if s.variant == c.name], device)
    contenders.clear()  # the calls hold the replays' tensors
    if device == "cpu" and any(r.verdict == judged.SLOWER for r in out.values()):
        cost = profiler_us_per_op()  # a CPU trace's spans hold it; measured only when asked
        for r in out.values():
            r.profiler_us = cost
    return out
