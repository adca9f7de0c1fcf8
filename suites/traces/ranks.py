"""Several ranks of one job, side by side and across: `python -m suites.analyze FOLDER` (or several
trace files), each file one rank's trace.

Per rank: its verdict (step_bound.py's primary bound, with its share), its mean step, and its
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

A rank's own trace reads its wait for the slowest rank as time in collectives: its verdict says
"communication-bound". Where that wait is the largest part of its step, the job's verdict for the
rank is "waiting for rank N (skew)", with the communication itself (or the trace's own runner-up)
as runner-up; its own verdict is kept beside it.

Durations only: the ranks' clocks need not agree (another host's clock can be seconds off).
"""
from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from suites.traces.call_profile import CallProfile
from suites.traces.device_time import GPU, HOST_ONLY, device_name, on_gpu
from suites.traces.findings import FindingContext
from suites.traces.findings.bounds import profile_bound, verdict_label
from suites.traces.findings.step_bound import PrimaryBound, duration, step_bound
from suites.traces.gpu_timeline import Intervals, trace_timeline, union, work_kind
from suites.traces.op_kinds import is_cpu_collective
from suites.traces.slow_rank import slowest_extra


BACKEND_RANGES = ("gloo:", "mpi:", "ucc:")


@dataclass
class Rank:
    rank: int  # from the trace's distributedInfo, else its place in the list
    path: Path
    profile: CallProfile
    bound: PrimaryBound | None = None
    backend: str = ""
    skew: Skew | None = None  # set by across(): its wait for the slowest rank bounds its step
    claimed: int | None = None  # the rank its trace says it is, where two files say the same

    @property
    def own_verdict(self) -> str:
        """What its own trace says, the other ranks unseen; a bound its steps share no more than
        half of is said with how many (2 of 4 steps is no majority)."""
        if not self.bound:
            return "no verdict"
        b = self.bound
        label = verdict_label(b.bound)
        return label if 2 * b.steps > b.of else f"{label} in {b.steps} of {b.of} steps"

    @property
    def verdict_kind(self) -> str:
        """The verdict without how many steps share it: what ranks are compared by."""
        if self.skew:
            return self.verdict
        return verdict_label(self.bound.bound) if self.bound else "no verdict"

    @property
    def verdict(self) -> str:
        """The verdict with the other ranks seen: a wait for the slowest rank is named so."""
        return f"waiting for rank {self.skew.slowest} (skew)" if self.skew else self.own_verdict

    @property
    def share(self) -> float:
        """Its verdict's share of its step, as the table's other figures are: over its steps,
        the part's mean against the mean step (the per-rank line quotes one step, and says
        which)."""
        if self.skew:
            return self.skew.share
        if not self.bound:
            return float("nan")
        kind, mode = self.bound.bound.kind, self.profile.analysis.mode
        part = window = 0.0
        for step in self.profile.steps:
            b = step_bound(step, mode)
            if b is not None:
                # A host cause is a part of its own only in the steps it bounds.
                part += b.parts.get(kind, b.parts.get(f"host wait: {kind}", 0.0))
                window += b.window_us
        return part / window if window > 0 else float("nan")

    @property
    def runner_up(self) -> str:
        if self.skew:
            return self.skew.runner_up
        return self.bound.bound.runner_up if self.bound else ""


@dataclass
class Skew:
    """A rank whose largest part of a step is waiting in collectives for the slowest rank."""
    slowest: int
    share: float  # of its step, waiting
    runner_up: str  # the next part: the communication itself, or its trace's own runner-up
    runner_up_share: float


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
        return union([(k.ts, k.end) for k in trace.device if work_kind(k) == "communication"])
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
    for r in ranks:
        r.skew = _skew(r, out)
    return out


# The rank's own bound kinds that hold its collectives (CPU job, GPU job).
_COLLECTIVE_KINDS = ("CPU collectives", "communication")


def _skew(rank: Rank, steps: list[StepAcross]) -> Skew | None:
    """The rank's skew verdict, where its own trace calls it bound on its collectives and more
    of its step is waiting for the slowest rank than anything else (the communication itself
    and its own runner-up included); else None."""
    b = rank.bound.bound if rank.bound else None
    matched = [s for s in steps if rank.rank in s.wait_us]
    if b is None or b.kind not in _COLLECTIVE_KINDS or not matched:
        return None
    window = statistics.fmean(s.window_us[rank.rank] for s in matched)
    wait = statistics.fmean(s.wait_us[rank.rank] for s in matched)
    pure = statistics.fmean(s.collective_us[rank.rank] for s in matched) - wait
    if window <= 0:
        return None
    others = sorted([(pure / window, b.kind),
                     (b.runner_up_us / b.window_us if b.runner_up and b.window_us > 0 else 0.0,
                      b.runner_up)], reverse=True)
    (next_share, next_kind) = others[0]
    if wait / window <= next_share:
        return None
    slowest = Counter(s.slowest for s in matched).most_common(1)[0][0]
    return Skew(slowest, wait / window, next_kind if next_share > 0 else "", next_share)


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
            r.claimed, r.rank = r.rank, i
    return sorted(ranks, key=lambda r: r.rank)


_KIND_NAMES = {GPU: "gpu", "cpu": "cpu", HOST_ONLY: "host only"}


def mixed_note(ranks: list[Rank]) -> str:
    """Where the traces cannot be one job's ranks (a CPU trace beside GPU ones, two kinds of
    device, two backends): what differs, and by file; "" otherwise."""
    said = []
    for what, value in (("kinds", lambda r: _KIND_NAMES.get(r.profile.analysis.mode, "?")),
                        ("devices", lambda r: device_name(r.profile.analysis.trace.meta)),
                        ("backends", lambda r: r.backend)):
        by_value: dict = defaultdict(list)
        for r in ranks:
            if v := value(r):
                by_value[v].append(r.path.name)
        if len(by_value) > 1:
            said.append(f"{what} differ (" + "; ".join(
                f"{v}: {', '.join(names)}" for v, names in by_value.items()) + ")")
    return ("; ".join(said) + ": these may not be the ranks of one job") if said else ""


def claims_note(ranks: list[Rank]) -> str:
    """Where two files said they were the same rank (the same trace given twice, or traces of
    two jobs): which, and that the ranks are numbered by file order instead; "" otherwise."""
    claims: dict = defaultdict(list)
    for r in ranks:
        if r.claimed is not None:
            claims[r.claimed].append(r.path.name)
    twice = [f"{' and '.join(names)} all say rank {rank}" if len(names) > 2 else
             f"{' and '.join(names)} both say rank {rank}"
             for rank, names in sorted(claims.items()) if len(names) > 1]
    if not twice:
        return ""
    return ("; ".join(twice) + " (distributedInfo): the ranks are numbered by file order; "
            "the same trace given twice, or traces of different jobs?")


def rank_rows(ranks: list[Rank], steps: list[StepAcross]) -> list[dict]:
    """ranks.csv: per rank, its verdict and what it spent per step; on a GPU job, its GPU
    timeline's shares too."""
    rows = []
    gpu = any(on_gpu(r.profile.analysis.mode) for r in ranks)  # their timelines side by side
    for r in ranks:
        mine = [s for s in steps if r.rank in s.collective_us]
        step_ms = (statistics.fmean(s.window_us[r.rank] for s in steps) / 1e3 if steps
                   else float("nan"))
        collectives_ms = (statistics.fmean(s.collective_us[r.rank] for s in mine) / 1e3
                          if mine else 0.0)
        # A rank bound on its collectives: its share as the columns beside it measure them
        # (the collectives' own ranges, which the ranks are matched by).
        share = (collectives_ms / step_ms if not r.skew and r.bound and mine and step_ms > 0
                 and r.bound.bound.kind in _COLLECTIVE_KINDS else r.share)
        rows.append({
            "rank": r.rank, "trace": r.path.name, "verdict": r.verdict,
            "share": share, "runner_up": r.runner_up, "own_verdict": r.own_verdict,
            "step_ms": step_ms, "collectives_ms": collectives_ms,
            "waiting_for_slowest_ms": statistics.fmean(s.wait_us[r.rank] for s in mine) / 1e3
            if mine else 0.0,
            "pure_comm_ms": statistics.fmean(s.pure_us for s in mine) / 1e3 if mine else 0.0,
            "slowest_in_steps": sum(s.slowest == r.rank for s in steps),
            **(_timeline_shares(r) if gpu else {})})
    return rows


TIMELINE_SHARES = {"computation_us": "computation_pct", "exposed_comm_us": "exposed_comm_pct",
                   "exposed_memcpy_us": "exposed_memcpy_pct", "idle_us": "idle_pct"}


def _timeline_shares(rank: Rank) -> dict:
    """The rank's GPU timeline (TraceLens's definitions, gpu_timeline.py) as shares of its
    total; NaN for a rank without linked device work."""
    t = trace_timeline(rank.profile.analysis.trace)
    return {column: t.percent(field) for field, column in TIMELINE_SHARES.items()}


def skew_statement(rank: Rank) -> str:
    """The job's verdict for a rank that mostly waits for the slowest, before its own; "" for
    any other rank."""
    skew = rank.skew
    if skew is None:
        return ""
    after = f"; next: {skew.runner_up} {skew.runner_up_share:.0%}" if skew.runner_up else ""
    shown = f", of {rank.bound.step.name}" if rank.bound else ""
    return (f"waiting for rank {skew.slowest} (skew): {skew.share:.0%} of its step is waiting in "
            f"collectives for that rank{after}. Its own trace says{shown}: ")


def waiting_note(rank: Rank, steps: list[StepAcross]) -> str:
    """For a rank whose time in collectives is mostly waiting for another: how much, for whom.
    Its own verdict reads that wait as communication; this says what it is (after its skew
    statement, where the wait is its largest part)."""
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
    if len(ranks) < 2:  # the others could not be read (said above the table)
        return ["one rank read: nothing to compare across ranks"]
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
                         "communication: balance the ranks' work before tuning the "
                         f"collectives; {_what_slows(ranks, top, wait)}")
    for s in steps:
        if s.note:
            lines.append(f"{s.name}: {s.note}")
            break
    verdicts = Counter(r.verdict_kind for r in ranks)
    if len(verdicts) > 1:
        (common, n_common), (_, n_next) = verdicts.most_common(2)
        if n_common > n_next:
            said = f"most ranks {common}; " + ", ".join(
                f"rank {r.rank} {r.verdict}" for r in ranks if r.verdict_kind != common)
        else:  # no majority
            said = ", ".join(f"rank {r.rank} {r.verdict}" for r in ranks)
        waiting = [r for r in ranks if r.skew]
        if waiting:
            why = (f": {_ranks(waiting)} {'reads' if len(waiting) == 1 else 'read'} as bound on "
                   f"collectives in {'its' if len(waiting) == 1 else 'their'} own trace, but "
                   f"that time is waiting; what slows rank {top} sets the job's pace")
        elif matched and any(r.bound and r.bound.bound.kind in _COLLECTIVE_KINDS for r in ranks):
            why = f": a rank that waits for rank {top} reads as bound on its collectives"
        else:
            why = ""
        lines.append(f"verdicts differ: {said}{why}")
    return lines


# The slowest rank's extra time on one name, against the others' wait for it: this much of the
# wait, and the name is said as what slows it.
EXPLAINS = 0.5


def _what_slows(ranks: list[Rank], top: int, wait_us: float) -> str:
    slowest = next((r for r in ranks if r.rank == top), None)
    if slowest is None:
        return "what slows that rank is not in the traces"
    name, mine, theirs = slowest_extra(slowest.profile,
                                       [r.profile for r in ranks if r.rank != top])
    if not name or mine - theirs < EXPLAINS * wait_us:
        return ("no range or op of its own explains it (the traces do not show what slows that "
                "rank: another process on its cores, its data?)")
    others = (f"the other ranks at most {duration(theirs)}" if theirs > 0 else
              "the other ranks none")
    return f"rank {top} spends {duration(mine)} a step in {name}, {others}: that is what they wait for"


def _ranks(ranks: list[Rank]) -> str:
    numbers = [str(r.rank) for r in ranks]
    if len(numbers) == 1:
        return f"rank {numbers[0]}"
    return f"ranks {', '.join(numbers[:-1])} and {numbers[-1]}"
