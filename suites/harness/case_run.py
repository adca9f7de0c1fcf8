"""One case, all its variants: prepare each (first call, correctness), time them together in
interleaved rounds, profile each, judge every round, and finish the rows.

A row's timing comes from its clean rounds only; with fewer than `min_clean` of them it is
`noisy`: the reason says how many rounds were clean and why the others were not, and its
figures are never shown as a result. Speedups are paired per round
(suites/results/intervals.py). A case whose rows lack clean rounds can be timed again later in
the sweep (`remeasure`): the new rounds continue the numbering and are judged with the old.
"""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

import torch

from kernels.base import Case, Op, Variant
from suites.harness import timing
from suites.harness.timing import clock_floor
from suites.harness.case_clock import NO_LIMIT, CaseClock, deadline_passed
from suites.harness.contention import LoadMeter, usable_cpus
from suites.harness.derived import new_row
from suites.harness.memory_probe import MemoryGuard, Verdict, refusal
from suites.harness.variant_passes import Prepared, prepare, profile, release, short_error
from suites.harness.profile_guard import ProfileGuard, profiler_op_us, rejudged
from suites.results.intervals import Paired, paired_speedup
from suites.harness.round_checks import Limits, Slot, judge
from suites.harness.rounds import time_rounds
from suites.traces.call_profile import CallProfile
from suites.harness.cuda_graphs import missed_graph_kernels
from suites.results.columns import Status
from suites.results.row import NAN, ResultRow
from suites.harness.spec import RunSpec

MIN_CLEAN_ROUNDS = 3  # a median per round, and an interval from at least three of them


@dataclass
class CaseOutcome:
    case: Case
    rows: list[ResultRow]                       # one per variant, in the suite's order
    slots: list[Slot] = field(default_factory=list)   # every share of every round, judged
    profiles: dict[str, CallProfile] = field(default_factory=dict)
    remeasured: bool = False
    timed_out: bool = False  # past timing.case_timeout_s: not re-measured
    notes: dict[str, str] = field(default_factory=dict)  # variant -> what its reason must keep
    guard: ProfileGuard | None = None  # what judged the profiles: judges them again in finish

    def needs_remeasure(self) -> bool:
        return not self.timed_out and any(r.status == Status.NOISY for r in self.rows)


def min_clean(spec: RunSpec) -> int:
    return min(MIN_CLEAN_ROUNDS, spec.timing.rounds)


def model_us(row: ResultRow, peaks: dict | None) -> float | None:
    """The fastest a call can be by the op's model at the measured peaks: max(compute, memory)."""
    if not peaks:
        return None
    flops_peak = peaks["matmul_tflops"].get(row.dtype)
    if not flops_peak or not peaks.get("copy_gbps"):
        return None
    r = row.roofline
    return max(r.flops / (flops_peak * 1e12), r.bytes / (peaks["copy_gbps"] * 1e9)) * 1e6


def limits(case: Case, rows: list[ResultRow], spec: RunSpec, peaks: dict | None) -> Limits:
    # On a GPU the host path of a call runs on one thread, whatever torch's CPU thread count.
    threads = spec.timing.threads if case.device_type == "cpu" else 1
    return Limits(len(usable_cpus()), threads,
                  {r.variant: m for r in rows if (m := model_us(r, peaks)) is not None})


def _prepare_all(op: Op, variants: list[Variant], case: Case, spec: RunSpec,
                 clock: CaseClock = NO_LIMIT) -> list[Prepared]:
    # One fresh dynamo per case, before any variant compiles: after 8 shapes of one function
    # it silently falls back to eager, and the sweep would time eager under a compile label.
    torch._dynamo.reset()
    prepared, baseline_err, baseline_grads = [], None, None
    for variant in variants:
        if clock.over():  # a failed row that says so, and the case goes on to what it has
            p = Prepared(new_row(spec.suite.name, case, variant, op, spec.timing.threads), variant)
            p.row.status, p.row.reason = Status.FAILED, clock.reason("not prepared")
            prepared.append(p)
            continue
        p = prepare(op, variant, case, spec, baseline_err, baseline_grads)
        if variant.name == spec.suite.baseline and p.contender is not None:
            baseline_err, baseline_grads = p.row.check.scaled_err, p.row.grad_by_tensor
        prepared.append(p)
    return prepared


def _time(prepared: list[Prepared], case: Case, spec: RunSpec, meter: LoadMeter,
          first_round: int, clock: CaseClock = NO_LIMIT) -> list[Slot]:
    contenders = [p.contender for p in prepared if p.contender is not None]
    slots = time_rounds(contenders, spec.timing, case.device_type, meter, first_round,
                        short_error, stop=clock.over)
    for p in prepared:
        if p.contender is not None and p.contender.failed:
            p.row.status, p.row.reason = Status.FAILED, f"timing failed: {p.contender.failed}"
        elif p.contender is not None and clock.over() and not any(
                s.variant == p.row.variant for s in slots):
            p.contender.failed = "no timing round"  # the limit came first: nothing to profile
            p.row.status, p.row.reason = Status.FAILED, clock.reason("not timed")
    return slots


def _profiles(prepared: list[Prepared], case: Case, spec: RunSpec, clock: CaseClock,
              guard: ProfileGuard, slots: list[Slot]) -> tuple[dict[str, CallProfile],
                                                           dict[str, str]]:
    """The profile of each timed variant, while the case is within its time limit, each judged
    against the variant's timed call (the median of its rounds, before they are judged); a
    variant left unprofiled by the limit keeps its timing, and its reason says why the profile
    columns are empty."""
    profiles, notes = {}, {}
    for p in prepared:
        timed = [s.mean_us for s in slots if s.variant == p.row.variant]
        timed_us = statistics.median(timed) if timed else NAN
        if clock.over() and p.contender is not None and not p.contender.failed:
            notes[p.row.variant] = clock.reason("not profiled")
        elif (result := profile(p, case, spec, guard, timed_us)) is not None:
            profiles[p.row.variant] = result
    return profiles, notes


def profile_guard(case: Case, spec: RunSpec, meter: LoadMeter,
                  floors: dict | None) -> ProfileGuard:
    """The profile's judge: the rounds' meter, cores and threads, and the profiler's cost per op
    as the run measured it (env.json's launch floors)."""
    found = limits(case, [], spec, None)
    return ProfileGuard(meter, found.cores, found.threads, profiler_op_us(floors))


def run_case(op: Op, variants: list[Variant], case: Case, spec: RunSpec, meter: LoadMeter,
             peaks: dict | None, memory: MemoryGuard | None = None,
             floors: dict | None = None) -> CaseOutcome:
    """With `memory`, the case's peak memory is estimated first (memory_probe.py): a case that
    would not fit has every row skipped with the numbers; a probe that failed is a note on the
    rows that ran."""
    verdict = Verdict() if memory is None else memory.check(op, variants, case,
                                                            spec.suite.baseline)
    if verdict.skip:
        return _skipped(op, variants, case, spec, peaks, verdict.skip)
    clock = CaseClock(spec.timing.case_timeout_s)
    prepared = _prepare_all(op, variants, case, spec, clock)
    slots = _time(prepared, case, spec, meter, 0, clock)
    guard = profile_guard(case, spec, meter, floors)
    profiles, notes = _profiles(prepared, case, spec, clock, guard, slots)
    graph_notes = missed_graph_kernels([p.row for p in prepared],
                                       {v.name: v.replays for v in variants if v.replays})
    for name in graph_notes:  # the findings must not read a profile that missed the kernels
        profiles.pop(name, None)
    outcome = CaseOutcome(case, [p.row for p in prepared], slots, profiles, guard=guard)
    # A profile that failed leaves its columns empty: the reason says why, whatever the timing.
    outcome.notes = _joined(_kernel_notes(prepared), notes, graph_notes, _pass_notes(prepared),
                            {p.row.variant: verdict.note for p in prepared if verdict.note})
    outcome.timed_out = clock.over()
    finish(outcome, spec, peaks)
    if verdict.note:  # a row that ran but was not timed (failed, incorrect) says it too
        for row in outcome.rows:
            if row.status in (Status.FAILED, Status.INCORRECT):
                row.reason = "; ".join(r for r in (row.reason, verdict.note) if r)
    prepared.clear()  # the calls hold the case's tensors: drop them before freeing memory
    release(case)
    return outcome


def _skipped(op: Op, variants: list[Variant], case: Case, spec: RunSpec, peaks: dict | None,
             reason: str) -> CaseOutcome:
    """The case's rows, each skipped with `reason` (or the variant's own, where it would not run
    the case anyway), nothing prepared."""
    rows = []
    for variant in variants:
        row = new_row(spec.suite.name, case, variant, op, spec.timing.threads)
        row.status, row.reason = Status.SKIPPED, refusal(variant, case) or reason
        rows.append(row)
    outcome = CaseOutcome(case, rows)
    finish(outcome, spec, peaks)
    return outcome


def _kernel_notes(prepared: list[Prepared]) -> dict[str, str]:
    """CUDA: why a timed variant has no kernel time (its kernel share raised)."""
    return {p.row.variant: f"kernel time failed: {p.contender.kernel_failed}" for p in prepared
            if p.contender is not None and not p.contender.failed and p.contender.kernel_failed}


def _pass_notes(prepared: list[Prepared]) -> dict[str, str]:
    """What a timed variant's passes left in its reason (a profile or a peak-memory reading that
    failed): its figures stand, and the reason must keep saying why some columns are empty."""
    return {p.row.variant: p.row.reason for p in prepared
            if p.contender is not None and not p.contender.failed and p.row.reason}


def _joined(*notes: dict[str, str]) -> dict[str, str]:
    """variant -> its notes from several passes, in pass order."""
    out: dict[str, str] = {}
    for part in notes:
        for variant, note in part.items():
            out[variant] = "; ".join(n for n in (out.get(variant), note) if n)
    return out


@dataclass
class Measured:
    row: ResultRow
    samples_us: list[float]       # every timed call, all rounds
    profile: CallProfile | None
    slots: list[Slot]


def measure(op: Op, variant: Variant, case: Case, spec: RunSpec,
            baseline_err: float | None = None) -> Measured:
    """One variant alone, through the same passes as in a case (for tests and tools): against
    `baseline_err` in the correctness check, with no baseline to pair a speedup with. Too few
    clean rounds: timed once more, in new rounds, as a sweep re-measures a case."""
    p = prepare(op, variant, case, spec, baseline_err)
    meter = LoadMeter(case.device_type)
    slots = _time([p], case, spec, meter, 0)
    timed = [s.mean_us for s in slots]
    guard = profile_guard(case, spec, meter, None)
    result = profile(p, case, spec, guard, statistics.median(timed) if timed else NAN)
    row = p.row
    outcome = CaseOutcome(case, [row], slots, {row.variant: result} if result else {},
                          guard=guard)
    outcome.notes = _joined(_kernel_notes([p]), _pass_notes([p]))
    finish(outcome, spec, None)
    if outcome.needs_remeasure() and p.contender is not None and not p.contender.failed:
        outcome.slots += _time([p], case, spec, meter, max(s.round for s in slots) + 1)
        outcome.remeasured = True
        finish(outcome, spec, None)
    del p
    release(case)
    return Measured(row, [t for s in outcome.slots for t in s.samples_us], result, outcome.slots)


def remeasure(outcome: CaseOutcome, op: Op, variants: list[Variant], spec: RunSpec,
              meter: LoadMeter, peaks: dict | None) -> None:
    """Time the case's timed variants again, in new rounds, and judge all rounds together.
    The first pass's first call, correctness check and profile stand."""
    case = outcome.case
    timed = {r.variant for r in outcome.rows if r.status in (Status.OK, Status.NOISY)}
    if deadline_passed():  # checked before it starts: the first pass's rows stand as they are
        for name in timed:
            outcome.notes[name] = "; ".join(n for n in (
                outcome.notes.get(name), "re-measure not started: the run's deadline had passed")
                if n)
        return
    clock = CaseClock(spec.timing.case_timeout_s)  # the same limit for the second pass
    prepared = _prepare_all(op, [v for v in variants if v.name in timed], case, spec, clock)
    first = max((s.round for s in outcome.slots), default=-1) + 1
    new_slots = _time(prepared, case, spec, meter, first, clock)
    for p in prepared:  # a variant that fails when prepared again keeps its first-pass rounds
        if p.contender is None or p.contender.failed:
            new_slots = [s for s in new_slots if s.variant != p.row.variant]
            note = f"re-measure not possible: {p.row.status}: {p.row.reason}"
            outcome.notes[p.row.variant] = "; ".join(
                n for n in (outcome.notes.get(p.row.variant), note) if n)
    outcome.slots += new_slots
    outcome.remeasured = True
    finish(outcome, spec, peaks)
    prepared.clear()
    release(case)


def finish(outcome: CaseOutcome, spec: RunSpec, peaks: dict | None) -> None:
    """Judge every round, then each timed row's statistics, status and paired speedup."""
    outcome.slots = judge(outcome.slots, limits(outcome.case, outcome.rows, spec, peaks))
    on_cuda = outcome.case.device_type == "cuda"
    cache = ("cold" if spec.timing.l2_flush else "hot") if on_cuda else "n/a"
    for row in outcome.rows:
        mine = [s for s in outcome.slots if s.variant == row.variant]
        if row.status in (Status.OK, Status.NOISY) and mine:
            _timing(row, mine, min_clean(spec), cache)
            if outcome.guard is not None:  # the profile against the final time per call
                taken = outcome.profiles.get(row.variant)
                row.profile = rejudged(row.profile, row.value("mean_us"),
                                       outcome.guard.profiler_op_us,
                                       taken.call_us() if taken is not None else None)
            note = outcome.notes.get(row.variant)
            row.reason = "; ".join(r for r in (row.reason, note) if r)
    _speedups(outcome, spec.suite.baseline)


def _timing(row: ResultRow, slots: list[Slot], needed: int, cache: str) -> None:
    clean = [s for s in slots if s.clean]
    used = clean if len(clean) >= needed else slots  # a noisy row still records what it saw
    row.timing = timing.summarize(used, cache, rounds=len(clean),
                                  rounds_dropped=len(slots) - len(clean))
    row.kernel_us, row.kernel_low_us, row.kernel_high_us = timing.kernel_summary(used)
    if len(clean) >= needed:
        row.status, row.reason = Status.OK, ""
        return
    row.status = Status.NOISY
    row.reason = noisy_reason(slots, len(clean), needed)


def noisy_reason(slots: list[Slot], clean: int, needed: int) -> str:
    """`2 of 10 rounds clean (3 needed): 6 contended (other processes kept 1.4 of 2 cores...)`."""
    states = Counter(s.state for s in slots if not s.clean)
    first = {}
    for s in slots:
        first.setdefault(s.state, s.reason)
    parts = [f"{n} {state} ({first[state]})" for state, n in states.most_common()]
    return (f"{clean} of {len(slots)} rounds clean ({needed} needed): " + "; ".join(parts) +
            "; its figures (from every round) are kept but not shown as a result")


def _speedups(outcome: CaseOutcome, baseline: str) -> None:
    """Each row's speedup over the baseline, and on CUDA its kernel speedup, both paired over
    the rounds in which the two were clean."""
    clean = [s for s in outcome.slots if s.clean]
    base = next((r for r in outcome.rows if r.variant == baseline), None)
    for row in outcome.rows:
        row.speedup = row.speedup_low = row.speedup_high = row.device_ratio = NAN
        row.kernel_speedup = row.kernel_speedup_low = row.kernel_speedup_high = NAN
        if base is not None and row.ok and base.ok:  # the profile pass's own ratio, labelled so
            row.device_ratio = _ratio(base.value("device_us"), row.value("device_us"))
        if base is None or not (row.ok and base.ok and row.timing and base.timing):
            continue
        paired = _paired(clean, baseline, row.variant, "mean_us")
        row.speedup, row.speedup_low, row.speedup_high = paired.speedup, paired.low, paired.high
        kernel = _paired(clean, baseline, row.variant, "kernel_mean_us")
        if kernel.rounds:
            row.kernel_speedup, row.kernel_speedup_low, row.kernel_speedup_high = (
                kernel.speedup, kernel.low, kernel.high)
        if row is base:
            row.speedup_low = row.speedup_high = 1.0
            if kernel.rounds:
                row.kernel_speedup_low = row.kernel_speedup_high = 1.0


def _paired(clean: list[Slot], baseline: str, variant: str, figure: str) -> Paired:
    """The paired ratio of the baseline's round figures (a Slot attribute) over the variant's;
    its interval no narrower than the two clocks' steps allow."""
    figures: dict[str, dict[int, float]] = {}
    for s in clean:
        if s.variant in (baseline, variant) and (value := getattr(s, figure)) is not None \
                and value > 0:
            figures.setdefault(s.variant, {})[s.round] = value
    kernel = figure == "kernel_mean_us"
    floor = 0.0  # in logs: each side's clock floor over its time per call
    for name in {baseline, variant}:
        mine = [s for s in clean if s.variant == name and s.round in figures.get(name, {})]
        if mine:
            floor += clock_floor(mine, kernel) / statistics.fmean(figures[name].values())
    return paired_speedup(figures.get(baseline, {}), figures.get(variant, {}), floor)


def _ratio(a: float, b: float) -> float:
    return a / b if a == a and b == b and b > 0 else NAN
