"""The audit of a folder `--suggest` wrote (command.py): each statement its files make, tested
against the numbers it rests on and against the other files. Checks (each a code):

- unstated_time: a replay time only with a verdict that states one (verdict.STATED);
- replay_clean_rounds: a stated time has MIN_CLEAN_ROUNDS clean rounds and a 95% interval that
  holds it;
- replay_rounds: a stated time is the mean of its clean rounds in replay_rounds.csv (times the
  factor its shape was scaled by), as many as the row says, its interval no narrower than their
  spread allows;
- replay_verdict: the ratios are trace / replay at the interval's ends, and the verdict is the
  one verdict.verdict reads from them;
- cause_evidence: the cause said is the one verdict.cause_of reads from the row's own evidence
  numbers, and its words with those numbers are in the note;
- sweep_cases: the experiment sweeps exactly the mapped groups (block, shape scaled as its
  _trace says, dtype), one job per block;
- sweep_trace: the experiment's covered time per step is the mapped groups' in suggest.csv;
- sweep_command: the command in the experiment's header runs this folder's experiment;
- finite: every number in the files is one a page may state.
"""
from __future__ import annotations

import math
import re
import statistics
from pathlib import Path

import pandas as pd

from suites.common.audit import Audit, Tally, finite
from suites.common.errors import InputError
from suites.harness.case_run import MIN_CLEAN_ROUNDS
from suites.results.intervals import t95
from suites.suggest import verdict as judged
from suites.suggest.files import ROUNDS, TABLE
from suites.traces.suggest.experiment import FILE, TRACE_KEY
from suites.traces.suggest.scaling import scaled

KIND = "suggest"
TOLERANCE = 1e-6  # what a number loses on its way through a CSV file


def looks_like(folder) -> bool:
    """A folder `--suggest` wrote: it holds suggest.csv, which nothing else writes."""
    return (Path(folder) / TABLE).is_file()


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=1e-9)


def _number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _stated_time(t: Tally, row: dict, rounds: pd.DataFrame | None) -> None:
    where, us = row["group"], _number(row["replay_us"])
    low, high = _number(row["replay_low_us"]), _number(row["replay_high_us"])
    clean = _number(row["replay_rounds"])
    t.test(clean >= MIN_CLEAN_ROUNDS and low <= us <= high, "replay_clean_rounds", where,
           f"suggest.csv: replay {us:.4g} us (95% {low:.4g} to {high:.4g})",
           f"its clean rounds: {clean:g} ({MIN_CLEAN_ROUNDS} needed)")
    mine = (rounds[(rounds["group"] == where) & (rounds["state"] == "clean")]["figure_us"]
            .astype(float).tolist() if rounds is not None else [])
    scale = _number(row["replay_scaled_by"])
    mean = statistics.fmean(mine) * scale if mine else math.nan
    half = (t95(len(mine) - 1) * statistics.stdev(mine) / math.sqrt(len(mine)) * scale
            if len(mine) > 1 else math.nan)
    t.test(len(mine) == clean and _close(mean, us) and high - low >= 2 * half * (1 - TOLERANCE),
           "replay_rounds", where,
           f"suggest.csv: replay {us:.4g} us (95% {low:.4g} to {high:.4g}) from {clean:g} clean "
           "rounds",
           f"{ROUNDS}: {len(mine)} clean rounds, mean {mean:.4g} us, +-{half:.4g} us"
           + (" (no rounds file)" if rounds is None else ""))


def _verdict(t: Tally, row: dict) -> None:
    where, said = row["group"], row["replay_verdict"]
    trace, us = _number(row["trace_us_per_instance"]), _number(row["replay_us"])
    low, high = _number(row["trace_over_replay_low"]), _number(row["trace_over_replay_high"])
    if said in judged.STATED:
        ends = judged.ratio_interval(trace, _number(row["replay_low_us"]),
                                     _number(row["replay_high_us"]))
        t.test(_close(ends[0], low) and _close(ends[1], high)
               and _close(trace / us, _number(row["trace_over_replay"])), "replay_verdict",
               where, f"suggest.csv: trace / replay x{_number(row['trace_over_replay']):.3g} "
               f"(x{low:.3g} to x{high:.3g})",
               f"trace {trace:.4g} us over replay {us:.4g} us: x{ends[0]:.3g} to x{ends[1]:.3g}")
    t.test(judged.verdict(low, high) == said, "replay_verdict", where,
           f"suggest.csv: {said}", f"its interval x{low:.3g} to x{high:.3g}: "
           f"{judged.verdict(low, high)}")


def _replay(t: Tally, row: dict, rounds: pd.DataFrame | None) -> None:
    said = row["replay_verdict"]
    if said in judged.STATED:
        _stated_time(t, row, rounds)
    else:
        shown = [c for c in ("replay_us", "replay_low_us", "replay_high_us", "trace_over_replay")
                 if not math.isnan(_number(row[c]))]
        t.test(not shown, "unstated_time", row["group"],
               f"suggest.csv: {', '.join(f'{c}={row[c]}' for c in shown)}",
               f"its verdict {said} states no replay time")
    if said in (*judged.STATED, judged.UNDECIDED):
        _verdict(t, row)
    cause, words = _text(row.get("replay_cause")), judged.cause_words(row)
    t.test(cause == judged.cause_of(row) and words in _text(row.get("replay_note")),
           "cause_evidence", row["group"], f"suggest.csv: cause {cause or 'none'}",
           "its evidence: " + ", ".join(f"{c}={row.get(c)}" for c in (
               "replay_verdict", "strided_inputs", "profiled_ops_per_call",
               "profiler_us_per_op_low", "profiler_us_per_op_high"))
           + f": cause {judged.cause_of(row) or 'none'}")


def _values(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split(", ") if "=" in part)


def _sweep(t: Tally, folder: Path, table: pd.DataFrame, body: dict | None) -> None:
    mapped = table[table["mapped"].astype(str) == "True"]
    if body is None:
        t.test(mapped.empty, "sweep_cases", "experiment", f"{TABLE}: {len(mapped)} mapped groups",
               f"{FILE}: absent")
        return
    table_of = body.get("suggested") or {}
    suites = {k: v for k, v in table_of.items() if k != TRACE_KEY}
    trace = table_of.get(TRACE_KEY) or {}
    jobs = str(((body.get("hydra") or {}).get("sweeper") or {}).get("params", {}).get("suite"))
    t.test(set(jobs.split(",")) == set(suites), "sweep_cases", "experiment",
           f"{FILE}: one job per suite of {jobs}", f"its table's suites: {sorted(suites)}")
    scale = float(trace.get("scale", 1.0))
    wanted = {(r["block"], tuple(sorted({k: str(v) for k, v in scaled(
        r["block"], {k: int(v) if v.isdigit() else v for k, v in _values(r["shape"]).items()},
        scale)[0].items()}.items())), r["dtype"]) for _, r in mapped.iterrows()}
    swept = set()
    for suite, entry in suites.items():
        points = [tuple(sorted((k, str(v[0])) for k, v in axes.items()))
                  for axes in entry.get("axes", [])]
        swept |= {(suite, p, d) for p in points for d in entry.get("dtypes", [])}
        groups = {(suite, tuple(sorted((k, str(v)) for k, v in g["values"].items())), g["dtype"])
                  for g in entry.get("groups", [])}
        t.test(groups == {w for w in wanted if w[0] == suite}
               and set(points) == {g[1] for g in groups}
               and set(entry.get("dtypes", [])) == {g[2] for g in groups}, "sweep_cases", suite,
               f"{FILE}: {len(points)} shape(s) x {entry.get('dtypes')}",
               f"{TABLE}: {sorted(w[1:] for w in wanted if w[0] == suite)}")
    t.test(wanted <= swept, "sweep_cases", "experiment", f"{FILE}: {len(swept)} case(s)",
           f"{TABLE}'s mapped groups not swept: {sorted(wanted - swept)}")
    covered = _number(mapped["us_per_step"].astype(float).sum())
    t.test(math.isclose(_number(trace.get("covered_us_per_step")), covered, rel_tol=TOLERANCE,
                        abs_tol=0.001), "sweep_trace", "experiment",
           f"{FILE}: covered {trace.get('covered_us_per_step')} us a step",
           f"{TABLE}: the mapped groups' {covered:.3f} us a step")
    _command(t, folder)


def _command(t: Tally, folder: Path) -> None:
    """The header's command runs this folder's experiment (or an identical copy of it)."""
    text = (folder / FILE).read_text()
    found = re.search(r"hydra\.searchpath=\[file://([^\]]+)\]", text)
    there = Path(found.group(1)) / FILE if found else None
    same = there is not None and there.is_file() and (
        there.resolve() == (folder / FILE).resolve() or there.read_text() == text)
    t.test(same, "sweep_command", "experiment",
           f"{FILE}: the command runs {there.parent.parent if there else 'no searchpath'}",
           f"this folder: {folder}")


def _finite(t: Tally, name: str, frame: pd.DataFrame) -> None:
    for column in frame.select_dtypes("number").columns:
        bad = [v for v in frame[column] if not finite(v)]
        t.test(not bad, "finite", f"{name} {column}", f"{name}: {column} = {bad[:3]}",
               "a number a page may state")


def _yaml_numbers(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _yaml_numbers(value)
    elif isinstance(node, list):
        for value in node:
            yield from _yaml_numbers(value)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield node


def audit(folder: Path) -> Audit:
    folder = Path(folder)
    if not looks_like(folder):
        raise InputError(f"{folder}: not a --suggest folder (no {TABLE})")
    t = Tally()
    table = pd.read_csv(folder / TABLE)
    rounds = pd.read_csv(folder / ROUNDS) if (folder / ROUNDS).is_file() else None
    _finite(t, TABLE, table)
    if rounds is not None:
        _finite(t, ROUNDS, rounds)
    for row in table.to_dict("records"):
        if _text(row.get("replay_verdict")):
            _replay(t, row, rounds)
    body = None
    if (folder / FILE).is_file():
        import yaml  # Hydra's dependency: only where an experiment was written
        body = yaml.safe_load((folder / FILE).read_text()) or {}
        bad = [v for v in _yaml_numbers(body) if not finite(v)]
        t.test(not bad, "finite", str(FILE), f"{FILE}: {bad[:3]}", "a number a page may state")
    _sweep(t, folder, table, body)
    return t.audit(folder, KIND)
