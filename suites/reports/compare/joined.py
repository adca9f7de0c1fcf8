"""The join of A and B: one row per (suite, case_id, variant) found on either side, nothing
dropped; rows that cannot be compared say why in `note` (a `noisy` row, too few clean rounds,
a row only one side has). `n_a`, `n_b`: the clean rounds each side's verdict rests on; `ci_low`,
`ci_high` the 99% interval of B/A (faster or slower), `eq_low`, `eq_high` the 90% one
(equivalent), `mde` the smallest slowdown the pair would call with 80% power (a fraction),
`drift_sd` the drift of a run the row's model used, `floor` the equivalence band, `held` what
keeps the row from faster or slower whatever its intervals (decision.TWO_STATES): with these a
row's verdict is decision.verdict of its own columns."""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from suites.common.numbers import plain, times
from suites.reports.compare import decision
from suites.reports.compare.drift import Drift, drifts
from suites.reports.compare.loading import Side, shared_figure
from suites.reports.kit.change import Change
from suites.results.columns import KEY, Status
from suites.harness.two_states import two_states
from suites.results.intervals import run_ratio

COLUMNS = ["suite", "case_id", "variant", "dtype", "a_us", "b_us", "ratio",
           "ci_low", "ci_high", "eq_low", "eq_high", "verdict", "held", "mde", "drift_sd", "floor",
           "n_a", "n_b", "status_a", "status_b", "note"]
NAN = float("nan")
VERDICTS = [Change.FASTER, Change.SLOWER, Change.EQUIVALENT, Change.INCONCLUSIVE,
            "not comparable", "only in A", "only in B"]


@dataclass(frozen=True)
class Rule:
    floor: float = decision.FLOOR
    min_rounds: int = decision.MIN_ROUNDS
    drift_sd: float | None = None  # None: from the A/A control, else the default

    def __post_init__(self):
        if self.min_rounds < 2:  # a spread needs two rounds a side
            raise ValueError(f"min_rounds {self.min_rounds}: at least 2")


@dataclass(frozen=True)
class Basis:
    """What the verdicts rest on, said beside them: the rule, the round figure both sides were
    read by, the drift per suite, and the settings the two sides do not share."""
    rule: Rule
    figure: str
    drift: dict[str, Drift]
    differences: list[str]
    count_label = "rounds A/B"  # the tables' column of each row's clean rounds a side
    extra_cells_names = ()  # the tables' columns of its own: none

    def extra_cells(self, frame) -> dict:
        """Header -> a string per row of `frame`, for extra_cells_names."""
        return {}

    def lines(self) -> list[str]:
        floor = self.rule.floor
        drift = [f"drift: {d.reason}" if len(self.drift) == 1 else f"drift, {s}: {d.reason}"
                 for s, d in self.drift.items()]
        return [f"floor: {floor:.0%} (equivalent: the 90% interval of B/A within "
                f"{plain(1 / (1 + floor))} to {plain(1 + floor)}; faster or slower: the 99% "
                f"interval excludes 1; from {self.rule.min_rounds} clean rounds a side)",
                f"round figure: {self.figure} of rounds.csv, both sides"
                + ("" if self.figure == "mean_us" else
                   " (the mean over calls is missing in a run folder: written before it)"),
                *drift]

    def text(self) -> str:
        """The rule that produced the verdicts, in words."""
        rule = self.rule
        return (f"B/A is B's time per call over A's: below 1, B is faster. The unit of evidence "
                f"is a timing round ({self.figure} of rounds.csv: the calls of one round share "
                f"one machine state): each side needs {rule.min_rounds} clean rounds. The spread "
                "of B/A is the round noise of both sides (Welch) plus the drift of each run: two "
                "runs of one commit land in different machine states by more than their rounds "
                f"show. Equivalent: the 90% interval lies within {plain(1 / (1 + rule.floor))} "
                f"to {plain(1 + rule.floor)} (+-{rule.floor:.0%}, two one-sided tests at 5%); "
                "else faster or slower: the 99% interval excludes 1; else inconclusive. mde: the "
                "smallest change the pair would call with 80% power; an inconclusive row could "
                "not have seen a smaller one.")


def _value(row, column):
    if row is None or column not in row.index:
        return None
    value = row[column]
    return None if isinstance(value, float) and math.isnan(value) else value


def _ok_value(row, column):
    """A figure of an ok row; a noisy row's figures are not results, so they are not shown."""
    return _value(row, column) if row is not None and row["status"] == Status.OK else None


def _status_note(label: str, row) -> str:
    reason = _value(row, "reason")
    return f"{label} {row['status']}" + (f": {reason}" if reason else "")


def _two_states(a_rounds, b_rounds) -> str:
    """The sides whose clean round figures show two states of the variant's own (as the
    two_states finding reads them; from the rounds, so an older run is read alike), in words
    ("" when neither does)."""
    parts = []
    for label, figures in (("A", a_rounds), ("B", b_rounds)):
        states = two_states(list(figures))
        if states is not None:
            parts.append(f"{label}: {states.slow_rounds} of {states.rounds} rounds "
                         f"{states.factor:.2f}x slower")
    return "; ".join(parts)


def _judge(out: dict, a_rounds, b_rounds, rule: Rule, drift: Drift) -> None:
    """Fill ratio, CI, verdict and note for a row that is ok on both sides. A variant in two
    states of its own on either side is never called faster or slower: its runs mix the states
    differently (eager LayerNorm at T8192 here: 19-28k us or 63-104k us a round by its page
    faults, mostly slow in one run and mostly fast in the next), and the drift model, which is
    the machine's, cannot tell that from a change of the code."""
    if min(out["n_a"], out["n_b"]) < rule.min_rounds:
        # Still show the ratio of the rows' recorded times: useful, just not a decision.
        a, b = out["a_us"], out["b_us"]
        out["ratio"] = b / a if a and b and a > 0 else NAN
        out["verdict"] = "not comparable"
        out["note"] = (f"too few rounds (A {out['n_a']}, B {out['n_b']}; {rule.min_rounds} clean "
                       "rounds a side needed): ratio of the rows' recorded times, no CI")
        return
    r = run_ratio(a_rounds, b_rounds, drift.sd, drift.dof)
    states = _two_states(a_rounds, b_rounds)
    held = decision.TWO_STATES if states else None
    cls, unheld = decision.change(r, rule.floor, held), decision.change(r, rule.floor)
    out.update(ratio=r.ratio, ci_low=r.low, ci_high=r.high, eq_low=r.eq_low, eq_high=r.eq_high,
               mde=r.mde, verdict=str(cls), held=held,
               note=decision.note(r, rule.floor, cls, aa_control=drift.from_aa_control))
    if cls != unheld:
        out["note"] = (f"would read {unheld}, but the variant runs in two states of its own "
                       f"({states}): the runs mix them differently, which is not a change of "
                       "the code; the two_states finding says more")


def _pair(key: tuple, a, b, a_rounds, b_rounds, rule: Rule, drift: Drift,
          figure: str = "mean_us") -> dict:
    """One row of the join; a_us and b_us are the rows' own figure of the kind the rounds
    use (us/call, or the median where a side's rounds have no mean)."""
    out = dict(zip(KEY, key))
    out.update(dtype=_value(a, "dtype") or _value(b, "dtype"),
               a_us=_ok_value(a, figure), b_us=_ok_value(b, figure),
               ratio=NAN, ci_low=NAN, ci_high=NAN, eq_low=NAN, eq_high=NAN, mde=NAN,
               held=None, drift_sd=drift.sd, floor=rule.floor,
               n_a=0 if a_rounds is None else len(a_rounds),
               n_b=0 if b_rounds is None else len(b_rounds),
               status_a=_value(a, "status"), status_b=_value(b, "status"), note="")
    if a is None or b is None:
        label, row = ("B", b) if a is None else ("A", a)
        out["verdict"] = f"only in {label}"
        out["note"] = "" if row["status"] == Status.OK else _status_note(label, row)
    elif a["status"] != Status.OK or b["status"] != Status.OK:
        out["verdict"] = "not comparable"
        if (a["status"], a["reason"]) == (b["status"], b["reason"]):
            out["note"] = _status_note("A and B", a)  # one sentence, not the same one twice
        else:
            out["note"] = "; ".join(_status_note(label, row) for label, row in (("A", a), ("B", b))
                                    if row["status"] != Status.OK)
    else:
        _judge(out, a_rounds, b_rounds, rule, drift)
    return out


def compare_rows(side_a: Side, side_b: Side, rule: Rule = Rule(), figure: str | None = None,
                 drift: dict[str, Drift] | None = None) -> pd.DataFrame:
    """A's rows in A's order, then the rows only B has, in B's order. `figure`: the round figure
    (loading.shared_figure's by default); `drift`: suite -> drift (drift.drifts' by default)."""
    figure = figure or shared_figure(side_a, side_b)
    drift = drifts(side_a, side_b, rule.drift_sd) if drift is None else drift
    a_rounds, b_rounds = side_a.rounds(figure), side_b.rounds(figure)
    a_rows = {tuple(r[k] for k in KEY): r for _, r in side_a.rows.iterrows()}
    b_rows = {tuple(r[k] for k in KEY): r for _, r in side_b.rows.iterrows()}
    keys = list(a_rows) + [k for k in b_rows if k not in a_rows]
    pairs = [_pair(k, a_rows.get(k), b_rows.get(k), a_rounds.get(k), b_rounds.get(k), rule,
                   drift.get(k[0]) or Drift(rule.drift_sd or 0.0, ""), figure) for k in keys]
    return pd.DataFrame(pairs, columns=COLUMNS)


# A case whose every variant moved the same way by at least this much, all within SPREAD of
# one another, moved as a whole: said beside its rows' calls (an A/A pair here had a case 1.5-1.9x
# slower in one run, every variant and its baseline alike, while the machine was busy).
MOVED, SPREAD = 1.10, 1.25


def moved_together(frame: pd.DataFrame) -> list[str]:
    """A line per case with a row called faster or slower whose every compared variant, its
    baseline too, moved together: the whole case ran at another speed in one run (the machine
    while it ran), or something all its variants share changed. A variant's own change shows
    against the others in its run (its speedup), which a move of the whole case leaves alone."""
    lines = []
    compared = frame[frame["ratio"].notna()]
    for (suite, case), rows in compared.groupby(["suite", "case_id"], sort=False):
        ratios = rows["ratio"]
        called = rows["verdict"].isin([Change.FASTER, Change.SLOWER]).any()
        same_way = (ratios > MOVED).all() or (ratios < 1 / MOVED).all()
        if len(rows) < 2 or not called or not same_way or ratios.max() > SPREAD * ratios.min():
            continue
        lines.append(f"{case} ({suite}): every variant moved together, B/A "
                     f"{plain(ratios.min())} to {plain(ratios.max())} ({', '.join(rows['variant'])})"
                     ": the whole case ran at another speed in one run (the machine while it "
                     "ran?) or something its variants share changed; a variant's own change "
                     "shows in its speedup over the others in each run")
    return lines


def summary_lines(frame: pd.DataFrame) -> list[str]:
    """Counts per verdict, then the largest speedup and slowdown among decided rows."""
    counts = frame["verdict"].value_counts()
    lines = [f"{len(frame)} rows: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS
                                                if v in counts)]
    for verdict, pick in ((Change.FASTER, "idxmin"), (Change.SLOWER, "idxmax")):
        word = "speedup" if verdict == Change.FASTER else "slowdown"
        rows = frame[frame["verdict"] == verdict]
        if rows.empty:
            lines.append(f"largest {word}: none")
            continue
        row = rows.loc[getattr(rows["ratio"], pick)()]
        factor = 1 / row["ratio"] if verdict == Change.FASTER else row["ratio"]
        lines.append(f"largest {word}: {row['case_id']} {row['variant']}: B/A "
                     f"{plain(row['ratio'])} (99% CI {plain(row['ci_low'])} to "
                     f"{plain(row['ci_high'])}), B {times(factor)} {verdict}")
    if (frame["verdict"] == Change.INCONCLUSIVE).any():
        mde = frame.loc[frame["verdict"] == Change.INCONCLUSIVE, "mde"]
        lines.append("inconclusive: neither a change (the 99% interval of B/A spans 1) nor shown "
                     "equivalent (the 90% interval reaches beyond the floor); these rows could "
                     f"have seen a change of {mde.min():.0%} to {mde.max():.0%} (mde)")
    lines += moved_together(frame)
    return lines


def shared_rows(frame: pd.DataFrame) -> int:
    """The rows both sides hold: with none there is nothing to compare (command.py refuses)."""
    return int((frame["status_a"].notna() & frame["status_b"].notna()).sum())
