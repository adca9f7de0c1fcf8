"""An A/B design's runs read per side: each pair's rows (pairs.read_cells), and each side as
compare's Side (its run folders, env.json and what they leave unsaid), for the pages' "Runs"
table and lines to read with care: a run that failed or was never made, a run the machine kept
busy, a checkout whose commit is not all of its code.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from suites.reports.ab.plan import Plan
from suites.results.ab_folders import A, A2, B, RUNS_DIR, run_folder
from suites.reports.ab.pairs import Cell, read_cells
from suites.reports.compare.loading import Side, run_settings
from suites.reports.kit.banner import BUSY_NEIGHBOURS, state_line
from suites.results.reader import RunFolder

# Settings of a run that are the machine's at the time, not the code's or the sweep's: they
# differ from run to run within one side too, and a pair shares them.
PER_RUN = ("other work during the rounds",)


def cells_of(plan: Plan, out_dir: Path, label: str) -> list[dict[tuple, Cell] | None]:
    """Pair i's rows of one side, in pair order (None: no rows)."""
    return [read_cells(run_folder(out_dir, i, label)) for i in range(plan.pairs)]


def _care(plan: Plan, label: str, run: RunFolder) -> list[str]:
    name = run.folder.name
    lines = []
    record = plan.runs.get(name, {})
    if not (run.folder / "measurements.csv").is_file():
        lines.append(f"{label}: {name}: no rows" + (f" ({record['state']})" if record.get("state")
                                                     else ": not run yet (resume the design)"))
        return lines
    state = state_line(run.folder, run.state)
    if state:
        lines.append(f"{label}: {state}")
    others = (run.env.get("rounds") or {}).get("others_cores_mean")
    if others is not None and others >= BUSY_NEIGHBOURS:
        lines.append(f"{label}: {name}: other processes kept {others:.1f} cores busy on average "
                     "while its rounds ran (its pair's ratio carries it; the spread of the pairs "
                     "shows it)")
    return lines


def side(plan: Plan, out_dir: Path, label: str) -> Side:
    """One side's runs as compare's Side (no rows: the pairs hold them)."""
    folders = [run_folder(out_dir, i, label) for i in range(plan.pairs)]
    runs = [RunFolder(f) for f in folders]
    checkout = plan.checkout(A if label == A2 else label)
    care = [line for r in runs for line in _care(plan, label, r)]
    if checkout.dirty:
        care.insert(0, f"{label}: {checkout.asked} has uncommitted changes: its commit "
                       f"{checkout.commit[:12]} is not all of the code it ran")
    envs = [r.env for r in runs if (r.folder / "env.json").is_file()]
    return Side(label, Path(out_dir) / RUNS_DIR / f"*_{label}", folders, pd.DataFrame(),
                envs=envs, incomplete=care)


def differences(plan: Plan, out_dir: Path, first: str = A, second: str = B) -> list[str]:
    """A line per setting the two sides' runs do not share, as compare says it; the machine's
    own state at the time (PER_RUN) is not a setting."""
    values: dict[str, dict[str, set]] = {first: {}, second: {}}
    for label in (first, second):
        for i in range(plan.pairs):
            folder = run_folder(out_dir, i, label)
            if not (folder / "env.json").is_file():
                continue
            for name, value in run_settings(RunFolder(folder)).items():
                if name not in PER_RUN:
                    values[label].setdefault(name, set()).add(value)
    lines = []
    for name in dict.fromkeys([*values[first], *values[second]]):
        va, vb = values[first].get(name), values[second].get(name)
        if va and vb and va != vb:
            lines.append(f"{name}: {first} {', '.join(sorted(va))}, "
                         f"{second} {', '.join(sorted(vb))}")
    return lines

