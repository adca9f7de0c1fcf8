"""One side of a comparison: every run folder under a path, their rows, their clean timing rounds
(rounds.csv), what each run was (run.json's config, env.json) and its A/A control, if any.

A round's figure is rounds.csv's `mean_us` (the round's mean over its calls: what a caller pays,
the headline) where the folder has it, else its `median_us` (folders written before the mean
was); `shared_figure` picks one for both sides, so a mean is never set against a median.

A side is a run folder or any folder holding run folders (a multirun sweep, a results/ tree);
run folders are found by their measurements.csv. Each (suite, case_id, variant) must appear
once per side: when two run folders of a side hold the same row there is no safe way to pick
one (the newest is not always the one meant: a rerun with another timing preset, a sweep over
thread counts), so that is an error naming the row and the folders, and the user passes the
folder they mean.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from suites.common.errors import InputError
from suites.reports.kit.banner import BUSY_NEIGHBOURS, state_line
from suites.results.columns import AA_CONTROL, KEY
from suites.results.tables import MEASUREMENTS_CSV
from suites.results.reader import RunFolder, read_run
from suites.results.run_folders import find_runs, sweep_problems

# rounds.csv's figures of a round, the preferred first: the mean over calls is the headline (a
# cost paid by a few calls reaches it); the median is what folders before it hold.
ROUND_FIGURES = ("mean_us", "median_us")
# Timing settings that do not change what a row measures, or that are compared resolved: the
# preset by name, threads as env.json resolved them, the timeout only stops a case.
UNTIMED = ("preset", "threads", "case_timeout_s", "aa_control")  # aa_control: one more row
CLEAN_COLUMNS = [*KEY, "round", *ROUND_FIGURES, "run"]


@dataclass
class RunFacts:
    """What one run folder was, for telling whether two runs can be compared: its suite, the
    settings that change what a row means or how it was timed, and its A/A control."""
    folder: str
    suite: str
    settings: dict[str, str]        # name -> value, e.g. "timing preset" -> "quick"
    aa_logs: list[np.ndarray] | None  # per case, log(aa_control / baseline) per paired round;
                                      # None: the run has no A/A control


@dataclass
class Side:
    label: str                      # "A" or "B"
    path: Path                      # as the user gave it
    runs: list[Path]                # run folders found under it, sorted
    rows: pd.DataFrame              # measurements.csv rows of every run, plus a `run` column
    clean: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CLEAN_COLUMNS))
    envs: list[dict] = field(default_factory=list)                  # env.json per run
    incomplete: list[str] = field(default_factory=list)  # a line per run that did not finish
    facts: list[RunFacts] = field(default_factory=list)  # per run folder

    def has_figure(self, column: str) -> bool:
        """Every run folder of the side has `column` in its clean rounds."""
        return all(_has_figure(self.clean[self.clean["run"] == str(run)], column)
                   for run in self.runs)

    def rounds(self, column: str) -> dict[tuple, np.ndarray]:
        """key -> the clean rounds' `column` (one of ROUND_FIGURES)."""
        return round_figures(self.clean, column)


def _find_runs(path: Path) -> list[Path]:
    if path.is_file():  # a run's measurements.csv names its run folder
        if path.name != MEASUREMENTS_CSV:
            raise InputError(f"{path}: not a folder; pass a run folder or a folder of runs")
        return [path.parent]
    return find_runs(path)


def _has_figure(clean: pd.DataFrame, column: str) -> bool:
    return clean.empty or bool(pd.to_numeric(clean[column], errors="coerce").gt(0).any())


def clean_rounds(rounds: pd.DataFrame | None, run: str) -> pd.DataFrame:
    """The rounds rounds.csv marks clean, with each of ROUND_FIGURES (NaN where the folder has
    no such column); none where there is no rounds.csv (nothing to judge a row by)."""
    if rounds is None or not set(KEY + ("round", "state")) <= set(rounds.columns):
        return pd.DataFrame(columns=CLEAN_COLUMNS)
    clean = rounds[rounds["state"] == "clean"]
    return clean.assign(**{c: np.nan for c in ROUND_FIGURES if c not in clean.columns},
                        run=run)[CLEAN_COLUMNS]


def round_figures(clean: pd.DataFrame, column: str) -> dict[tuple, np.ndarray]:
    """key -> the clean rounds' figures in `column`, in round order; a figure that is missing or
    not above 0 is left out."""
    values = pd.to_numeric(clean[column], errors="coerce")
    kept = clean.assign(value=values)[np.isfinite(values) & (values > 0)]
    return {key: group.sort_values("round")["value"].to_numpy(dtype=float)
            for key, group in kept.groupby(list(KEY), sort=False)}


def shared_figure(a: Side, b: Side) -> str:
    """The round figure both sides have: the mean where every run folder has it, else the
    median (an older folder on either side)."""
    return next(c for c in ROUND_FIGURES if c == ROUND_FIGURES[-1] or
                (a.has_figure(c) and b.has_figure(c)))


def _aa_logs(clean: pd.DataFrame, rows: pd.DataFrame, baseline: str | None) -> list | None:
    """Per case, log(aa_control / baseline) in each round both were clean in (the run's own
    figure: its mean where it has one); None where the run has no A/A control."""
    if baseline is None or not (rows["variant"] == AA_CONTROL).any():
        return None
    column = next(c for c in ROUND_FIGURES if _has_figure(clean, c) or c == ROUND_FIGURES[-1])
    values = clean.assign(value=pd.to_numeric(clean[column], errors="coerce"))
    values = values[(values["value"] > 0) & values["variant"].isin([AA_CONTROL, baseline])]
    if values.empty:
        return []
    paired = values.pivot_table(index=["case_id", "round"], columns="variant",
                                values="value").dropna()
    if not {AA_CONTROL, baseline} <= set(paired.columns):
        return []
    logs = np.log(paired[AA_CONTROL] / paired[baseline])
    return [case.to_numpy() for _, case in logs.groupby(level="case_id", sort=False)]


def _baseline(run: RunFolder) -> str | None:
    """The variant the run's speedups are against (its block's); None where the block cannot
    be found (then its A/A control, if any, cannot be paired)."""
    try:
        return run.op.baseline
    except InputError:
        return None


def run_settings(run: RunFolder) -> dict[str, str]:
    """The settings two runs should share for their rows to compare like with like: the device
    and threads as resolved (env.json), torch, and the timing config (run.json)."""
    env, config = run.env, (run.state or {}).get("config") or {}
    timing = config.get("timing") if isinstance(config.get("timing"), dict) else {}
    # The config's device where env.json cannot say (missing or corrupt): unless it is `auto`,
    # which names no device (resolved at run time, into env.json).
    asked = config.get("device") if config.get("device") != "auto" else None
    settings = {"device": env.get("device") or asked,
                "machine": env.get("gpu") or env.get("cpu"),
                "threads": env.get("threads"), "torch": env.get("torch"),
                "timing preset": timing.get("preset") or env.get("timing", {}).get("preset")}
    settings.update({f"timing.{k}": v for k, v in timing.items() if k not in UNTIMED})
    others = (env.get("rounds") or {}).get("others_cores_mean")
    if others is not None:  # a neighbour on the free core slows calls unseen by the rounds
        settings["other work during the rounds"] = (
            "quiet" if others < BUSY_NEIGHBOURS else f"{others:.1f} cores busy on average")
    return {k: str(v) for k, v in settings.items() if v not in (None, "")}


def _facts(run: RunFolder, clean: pd.DataFrame) -> RunFacts:
    rows, suite = run.measurements, run.env.get("suite")
    suite = suite or (str(rows["suite"].iloc[0]) if len(rows) else "?")
    return RunFacts(str(run.folder), suite, run_settings(run),
                    _aa_logs(clean, rows, _baseline(run)))


def _check_duplicates(rows: pd.DataFrame, label: str) -> None:
    counts = rows.groupby(list(KEY), sort=False)["run"].agg(list)
    twice = counts[counts.map(len) > 1]
    if twice.empty:
        return
    (suite, case_id, variant), runs = twice.index[0], twice.iloc[0]
    more = f" (and {len(twice) - 1} more row(s))" if len(twice) > 1 else ""
    raise InputError(f"{label}: {suite}/{case_id}/{variant} is in {len(runs)} run folders: "
                     f"{', '.join(runs)}{more}; pass the run folder you mean")


def load_side(path: Path, label: str) -> Side:
    path = Path(path)
    try:
        runs = _find_runs(path)
        files = [read_run(run, samples=False) for run in runs]
    except InputError as exc:  # say which side is at fault
        raise InputError(f"{label}: {exc}") from None
    rows = pd.concat([f.measurements.assign(run=str(f.folder)) for f in files], ignore_index=True)
    _check_duplicates(rows, label)
    cleans = [clean_rounds(f.rounds, str(f.folder)) for f in files]
    clean = pd.concat(cleans, ignore_index=True)
    incomplete = [f"{label}: {line}" for line in sweep_problems(path)]
    incomplete += [f"{label}: {line}" for f in files
                   for line in [state_line(f.folder, f.state), *f.problems] if line]
    return Side(label, path, runs, rows, clean, [f.env for f in files], incomplete,
                [_facts(f, c) for f, c in zip(files, cleans)])


def _joined(values) -> str:
    unique = list(dict.fromkeys(str(v) for v in values if v not in (None, "")))
    return ", ".join(unique) if unique else "-"


def env_facts(side: Side) -> dict[str, str]:
    """What a reader needs to judge whether A and B are comparable at all."""
    envs = side.envs
    created = sorted(str(e["created"]) for e in envs if e.get("created"))
    return {
        "folder": str(side.path),
        "run folders": str(len(side.runs)),
        "suite": _joined(e.get("suite") for e in envs),
        "device": _joined(f"{e.get('device', '?')} ({e.get('gpu') or e.get('cpu', '?')})"
                          for e in envs),
        "threads": _joined(e.get("threads") for e in envs),
        "torch": _joined(e.get("torch") for e in envs),
        "triton": _joined(e.get("triton") for e in envs),
        "commit": _joined(e.get("fusebench_commit") for e in envs),
        "timing preset": _joined(e.get("timing", {}).get("preset") for e in envs),
        "created": (created[0] if len(set(created)) == 1 else
                    f"{created[0]} to {created[-1]}") if created else "-",
    }
