"""Every run folder under a path, merged into one table of rows.

Run folders are found by their measurements.csv, at any depth (a multirun folder, a results/
tree, the folders of a cluster launcher's jobs). Unlike compare (which refuses), a collect step
over reruns must pick one row per (suite, case_id, variant): it keeps the newest by env.json
`created` and returns the others as `dropped`, which the report lists, so nothing vanishes.

Runs from several machines (an A100 job and an H100 job of one sweep, collected together) are
never taken for reruns of each other: rows are keyed by machine too (`machine`: the device and
its model, from env.json), and `by_machine` splits a collection so that each machine's ladder
is fitted on its own rows, against its own peaks.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from kernels import registry
from kernels.base import DEFAULT_MODE
from suites.results.columns import AA_CONTROL, KEY, Status
from suites.results.tables import param_columns
from suites.results.reader import read_run
from suites.results.run_folders import find_runs, sweep_problems

REQUIRED = ["family", "dtype"]  # besides KEY and status


def machine(env: dict) -> str:
    """`cuda (NVIDIA H100 80GB HBM3)`, `cpu (x86_64)`: the device and its model."""
    return f"{env.get('device', '?')} ({env.get('gpu') or env.get('cpu', '?')})"


@dataclass
class Run:
    path: Path
    env: dict
    created: dt.datetime | None
    params: list[str]        # the op's parameter columns, in the file's order
    state: dict | None = None  # run.json: an incomplete run is said in the banner
    problems: list = field(default_factory=list)  # what does not add up (RunFolder.problems)


@dataclass
class SuiteInfo:
    name: str
    params: list[str]
    reference: dict          # {param: size}; empty when no run recorded one
    peaks: dict              # {"matmul_tflops": {dtype: x}, "copy_gbps": x, "cache_copy_gbps":
    #                          [[bytes, x], ...]}; may be empty
    baseline: str            # the variant every speedup is measured against


@dataclass
class Collection:
    root: Path
    runs: list[Run]
    rows: pd.DataFrame       # one row per (suite, case_id, variant), plus `run`, `created`,
    #                          `choice` (the case's categorical parameters: `norm=rms`) and
    #                          `paired` (False: the speedup's baseline came from another run)
    dropped: pd.DataFrame    # older duplicates: KEY + run, created, kept_run, kept_created
    suites: dict[str, SuiteInfo] = field(default_factory=dict)  # in ladder order
    missing: list[str] = field(default_factory=list)  # multirun jobs that left no rows


def _created(env: dict) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(env["created"]))
    except (KeyError, ValueError):
        return None


def _read_run(path: Path) -> tuple[Run, pd.DataFrame]:
    files = read_run(path, REQUIRED, samples=False)
    rows, env = files.measurements, files.env  # no env: no peaks, no reference, oldest in dedup
    # A user's own block: registered from its run's config, or its rows are left out and said.
    problems = files.problems + [p for p in [files.load_own_op()] if p]
    run = Run(path, env, _created(env), param_columns(rows), files.state, problems)
    rows = rows[rows["variant"] != AA_CONTROL]  # a run's own A/A control: not a block's variant
    return run, rows.assign(run=str(path), created=run.created, machine=machine(env))


def _order_key(run: Run):
    # Runs without a readable `created` sort first (oldest); equal stamps fall back to the path.
    return (run.created is not None, run.created or dt.datetime.min, str(run.path))


def _deduplicate(rows: pd.DataFrame, order: dict[str, int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    key = ["machine", *KEY]
    rows = rows.assign(_order=rows["run"].map(order)).sort_values("_order", kind="stable")
    newest = ~rows.duplicated(key, keep="last")
    kept, dropped = rows[newest], rows[~newest]
    winners = kept.set_index(key)[["run", "created"]].rename(
        columns={"run": "kept_run", "created": "kept_created"})
    dropped = dropped[key + ["run", "created"]].join(winners, on=key)
    # Back to each run's own row order (baseline first per case), runs in path order.
    kept = kept.sort_index().drop(columns="_order")
    return kept.reset_index(drop=True), dropped.reset_index(drop=True)


def _baseline(rows: pd.DataFrame) -> str:
    """The op's baseline, from the registry. For an op this version does not know (a results
    folder from another version), a guess: the runner writes each case's baseline first, and
    the baseline is the unfused eager form (attention has two eager variants; `naive` first)."""
    ops = rows["op"].dropna() if "op" in rows else []
    if len(ops):
        try:
            return registry.get_op(str(ops.iloc[0])).baseline
        except registry.UnknownNameError:
            pass
    eager = rows.loc[rows["family"] == "eager", "variant"]
    return str(eager.iloc[0] if len(eager) else rows["variant"].iloc[0])


def _speedups(rows: pd.DataFrame, baselines: dict[str, str]) -> pd.DataFrame:
    """speedup, its interval and device_ratio against the kept baseline (an ok row of the same
    case). A row whose baseline was kept from its own run keeps its paired speedup (timed in the
    same rounds; NaN when no round was clean for both); one whose baseline comes from another
    run gets the ratio of the two times per call, no interval, and `paired` False, so the table can
    say so."""
    ok = rows["status"] == Status.OK
    is_base = ok & (rows["variant"] == rows["suite"].map(baselines))
    base = rows[is_base].set_index(["machine", "suite", "case_id"])
    keys = pd.Series(list(zip(rows["machine"], rows["suite"], rows["case_id"])), index=rows.index)
    base_run = keys.map(base["run"])
    same_run = ok & (base_run == rows["run"])
    other_run = ok & base_run.notna() & (base_run != rows["run"])
    unpaired = keys.map(base["mean_us"]).astype(float) / rows["mean_us"]
    # A variant with no device time (the launch suite's guard check): no ratio, never inf.
    device = keys.map(base["device_us"]).astype(float) / rows["device_us"].where(
        rows["device_us"] > 0)
    out = pd.DataFrame(index=rows.index)
    # An ok row with no paired speedup (no timing rounds: another tool's table, or an edited
    # one) has nothing to keep: its ratio of times per call stands, as for a baseline from
    # another run.
    unpaired_here = same_run & rows["rounds"].isna() & rows["speedup"].isna()
    out["speedup"] = np.where(same_run & ~unpaired_here, rows["speedup"],
                              np.where(other_run | unpaired_here, unpaired, np.nan))
    out["speedup_low"] = np.where(same_run, rows["speedup_low"], np.nan)
    out["speedup_high"] = np.where(same_run, rows["speedup_high"], np.nan)
    out["device_ratio"] = np.where(ok & base_run.notna(), device, np.nan)
    out["paired"] = ~other_run
    return out


def _choices(rows: pd.DataFrame, suites: dict[str, SuiteInfo]) -> pd.Series:
    """Per row, its categorical parameters (`norm=rms`; "" where a suite has none) and its
    training mode (`fwd_bwd`; nothing for the default forward): fits and curves are per
    (variant, dtype, choice), since another choice is another computation."""
    out = pd.Series("", index=rows.index, dtype=object)
    for name, info in suites.items():
        mine = rows["suite"] == name
        categorical = [p for p in info.params
                       if not pd.api.types.is_numeric_dtype(rows.loc[mine, p].dropna())]
        for p in categorical:
            out[mine] = (out[mine] + " " + p + "=" + rows.loc[mine, p].astype(str)).str.strip()
    if "mode" in rows:
        trains = rows["mode"].notna() & (rows["mode"] != DEFAULT_MODE)
        out[trains] = (out[trains] + " " + rows.loc[trains, "mode"].astype(str)).str.strip()
    return out


def _suite_info(name: str, rows: pd.DataFrame, runs: list[Run]) -> SuiteInfo:
    mine = [r for r in runs if r.env.get("suite", name) == name and str(r.path) in set(rows["run"])]
    params = next((r.params for r in reversed(mine) if r.params), [])
    reference = next((r.env["reference"] for r in reversed(mine) if r.env.get("reference")), {})
    peaks: dict = {"matmul_tflops": {}}
    for run in mine:  # oldest first, so the newest measurement of each peak wins
        got = run.env.get("peaks") or {}
        peaks["matmul_tflops"].update(got.get("matmul_tflops") or {})
        if got.get("copy_gbps"):
            peaks["copy_gbps"] = got["copy_gbps"]
        if got.get("cache_copy_gbps"):  # a CPU's caches: the roofs its rows were judged on
            peaks["cache_copy_gbps"] = got["cache_copy_gbps"]
    return SuiteInfo(name, params, dict(reference), peaks, _baseline(rows))


def _suites(rows: pd.DataFrame, runs: list[Run]) -> dict[str, SuiteInfo]:
    names = list(dict.fromkeys(rows["suite"]))
    ladder = registry.op_names()
    names = [n for n in ladder if n in names] + sorted(n for n in names if n not in ladder)
    return {n: _suite_info(n, rows[rows["suite"] == n], runs) for n in names}


def load(path: Path) -> Collection:
    path = Path(path)
    loaded = [_read_run(p) for p in find_runs(path)]
    runs = sorted((run for run, _ in loaded), key=_order_key)
    order = {str(run.path): i for i, run in enumerate(runs)}
    rows, dropped = _deduplicate(pd.concat([r for _, r in loaded], ignore_index=True), order)
    # A suite this version does not know (an edited row, or a suite since removed): its rows
    # have no parameters, baseline or ladder place to be read with; left out, and said.
    known = rows["suite"].isin(registry.op_names())
    unknown = [f"{n} row(s) of suite {suite!r}, not a suite of this version of fusebench: "
               "left out" for suite, n in rows.loc[~known, "suite"].value_counts().items()]
    rows = rows[known].reset_index(drop=True)
    suites = _suites(rows, runs)
    speedups = _speedups(rows, {n: s.baseline for n, s in suites.items()})
    rows[list(speedups.columns)] = speedups
    rows["choice"] = _choices(rows, suites)
    return Collection(path, runs, rows, dropped, suites, unknown + sweep_problems(path))


def machines(collection: Collection) -> list[str]:
    return list(dict.fromkeys(collection.rows["machine"]))


def by_machine(collection: Collection) -> list[Collection]:
    """One collection per machine (the collection itself when there is one), each with its own
    runs, rows, peaks and references."""
    names = machines(collection)
    if len(names) <= 1:
        return [collection]
    out = []
    for name in names:
        runs = [r for r in collection.runs if machine(r.env) == name]
        rows = collection.rows[collection.rows["machine"] == name].reset_index(drop=True)
        dropped = collection.dropped[collection.dropped["machine"] == name]
        out.append(Collection(collection.root, runs, rows, dropped, _suites(rows, runs)))
    return out
