"""From a Collection to the ladder's numbers, sentences and files (csv, png, md, html)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from kernels.base import DTYPE_SHORT
from suites.common.numbers import plain, ratio
from suites.reports.ladder import answer
from suites.reports.kit import breakeven as be
from suites.reports.ladder import fits as ft
from suites.reports.ladder import plots, prediction, render, training
from suites.reports.ladder.loading import Collection, by_machine, machine
from suites.reports.ladder.table import ladder_table
from suites.traces.device_time import on_gpu
from suites.results.columns import Status

SOURCES_JSON = "sources.json"  # the run folders a ladder was collected from


@dataclass
class SuitePart:
    name: str
    baseline: str
    device: str
    fits: pd.DataFrame
    curves: dict             # (variant, dtype) -> fits.Fit, for the plot
    breakeven: pd.DataFrame
    sentences: list[str]
    plots: list[Path] = field(default_factory=list)
    machine: str = ""        # set when the collection holds several machines
    rows: pd.DataFrame | None = None  # this part's rows
    peaks: dict = field(default_factory=dict)

    @property
    def title(self) -> str:
        return f"{self.name} on {self.machine}" if self.machine else self.name

    @property
    def file_stem(self) -> str:
        """The plots' file name: the suite, and the machine when there are several."""
        if not self.machine:
            return self.name
        return f"{self.name}_" + "".join(c if c.isalnum() else "_" for c in self.machine).strip("_")


@dataclass
class Ladder:
    collection: Collection
    table: pd.DataFrame
    suites: list[SuitePart]
    answer_plot: Path | None = None  # the first screen's plot (suites/reports/ladder/answer.py)
    training: pd.DataFrame | None = None  # the training rungs (suites/reports/ladder/training.py)
    # A suggested sweep's trace step, group by group (suites/reports/ladder/prediction.py)
    prediction: pd.DataFrame | None = None

    @property
    def baselines(self) -> dict[str, str]:
        return {name: info.baseline for name, info in self.collection.suites.items()}


def _fit_sentence(row) -> str:
    who = " ".join(w for w in (row["variant"], row["choice"],
                                DTYPE_SHORT.get(row["dtype"], row["dtype"])) if w)
    if pd.isna(row["overhead_us"]):
        text = f"{who}: {row['fit_note']}"
    else:
        quality = [f"worst point off by {100 * row['max_rel_err']:.0f}%", row["fit_note"]]
        if row["fit_note"] == ft.TWO_SIZES:
            quality = [row["fit_note"]]
        work = (f"then {plain(row['tflops'])} TFLOP/s" if math.isfinite(row["tflops"])
                else "whatever the work")
        text = (f"{who}: about {plain(row['overhead_us'])} us fixed per call, {work} "
                f"({'; '.join(q for q in quality if q)})")
    if row["crossover"].startswith("never"):
        return f"{text}; device time never overtakes host time within the grid"
    if row["crossover"].startswith("not profiled"):
        return f"{text}; not profiled, so no device vs host time"
    return f"{text}; device time overtakes host time {row['crossover']}"


def _device(rows: pd.DataFrame) -> str:
    return ", ".join(dict.fromkeys(str(d) for d in rows["device"].dropna())) if "device" in rows else ""


def _above_peak(rows: pd.DataFrame, peaks: dict) -> list[str]:
    """Points above the measured roof mean the calibration probe underestimated the machine
    (a busy or throttled machine, or a dtype whose 1024^2 probe is not its best case)."""
    peak = rows["dtype"].map(peaks.get("matmul_tflops") or {})
    above = rows[(rows["status"] == Status.OK) & (rows["tflops"] > peak)]
    if above.empty:
        return []
    worst = above.loc[(above["tflops"] / peak[above.index]).idxmax()]
    return [f"{len(above)} ok row(s) beat the measured peak FLOP/s (up to "
            f"{ratio(worst['tflops'] / peak[worst.name])}x, {worst['variant']} at "
            f"{worst['case_id']}): the calibration probe underestimated this machine, so read % "
            "of peak with care."]


def _provenance(collection: Collection, name: str) -> list[str]:
    """Merged runs of one suite are only comparable if they ran on the same, equally fast
    machine: say when the machines or their measured peaks differ (by more than 20%)."""
    runs = [r for r in collection.runs if r.env.get("suite") == name]
    out = []
    machines = list(dict.fromkeys(machine(r.env) for r in runs))
    if len(machines) > 1:
        out.append(f"Rows come from {len(machines)} machines ({', '.join(machines)}): times "
                   "across them are not comparable.")
    peaks = {}
    for run in runs:
        for dtype, peak in ((run.env.get("peaks") or {}).get("matmul_tflops") or {}).items():
            peaks.setdefault(dtype, []).append(peak)
    for dtype, values in peaks.items():
        if max(values) > 1.2 * min(values):
            out.append(f"The runs measured different {DTYPE_SHORT.get(dtype, dtype)} peaks "
                       f"({plain(min(values))} to {plain(max(values))} TFLOP/s): the "
                       "machine's speed changed between runs (load, clocks); the roofline uses "
                       "the newest.")
    return out


def suite_part(collection: Collection, name: str, machine_name: str = "") -> SuitePart:
    info = collection.suites[name]
    rows = collection.rows[collection.rows["suite"] == name]
    fits, curves = ft.fit_table(rows, name)
    breakeven = be.breakeven_table(rows, name, info.baseline)
    device = _device(rows)
    sentences = [_fit_sentence(r) for _, r in fits.iterrows()]
    if device and not on_gpu(device):
        sentences.append("On a CPU the compute ops run inside the host span, so the crossover "
                         "is where compute time overtakes the rest of the host time (dispatch, "
                         "Python, allocation).")
    sentences += _provenance(collection, name) + _above_peak(rows, info.peaks)
    sentences += be.sentences(breakeven) or ["No compile variant in this suite."]
    return SuitePart(name, info.baseline, device, fits, curves, breakeven, sentences,
                     machine=machine_name, rows=rows, peaks=info.peaks)


def analyze(collection: Collection) -> Ladder:
    """The ladder; with several machines, each machine's own, and one table that puts the
    machines' rows for a block side by side."""
    parts = by_machine(collection)
    several = len(parts) > 1
    tables, suites = [], []
    for part in parts:
        name = part.rows["machine"].iloc[0] if several else ""
        tables.append(ladder_table(part).assign(machine=name))
        suites += [suite_part(part, suite, name) for suite in part.suites]
    table = pd.concat(tables, ignore_index=True)
    if several:  # each block, dtype and family: its machines' rows next to each other
        keys = {c: {v: i for i, v in enumerate(dict.fromkeys(table[c]))}
                for c in ("suite", "dtype", "family")}
        keys["suite"] = {n: i for i, n in enumerate(collection.suites)}
        table = table.sort_values(["suite", "dtype", "family"], kind="stable",
                                  key=lambda column: column.map(keys[column.name]))
        table = table.reset_index(drop=True)
    return Ladder(collection, table, suites, training=training.training_table(collection),
                  prediction=prediction.prediction_table(collection))


def _plots(ladder: Ladder, out_dir: Path) -> None:
    for part in ladder.suites:
        rows = part.rows
        ok = rows[(rows["status"] == Status.OK) & rows["mean_us"].notna() & (rows["flops"] > 0)]
        if ok.empty:
            continue
        part.plots = [plots.fit_plot(ok, part.curves, part.title,
                                     out_dir / f"{part.file_stem}_fit.png"),
                      plots.roofline_plot(ok, part.peaks, part.title,
                                          out_dir / f"{part.file_stem}_roofline.png")]


def write_outputs(ladder: Ladder, out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {name: out_dir / name for name in
             ("ladder.csv", "fits.csv", "breakeven.csv", "ladder.md", "ladder.html")}
    if ladder.training is not None and len(ladder.training):
        paths["training.csv"] = out_dir / "training.csv"
        ladder.training.to_csv(paths["training.csv"], index=False)
    if ladder.prediction is not None:
        paths["prediction.csv"] = out_dir / "prediction.csv"
        ladder.prediction.to_csv(paths["prediction.csv"], index=False)
    ladder.table.to_csv(paths["ladder.csv"], index=False)
    # What was collected: the audit (audit.py) collects it again and holds the pages to it.
    paths[SOURCES_JSON] = out_dir / SOURCES_JSON
    paths[SOURCES_JSON].write_text(json.dumps(
        {"root": str(ladder.collection.root.resolve()),
         "runs": [str(Path(r.path).resolve()) for r in ladder.collection.runs]}, indent=1))
    pd.concat([p.fits for p in ladder.suites] or [pd.DataFrame(columns=ft.FIT_COLUMNS)],
              ignore_index=True).to_csv(paths["fits.csv"], index=False)
    pd.concat([p.breakeven for p in ladder.suites] or [pd.DataFrame(columns=be.COLUMNS)],
              ignore_index=True).to_csv(paths["breakeven.csv"], index=False)
    _plots(ladder, out_dir)
    ladder.answer_plot = answer.plot(ladder.table, out_dir / "answer.png")
    paths["ladder.md"].write_text(render.markdown(ladder, out_dir), encoding="utf-8")
    paths["ladder.html"].write_text(render.html(ladder), encoding="utf-8")
    return paths
