"""An A/B design's rows judged by its pairs: per (suite, case_id, variant), the log ratio
log(B_i / A_i) of each pair in which both runs hold the row ok, and the model of those
(intervals.pair_ratio: Yuen's trimmed mean, a pair gone astray set aside at each end): B/A, its
99% and 90% intervals, the mde, and the verdict by compare's one rule (decision.verdict). The machine's state is shared by the two runs of a pair
and cancels in its ratio; what does not cancel (the runs' own drift, their rounds' noise) shows
in the pairs' spread, so it is measured, never assumed.

Each row also says the drift the pairs show beyond their rounds' noise (`drift_sd`: the sd of
one run's offset, from var(pair log ratios) = 2 drift^2 + the rounds' noise of both means), so
a reader sees what two single runs would have faced.

The frame has compare's columns (joined.COLUMNS: the same audit holds it), with n_a and n_b the
pairs each side holds the row ok in, a_us and b_us the geometric means over the pairs the
trimmed mean kept (so b_us / a_us is the ratio), and three of its own: `pairs` (used),
`pair_ratios` (each pair's B/A in pair order, ';'-joined; blank for a pair left out) and
`pair_sd` (the winsorized sd of their logs: the spread the interval uses).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from suites.common.errors import InputError
from suites.reports.compare import decision
from suites.reports.compare.joined import COLUMNS
from suites.reports.compare.loading import clean_rounds, round_figures
from suites.reports.kit.change import Change
from suites.results.columns import KEY, Status
from suites.results.intervals import MIN_PAIRS, pair_ratio
from suites.results.reader import read_run

# rel_*: the row's time over its case's baseline's in the same run, B's over A's, judged by the
# pairs alike (blank for the baseline itself and where fewer than MIN_PAIRS pairs have both).
RELATIVE = ["rel_ratio", "rel_low", "rel_high", "rel_mde", "rel_verdict"]
AB_COLUMNS = [*COLUMNS, "pairs", "pair_sd", "pair_ratios", *RELATIVE]
NAN = float("nan")
FIGURE = "mean_us"  # a row's time per call in a run: its headline, what compare reads too


@dataclass(frozen=True)
class Cell:
    """One row of one run: its status, why, its time per call, the variance of that time's log
    from the run's own rounds (NaN: too few clean rounds to say), and its time over its case's
    baseline's in the same run, in logs (NaN: the baseline itself, or not ok)."""
    status: str
    reason: str
    us: float
    round_var: float
    dtype: str
    rel_log: float = NAN


def _round_vars(run) -> dict[tuple, float]:
    """key -> var(log round figure) / rounds: the round noise of the run's mean, in logs."""
    clean = clean_rounds(run.rounds, str(run.folder))
    out = {}
    for key, figures in round_figures(clean, FIGURE).items():
        if len(figures) >= 2:
            out[key] = float(np.var(np.log(figures), ddof=1) / len(figures))
    return out


def read_cells(folder: Path) -> dict[tuple, Cell] | None:
    """A run folder's rows as cells; None where it holds no readable rows (a run that failed
    before any, or was never made)."""
    if not (Path(folder) / "measurements.csv").is_file():
        return None
    try:
        run = read_run(folder, samples=False)
        rows = run.measurements
        variances = _round_vars(run) if run.rounds is not None else {}
    except InputError:
        return None
    records = rows.to_dict("records")
    base = _baselines(records)
    cells = {}
    for row in records:
        key = tuple(row[k] for k in KEY)
        reason = row.get("reason")
        us, (baseline, base_us) = _us(row), base.get(key[:2], ("", NAN))
        rel = math.log(us / base_us) if math.isfinite(us) and math.isfinite(base_us) and \
            row["status"] == Status.OK and key[2] != baseline else NAN
        cells[key] = Cell(str(row["status"]), reason if isinstance(reason, str) else "", us,
                          variances.get(key, NAN), str(row.get("dtype") or ""), rel)
    return cells


def _us(row: dict) -> float:
    us = row.get(FIGURE)
    return float(us) if isinstance(us, (int, float)) and us == us and us > 0 else NAN


def _baselines(records: list[dict]) -> dict[tuple, tuple[str, float]]:
    """(suite, case_id) -> (its baseline variant, its time per call in this run), where the
    baseline is ok: the row whose speedup is exactly 1 with its interval (every run writes its
    baseline's so)."""
    out = {}
    for row in records:
        if row["status"] == Status.OK and all(row.get(c) == 1 for c in
                                              ("speedup", "speedup_low", "speedup_high")):
            out[(row["suite"], row["case_id"])] = (row["variant"], _us(row))
    return out


def _ok(cell: Cell | None) -> bool:
    return cell is not None and cell.status == Status.OK and math.isfinite(cell.us)


def _status(cells: list[Cell | None]) -> str | None:
    """A side's status over its runs: ok where most runs that hold the row have it ok, else
    the commonest other status; None where no run holds the row."""
    held = [c.status for c in cells if c is not None]
    if not held:
        return None
    ok = sum(s == Status.OK for s in held)
    return Status.OK if ok * 2 > len(held) else max(set(held) - {Status.OK} or {Status.OK},
                                                    key=held.count)


def _left_out(label: str, cells: list[Cell | None]) -> str:
    """Why some runs of a side did not give the row: `A noisy in 2 (reason)`."""
    counts: dict[str, int] = {}
    for c in cells:
        if not _ok(c):
            what = "missing" if c is None else c.status + (f" ({c.reason})" if c.reason else "")
            counts[what] = counts.get(what, 0) + 1
    return "; ".join(f"{label} {what} in {n} run(s)" for what, n in counts.items())


def _not_comparable(a: list[Cell | None], b: list[Cell | None], used: int, left: str) -> str:
    """Why a row has too few pairs: one sentence where every run of both sides says the same
    (a variant skipped on this device in all of them), else the count and each side's runs."""
    said = {(c.status, c.reason) for c in a + b if c is not None}
    if len(said) == 1 and None not in a + b:
        status, reason = said.pop()
        if status != Status.OK:
            return f"A and B {status}" + (f": {reason}" if reason else "")
    return f"ok on both sides in {used} pair(s), {MIN_PAIRS} needed" + (f": {left}" if left
                                                                         else "")


def _drift(pair_sd: float, variances: list[float]) -> float:
    """The sd of one run's offset the pairs show beyond their rounds' noise (NaN: no rounds to
    say the noise by): var(pair log ratios) = 2 drift^2 + both runs' round noise of the mean,
    with the pairs' plain sd (the winsorized one understates a variance by half)."""
    if not variances or not all(math.isfinite(v) for v in variances):
        return NAN
    return math.sqrt(max(0.0, pair_sd ** 2 - float(np.mean(variances))) / 2)


def judge_row(key: tuple, a: list[Cell | None], b: list[Cell | None], floor: float) -> dict:
    """One row of the design: its cells per pair, A's and B's, in pair order."""
    used = [i for i, (ca, cb) in enumerate(zip(a, b)) if _ok(ca) and _ok(cb)]
    dtype = next((c.dtype for c in a + b if c is not None and c.dtype), "")
    out = dict(zip(KEY, key), rel_ratio=NAN, rel_low=NAN, rel_high=NAN, rel_mde=NAN,
               rel_verdict=None, dtype=dtype, a_us=NAN, b_us=NAN, ratio=NAN, ci_low=NAN,
               ci_high=NAN, eq_low=NAN, eq_high=NAN, held=None, mde=NAN, drift_sd=NAN,
               floor=floor, n_a=sum(map(_ok, a)), n_b=sum(map(_ok, b)), status_a=_status(a),
               status_b=_status(b), note="", pairs=len(used), pair_sd=NAN,
               pair_ratios=";".join(f"{b[i].us / a[i].us:.6g}" if i in used else ""
                                    for i in range(len(a))))
    left = "; ".join(x for x in (_left_out("A", a), _left_out("B", b)) if x)
    if out["status_a"] is None or out["status_b"] is None:
        out["verdict"] = "only in B" if out["status_a"] is None else "only in A"
        out["n_a" if out["status_a"] is None else "n_b"] = 0
        return out
    if len(used) < MIN_PAIRS:
        out.update(verdict="not comparable", note=_not_comparable(a, b, len(used), left))
        return out
    # Judged: ok on both sides in enough pairs, whatever the other runs said (their counts are
    # in the note), so the statuses say ok as every judged compare row's do.
    out.update(status_a=Status.OK, status_b=Status.OK)
    logs = [math.log(b[i].us / a[i].us) for i in used]
    model = pair_ratio(logs)
    r = model.ratio
    cls = decision.change(r, floor)
    # The pairs the trimmed mean kept (the middle ones by log ratio): their geometric means are
    # a_us and b_us, so b_us / a_us is the row's B/A.
    by_ratio = sorted(range(len(used)), key=lambda j: logs[j])
    kept = [used[j] for j in by_ratio[model.trimmed:len(used) - model.trimmed]]
    out.update(a_us=math.exp(np.mean([math.log(a[i].us) for i in kept])),
               b_us=math.exp(np.mean([math.log(b[i].us) for i in kept])),
               ratio=r.ratio, ci_low=r.low, ci_high=r.high, eq_low=r.eq_low, eq_high=r.eq_high,
               mde=r.mde, verdict=str(cls), pair_sd=model.pair_sd,
               drift_sd=_drift(statistics.stdev(logs),
                               [a[i].round_var + b[i].round_var for i in used]))
    out.update(_relative(a, b, used, floor))
    notes = []
    if cls == Change.INCONCLUSIVE:
        notes.append(f"detectable: {r.mde:.0%}; more pairs (--pairs) would tell")
    elif cls == Change.EQUIVALENT and (r.low > 1 or r.high < 1):
        notes.append(f"a shift, but within the {floor:.0%} floor")
    if left:
        notes.append(f"{len(used)} of {len(a)} pairs used: {left}")
    out["note"] = "; ".join(notes)
    return out


def _relative(a: list[Cell], b: list[Cell], used: list[int], floor: float) -> dict:
    """The row against its case's baseline in the same runs, judged by the pairs as the time
    is: what moved a whole case in one run (every variant alike: the machine while it ran)
    cancels there, so a change of the variant's own code shows at a few percent where the time
    view is inconclusive; a change of the baseline shows in every other variant's, the other
    way. {} for the baseline itself, or with fewer than MIN_PAIRS pairs."""
    logs = [b[i].rel_log - a[i].rel_log for i in used
            if math.isfinite(a[i].rel_log) and math.isfinite(b[i].rel_log)]
    if len(logs) < MIN_PAIRS:
        return {}
    r = pair_ratio(logs).ratio
    return dict(rel_ratio=r.ratio, rel_low=r.low, rel_high=r.high, rel_mde=r.mde,
                rel_verdict=str(decision.change(r, floor)))


def judge(a_runs: list[dict | None], b_runs: list[dict | None], floor: float) -> pd.DataFrame:
    """Every row either side's runs hold, judged by the pairs (a_runs[i] and b_runs[i]: pair
    i's cells; None for a run with no rows), A's rows in their order, then B's own."""
    keys = list(dict.fromkeys(k for cells in a_runs + b_runs if cells for k in cells))
    rows = [judge_row(key, [c.get(key) if c else None for c in a_runs],
                      [c.get(key) if c else None for c in b_runs], floor) for key in keys]
    return pd.DataFrame(rows, columns=AB_COLUMNS)
