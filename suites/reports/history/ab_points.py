"""A/B designs in a history: each side of a design is one point, not one point per run.

An A/B design (python -m suites.compare --ab; suites/reports/ab) keeps its runs under
<design>/runs/p01_A, p01_B, p02_B, ... (and p01_A2: A's code again). Read as plain runs they
would zig-zag, A's code and B's in turn, and every one of them would be a step. Here the runs of
one side of one design are merged into one Run: its rows' figures are the geometric mean over
its runs, and its "rounds" are the runs themselves (round i: run i's mean_us and median_us), so
a point's interval is the spread between runs, drift included, the interval the design's own
verdicts come from. A's point (A and A2's runs) is placed at the design's first run and B's at
its last, so A comes before B in time as in the commits' order; a range's designs give a
point per commit each (a commit's B of one design and A of the next are two points).
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from suites.results.ab_folders import A, A2, side_of
from suites.results.columns import Status


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _merged_row(rows: list[dict]) -> dict:
    """A key's row over a side's runs: ok where most runs hold it ok, with the geometric mean
    of their time per call; the first ok run's other columns."""
    ok = [r for r in rows if r["status"] == Status.OK and r["mean_us"] > 0]
    if len(ok) * 2 <= len(rows):
        return dict(rows[0], status=next((r["status"] for r in rows
                                          if r["status"] != Status.OK), rows[0]["status"]))
    return dict(ok[0], mean_us=_geomean([r["mean_us"] for r in ok]),
                median_us=_geomean([r["median_us"] for r in ok if r["median_us"] > 0] or
                                   [r["mean_us"] for r in ok]))


def merge(runs: list, label: str, design: Path, when):
    """One loading.Run of a side's runs (loading.Run, made by `replace` on the first: loading
    reads this module, not the other way); `when`: the run whose `created` the point takes."""
    keys = list(dict.fromkeys(k for run in runs for k in run.rows))
    rows, rounds = {}, {}
    for key in keys:
        held = [run for run in runs if key in run.rows]
        rows[key] = _merged_row([run.rows[key] for run in held])
        rounds[key] = {i: (run.rows[key]["mean_us"], run.rows[key]["median_us"])
                       for i, run in enumerate(held)
                       if run.rows[key]["status"] == Status.OK and run.rows[key]["mean_us"] > 0}
    first = runs[0]
    env = dict(first.env, created=when.env.get("created"))
    return replace(first, folder=design / "runs" / f"*_{label}", env=env, rows=rows,
                   rounds=rounds, problems=[p for run in runs for p in run.problems],
                   design=f"{label} of A/B {design.name}, {len(runs)} runs",
                   files_folder=first.folder)


def merge_designs(runs: list) -> tuple[list, list[str]]:
    """The runs with each design's sides merged (other runs as they are), and a note per
    design read so."""
    groups: dict[tuple[Path, str], list] = {}
    out = []
    for run in runs:
        side = side_of(run.folder)
        if side is None:
            out.append(run)
        else:  # A2 is A's code again: one more run of A's point
            design, label = side
            groups.setdefault((design, A if label == A2 else label), []).append(run)
    notes = []
    for design in dict.fromkeys(d for d, _ in groups):
        sides = {label: groups.get((design, label), []) for label in ("A", "B")}
        every = [r for rs in sides.values() for r in rs]
        dated = sorted((r for r in every if r.created is not None), key=lambda r: r.created)
        first, last = (dated[0], dated[-1]) if dated else (every[0], every[-1])
        for label, members in sides.items():
            if members:
                out.append(merge(members, label, design, first if label == "A" else last))
        notes.append(f"A/B design {design}: {len(sides['A'])} runs of A and {len(sides['B'])} "
                     "of B read as one point a side (their spread its interval)")
    return out, notes
