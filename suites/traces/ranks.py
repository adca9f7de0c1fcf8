"""Several ranks of one job, side by side and across: `python -m suites.analyze FOLDER` (or several
trace files), each file one rank's trace.

Per rank: its verdict (step_bound.py's primary bound, with its share), its median step, and its
time in collectives per step. Across ranks, step by step (steps matched by name: ProfilerStep#N
is the same iteration on every rank):

- each rank's collectives, in order (the host's collective ranges on a CPU job, gloo; the
  communication kernels on a GPU job, NCCL or RCCL), matched by position: the k-th collective of
  a step is the same call on every rank;
- a collective cannot finish before its last rank arrives: the rank that spent the least time in
  it arrived last, and its time is the communication itself (pure); every other rank's excess
  over that is time lost waiting for the slowest rank (skew);
- the slowest rank of a step is the one the others waited for (the least skew wait), or, in a
  step without collectives, the one with the longest window.

Durations only: the ranks' clocks need not agree (another host's clock can be seconds off).
"""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from suites.traces.call_profile import CallProfile
from suites.traces.device_time import on_gpu
from suites.traces.findings import FindingContext
from suites.traces.findings.bounds import profile_bound
from suites.traces.findings.step_bound import PrimaryBound, duration
from suites.traces.gpu_timeline import Intervals, kind, union
from suites.traces.op_kinds import is_cpu_collective


BACKEND_RANGES = ("gloo:", "mpi:", "ucc:")


@dataclass
class Rank:
    rank: int  # from the trace's distributedInfo, else its place in the list
    path: Path
    profile: CallProfile
    bound: PrimaryBound | None = None
    backend: str = ""

    @property
    def verdict(self) -> str:
        b = self.bound.bound if self.bound else None
        return f"{b.side}-bound ({b.kind})" if b else "no verdict"


@dataclass
class StepAcross:
    """One step on every rank."""
    name: str
    window_us: dict  # rank -> its window
    collective_us: dict = field(default_factory=dict)  # rank -> its time in collectives
    wait_us: dict = field(default_factory=dict)  # rank -> of that, waiting for the slowest
    pure_us: float = 0.0  # the collectives' own time (the last arrival's)
    slowest: int | None = None
    note: str = ""  # why the collectives could not be matched


def rank_of(profile: CallProfile, index: int) -> tuple[int, str]:
    info = profile.analysis.trace.meta.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return info["rank"], str(info.get("backend", ""))
    return index, ""


def collective_intervals(profile: CallProfile) -> Intervals:
    """The rank's collectives as merged intervals: communication kernels on a GPU; on the host,
    the backend's own ranges where the trace has them (gloo:all_reduce runs on the backend's
    thread for as long as the collective takes), else the c10d calls (which may only enqueue
    it and return)."""
    trace = profile.analysis.trace
    if on_gpu(profile.analysis.mode):
        return union([(k.ts, k.end) for k in trace.device if kind(k) == "communication"])
    host = [e for e in trace.annotations + trace.cpu_ops if is_cpu_collective(e.name)]
    work = [e for e in host if e.name.startswith(BACKEND_RANGES)]
    return union([(e.ts, e.end) for e in work or host])


def _step_span(step) -> tuple[float, float]:
    if step.window is not None:
        return step.window.start, step.window.end
    return step.call.ts, step.call.end


def _inside(intervals: Intervals, lo: float, hi: float) -> list[float]:
    """The durations of the collectives that start in [lo, hi), whole (a rank that waits runs
    past its step's end)."""
    return [end - start for start, end in intervals if lo <= start < hi]


def across(ranks: list[Rank]) -> list[StepAcross]:
    per_rank = {}
    for r in ranks:
        intervals = collective_intervals(r.profile)
        per_rank[r.rank] = {s.name: (s.window_us, _inside(intervals, *_step_span(s)))
                            for s in r.profile.steps}
    names = [s.name for s in ranks[0].profile.steps
             if all(s.name in per_rank[r.rank] for r in ranks)]
    out = []
    for name in names:
        row = StepAcross(name, {r: per_rank[r][name][0] for r in per_rank})
        calls = {r: per_rank[r][name][1] for r in per_rank}
        counts = {len(c) for c in calls.values()}
        if len(counts) > 1:
            row.note = ("collectives differ in number across ranks (" + ", ".join(
                f"rank {r}: {len(c)}" for r, c in calls.items()) + "): not matched")
        elif counts != {0}:
            pure = [min(c[i] for c in calls.values()) for i in range(counts.pop())]
            row.pure_us = sum(pure)
            row.collective_us = {r: sum(c) for r, c in calls.items()}
            row.wait_us = {r: sum(d - p for d, p in zip(c, pure)) for r, c in calls.items()}
            row.slowest = min(row.wait_us, key=row.wait_us.get)
        if row.slowest is None:
            row.slowest = max(row.window_us, key=row.window_us.get)
        out.append(row)
    return out


def load(profiles: list[tuple[Path, CallProfile]]) -> list[Rank]:
    ranks = []
    for i, (path, profile) in enumerate(profiles):
        rank, backend = rank_of(profile, i)
        # The profile's memo: the findings run on it next reuse this bound.
        ranks.append(Rank(rank, path, profile, profile_bound(FindingContext(profile=profile)),
                          backend))
    seen = Counter(r.rank for r in ranks)
    if any(n > 1 for n in seen.values()):  # two files claim one rank: number them by order
        for i, r in enumerate(ranks):
            r.rank = i
    return sorted(ranks, key=lambda r: r.rank)


def rank_rows(ranks: list[Rank], steps: list[StepAcross]) -> list[dict]:
    """ranks.csv: per rank, its verdict and what it spent per step."""
    rows = []
    for r in ranks:
        mine = [s for s in steps if r.rank in s.collective_us]
        b = r.bound.bound if r.bound else None
        rows.append({
            "rank": r.rank, "trace": r.path.name, "verdict": r.verdict,
            "share": b.share if b else float("nan"),
            "runner_up": b.runner_up if b else "",
            "step_ms": statistics.median(s.window_us[r.rank] for s in steps) / 1e3
            if steps else float("nan"),
            "collectives_ms": statistics.fmean(s.collective_us[r.rank] for s in mine) / 1e3
            if mine else 0.0,
            "waiting_for_slowest_ms": statistics.fmean(s.wait_us[r.rank] for s in mine) / 1e3
            if mine else 0.0,
            "pure_comm_ms": statistics.fmean(s.pure_us for s in mine) / 1e3 if mine else 0.0,
            "slowest_in_steps": sum(s.slowest == r.rank for s in steps)})
    return rows


def waiting_note(rank: Rank, steps: list[StepAcross]) -> str:
    """For a rank whose time in collectives is mostly waiting for another: how much, for whom.
    Its own verdict reads that wait as communication; this says what it is."""
    matched = [s for s in steps if rank.rank in s.wait_us]
    if not matched:
        return ""
    wait = statistics.fmean(s.wait_us[rank.rank] for s in matched)
    total = statistics.fmean(s.collective_us[rank.rank] for s in matched)
    if wait <= 0.5 * total or wait <= 0:
        return ""
    slowest = Counter(s.slowest for s in matched).most_common(1)[0][0]
    return (f" [of its {duration(total)} a step in collectives, {duration(wait)} is waiting for rank "
            f"{slowest}: skew, not communication]")


def findings(ranks: list[Rank], steps: list[StepAcross]) -> list[str]:
    """What the ranks say together, in words."""
    if not steps:
        return ["no step is on every rank (steps are matched by name): nothing to compare"]
    lines = []
    slowest = Counter(s.slowest for s in steps)
    top, n = slowest.most_common(1)[0]
    matched = [s for s in steps if s.collective_us]
    lines.append(f"slowest rank: rank {top} in {n} of {len(steps)} step(s)" + (
        "; " + ", ".join(f"rank {r} in {k}" for r, k in slowest.items() if r != top)
        if len(slowest) > 1 else ""))
    if matched:
        others = [r.rank for r in ranks if r.rank != top]
        wait = statistics.fmean(statistics.fmean(s.wait_us[r] for r in others) for s in matched)
        step = statistics.fmean(statistics.fmean(s.window_us[r] for r in others)
                                for s in matched)
        pure = statistics.fmean(s.pure_us for s in matched)
        lines.append(f"skew: the other ranks waited {duration(wait)} a step in collectives for the "
                     f"slowest ({wait / step:.0%} of their step); the communication itself took "
                     f"{duration(pure)} a step")
        if wait > pure:
            lines.append(f"the time in collectives is mostly waiting for rank {top}, not "
                         "communication: balance the ranks' work (or find what slows that "
                         "rank) before tuning the collectives")
    for s in steps:
        if s.note:
            lines.append(f"{s.name}: {s.note}")
            break
    verdicts = Counter(r.verdict for r in ranks)
    if len(verdicts) > 1:
        (common, n_common), (_, n_next) = verdicts.most_common(2)
        if n_common > n_next:
            said = f"most ranks {common}; " + ", ".join(
                f"rank {r.rank} {r.verdict}" for r in ranks if r.verdict != common)
        else:  # no majority
            said = ", ".join(f"rank {r.rank} {r.verdict}" for r in ranks)
        lines.append(f"verdicts differ: {said}" + (
            f" (a rank that waits for rank {top} reads as bound on its collectives)"
            if matched and any("collectives" in r.verdict or "communication" in r.verdict
                               for r in ranks) else ""))
    return lines
