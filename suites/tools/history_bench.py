"""Does the history's statistics find the changes it should, and only those? A simulation bench on
real timing rounds: synthetic histories of 30+ runs resampled from real runs of this machine, with
known steps injected, fed through suites/reports/history/changepoints.py and suites/reports/history/gate.py.

    python -m suites.tools.history_bench [--series N] [--seed S] [--runs R] [--drift-scale X]

The material: tests/fixtures/history_rounds/ (its README: ten matmul_add fp32 runs, two groups of
one configuration, 5 and 10 rounds). Per row (case, variant) and run: its clean round figures
(rounds.csv `mean_us`, else `median_us`: compare's round figure), kept where a run has 3 clean
rounds or more. From them, per row, the between-run spread `tau_row`: each run's mean log figure
less its group's mean, pooled over the two groups (n - 1 per group), less the rounds' own share
(the mean se^2); and the shape of the drift: every row's run offsets over that row's raw spread,
pooled (196 offsets drawn as they came rather than from a normal; one run of M64 eager sat 37% off
its row, yet the pooled shape's kurtosis is 2.7, no heavier-tailed than a normal's 3).

A synthetic series of R runs (32 by default): pick a row and one of its groups; for each run
draw one of the group's real runs and resample its clean rounds with replacement (as many as it
had), centred on the group's level (the real run's own offset taken off, so the drift is not
counted twice), times a run-level factor exp(tau_row * s) with s drawn from the pooled drift shape
with a random sign (`--drift-scale` multiplies tau_row: 0.5 asks what a quieter machine would
show). A changed series multiplies every run from a known index k on by the step (5, 10, 15, 20
or 30%, slower or faster); k is uniform over the middle half of the series (R/4 to 3R/4): a step
needs runs on both sides to be placed, and one in the newest runs is the gate's.

What is measured (`--series` N series per cell):
- change points, per step size, both directions pooled: the share of changed series with a step
  found at the right run (exact index, and within +-1 run), by the row's run noise (drift and
  round noise: the sd of a run's mean log figure), and the share found anywhere;
- the share of stable series with no change found at all;
- the gate, on stable series: how often the newest run of a window (each of the last R - 21
  positions, 20-run baselines) is called regressed or improved (false alarms), and how often a
  series is too_noisy; on series whose step is at the newest run: how often it is called in the
  step's direction, per step size.

Targets (the issue): changes of 10% or more found at the right run in >= 90% of series; no false
change in >= 95% of stable series. Exact placement of a step is a matter of its size against a
run's noise sd (drift and round noise together): by least squares told that there is exactly one
step (normal noise, 32 runs, the step in the middle half), a step of d sd's lands on its run in
25% of series at d = 1, 62% at 2, 84% at 3 and 95% at 4, whatever the method. So the tables split
the series by their row's run noise, and beside the method's shares print that oracle's: a 10%
step needs a run noise under ~3% to be placed exactly in 90% of series, and this machine's rows
scatter by 3-17% a run (median 10.6%).

Measured (python -m suites.tools.history_bench --seed 0, then --seed 1; 200 series a cell):
flat series with no change 100% / 97%; 10% steps at the right run 91% / 100% of series where a
run's sd is under 3%, 76% / 78% at 3-5%, 21% / 21% over all rows; 15% and more: 100% under 3%.
The gate's false alarms: 1% of judged newest runs.

The relative view (`--view relative`: a variant's time over the baseline's in the same round,
what history judges beside the time; the baseline's own rows drop out): the machine's drift
cancels (between-run spread median 0.6%, from 10.6%), and a run's sd is then its rounds' noise
(median 4.0%; a ratio of two noisy rounds). Measured (--view relative --seed 0, then 1; 200
series a cell): 10% steps at the right run 52% / 48% of all series, within +-1 run 64% / 60%,
found anywhere 74% / 68% (the one-step oracle places 62% / 59%); where a run's sd is under 3%,
88% / 76% exact and 93% / 92% within one run; 15% steps 75% / 78% exact, 87% / 85% within one;
flat series with no change 100% / 100%; the gate's false alarms 2%. So on this machine a 10%
step is found in most series but placed to its exact run only where a run's figure is steady
to ~3%: with 5-10 rounds of ~10% spread a run's se is ~4%; 4x the rounds halve it. Measured
(--view relative --rounds-x 4, seeds 0 / 1: each run resampled to 4x its real rounds, 20-40,
what `timing.rounds` that much higher gives): a run's sd median 2.4%; 10% steps at the exact run
76% / 77%, within one run 85% / 85%, found somewhere 90% / 90%, 98% exact where the sd is under
3% (most rows then); 15% steps 92% / 91% exact; no false change 100% / 100%; false alarms 1%.
"""
from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from suites.reports.history.changepoints import Point, find_changes
from suites.reports.history.gate import gate

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "history_rounds"
STEPS = (0.05, 0.10, 0.15, 0.20, 0.30)
MIN_ROUNDS = 3            # a run needs this many clean rounds to be a point (compare's rule)
# Bands of a run's noise (drift and round noise, sd of its mean log figure): what decides how
# exactly a step can be placed.
BANDS = ((0.0, 0.03), (0.03, 0.05), (0.05, 0.08), (0.08, 0.12), (0.12, 1.0))
TARGET_FOUND, TARGET_QUIET = 0.90, 0.95
TIME, RELATIVE = "time", "relative"  # the two views of a series (series.py)
BASELINE = "eager"  # the fixture's suite's baseline (conf/suite/matmul_add.yaml)


@dataclass
class Row:
    key: tuple[str, str]
    groups: list[list[np.ndarray]]  # per group, per real run: clean log figures, centred
    tau: float                      # between-run spread, logs
    se: float                       # a run's typical round noise: median se of its mean log

    def noise(self, drift_scale: float = 1.0, rounds_x: float = 1.0) -> float:
        """The sd of one run's mean log figure about the row's level: drift and round noise
        (`rounds_x` times the rounds: the round noise's share shrinks by its square root)."""
        return math.hypot(self.tau * drift_scale, self.se / math.sqrt(rounds_x))


def _group_of(folder: Path) -> str:
    return folder.name.split("-")[0]


def _paired_logs(clean: pd.DataFrame, column: str, baseline: str) -> dict[tuple, np.ndarray]:
    """(case, variant) -> log(variant / baseline) per round where both were clean: the
    relative view's figures (series.relative_points), for every variant but the baseline."""
    table = clean.pivot_table(index=["case_id", "round"], columns="variant", values=column)
    out = {}
    for variant in (v for v in table.columns if v != baseline):
        ratios = (table[variant] / table[baseline]).dropna()
        for case, part in ratios.groupby(level="case_id"):
            out[(case, variant)] = np.log(part.to_numpy(float))
    return out


def load_rows(root: Path = FIXTURE, view: str = TIME) -> tuple[list[Row], np.ndarray]:
    """(rows, drift shape): per (case, variant) its centred clean rounds per run and group, and
    its tau; the pooled standardised run offsets of every row. `view`: the time per call, or
    the time over the baseline's in the same round (relative: the baseline's own rows drop
    out, and a drift the whole machine shares cancels)."""
    by_row: dict[tuple, dict[str, list[np.ndarray]]] = {}
    for folder in sorted(p for p in root.iterdir() if (p / "rounds.csv").is_file()):
        rounds = pd.read_csv(folder / "rounds.csv")
        column = "mean_us" if "mean_us" in rounds.columns else "median_us"
        clean = rounds[(rounds["state"] == "clean") & (rounds[column] > 0)]
        if view == RELATIVE:
            logs = _paired_logs(clean, column, BASELINE)
        else:
            logs = {key: np.log(part[column].to_numpy(float))
                    for key, part in clean.groupby(["case_id", "variant"])}
        for key, figures in logs.items():
            if figures.size >= MIN_ROUNDS:
                by_row.setdefault(key, {}).setdefault(_group_of(folder), []).append(figures)
    rows, shape = [], []
    for key, groups in sorted(by_row.items()):
        groups = [runs for runs in groups.values() if len(runs) >= 2]
        if not groups:
            continue
        squares, dof, se2, offsets, centred = 0.0, 0, [], [], []
        for runs in groups:
            means = np.array([r.mean() for r in runs])
            level = means.mean()
            offsets += list(means - level)
            squares += float(np.sum((means - level) ** 2))
            dof += len(runs) - 1
            se2 += [r.var(ddof=1) / r.size for r in runs]
            # Each real run centred on its group's level: the synthetic run's drift is drawn anew.
            centred.append([r - m + level for r, m in zip(runs, means)])
        raw = math.sqrt(squares / dof)
        tau = math.sqrt(max(0.0, squares / dof - float(np.mean(se2))))
        if raw > 0:
            shape += [o / raw for o in offsets]
        rows.append(Row(key, centred, tau, math.sqrt(float(np.median(se2)))))
    return rows, np.array(shape)


def synth(row: Row, shape: np.ndarray, runs: int, k: int | None, step: float,
          rng: np.random.Generator, drift_scale: float = 1.0, rounds_x: int = 1) -> list[Point]:
    """One synthetic series of `runs` points of `row`, every run from index k on scaled by
    (1 + step) (k None: stable); each run resampled to `rounds_x` times its real rounds."""
    group = row.groups[rng.integers(len(row.groups))]
    points = []
    for j in range(runs):
        real = group[rng.integers(len(group))]
        logs = rng.choice(real, size=real.size * rounds_x, replace=True)
        offset = drift_scale * row.tau * shape[rng.integers(shape.size)] * rng.choice((-1, 1))
        if k is not None and j >= k:
            offset += math.log1p(step)
        logs = logs + offset
        se = float(logs.std(ddof=1) / math.sqrt(logs.size))
        points.append(Point(float(logs.mean()), se, int(logs.size)))
    return points


def oracle_split(points: list[Point]) -> int:
    """The least-squares position of a single step, told that there is exactly one (no test, no
    penalty): what placement alone can do at this noise, a ceiling for the exact share."""
    m = np.array([p.log_mean for p in points])
    best, where = math.inf, 0
    for k in range(2, m.size - 1):
        cost = m[:k].var() * k + m[k:].var() * (m.size - k)
        if cost < best:
            best, where = cost, k
    return where


def band_of(noise: float) -> int:
    return next(i for i, (lo, hi) in enumerate(BANDS) if lo <= noise < hi)


def run_bench(series: int = 200, seed: int = 0, runs: int = 32, drift_scale: float = 1.0,
              rows=None, gate_options=None, rounds_x: int = 1, **options) -> dict:
    """The numbers: see the module's docstring. `options` go to find_changes (penalty, alpha,
    min_size), `gate_options` to gate (z_threshold, ...)."""
    gate_options = gate_options or {}
    rng = np.random.default_rng(seed)
    if rows is None:
        rows = load_rows()
    rows_, shape = rows
    pick = lambda: rows_[rng.integers(len(rows_))]  # noqa: E731
    out = {"found": {}, "quiet": [], "gate_false": [], "gate_noisy": [], "gate_hit": {}}
    # Stable series: change points and the gate on every newest-run position past 20.
    for _ in range(series):
        row = pick()
        points = synth(row, shape, runs, None, 0.0, rng, drift_scale, rounds_x)
        found = find_changes(points, **options)
        out["quiet"].append((row.noise(drift_scale, rounds_x), not found.steps))
        levels = [p.level for p in points]
        for end in range(21, runs + 1):
            g = gate(levels[:end], **gate_options)
            out["gate_noisy"].append(g.state == "too_noisy")
            if g.state != "too_noisy":
                out["gate_false"].append(g.state in ("regressed", "improved"))
    for step in STEPS:
        cells, hits = [], []
        for sign in (1, -1):
            size = step if sign > 0 else 1 / (1 + step) - 1  # faster by the same ratio
            for _ in range(series):
                row = pick()
                k = int(rng.integers(runs // 4, 3 * runs // 4 + 1))
                points = synth(row, shape, runs, k, size, rng, drift_scale, rounds_x)
                steps = [s for s in find_changes(points, **options).steps
                         if (s.ratio > 1) == (sign > 0)]
                exact = any(s.index == k for s in steps)
                near = any(abs(s.index - k) <= 1 for s in steps)
                cells.append((row.noise(drift_scale, rounds_x), exact, near, bool(steps),
                              oracle_split(points) == k))
                # The gate: the same step at the newest run only.
                row = pick()
                points = synth(row, shape, runs, runs - 1, size, rng, drift_scale, rounds_x)
                g = gate([p.level for p in points], **gate_options)
                want = "regressed" if sign > 0 else "improved"
                hits.append((row.noise(drift_scale, rounds_x), g.state == want,
                             g.state == "too_noisy"))
        out["found"][step] = cells
        out["gate_hit"][step] = hits
    return out


def _share(flags) -> float:
    flags = list(flags)
    return sum(flags) / len(flags) if flags else math.nan


def summary(out: dict) -> dict:
    """Headline shares: per step, exact and +-1 over all series and per band; stable quiet."""
    found = {}
    for step, cells in out["found"].items():
        found[step] = {
            "exact": _share(c[1] for c in cells), "near": _share(c[2] for c in cells),
            "detected": _share(c[3] for c in cells), "oracle": _share(c[4] for c in cells),
            "bands": [(_share(c[1] for c in cells if band_of(c[0]) == b),
                       _share(c[2] for c in cells if band_of(c[0]) == b),
                       sum(band_of(c[0]) == b for c in cells)) for b in range(len(BANDS))]}
    quiet = out["quiet"]
    return {
        "found": found,
        "quiet": _share(q for _, q in quiet),
        "quiet_bands": [(_share(q for t, q in quiet if band_of(t) == b),
                         sum(band_of(t) == b for t, _ in quiet)) for b in range(len(BANDS))],
        "gate_false": _share(out["gate_false"]),
        "gate_noisy": _share(out["gate_noisy"]),
        "gate_hit": {step: (_share(h for _, h, _ in hits),
                            _share(h for _, h, n in hits if not n),
                            [_share(h for t, h, n in hits if band_of(t) == b and not n)
                             for b in range(len(BANDS))])
                     for step, hits in out["gate_hit"].items()},
    }


def _pct(x: float) -> str:
    return "  -  " if math.isnan(x) else f"{100 * x:4.0f}%"


def report(s: dict, header: str, gate_z: float = 3.5) -> str:
    names = [f"sd {100 * lo:.0f}-{100 * hi:.0f}%" if hi < 1 else f"sd >{100 * lo:.0f}%"
             for lo, hi in BANDS]
    lines = [header, "",
             "change points: share of changed series with the step found at the right run "
             "(exact / within +-1), by the row's run noise sd (drift and round noise)",
             "| step | all: exact | +-1 | " + " | ".join(f"{n}: exact | +-1" for n in names)
             + " |",
             "|---|---|---|" + "---|---|" * len(names)]
    for step, f in s["found"].items():
        cells = " | ".join(f"{_pct(e)} | {_pct(n)}" for e, n, _ in f["bands"])
        lines.append(f"| {100 * step:.0f}% | {_pct(f['exact'])} | {_pct(f['near'])} | {cells} |")
    counts = next(iter(s["found"].values()))["bands"]
    lines.append("| series | | | " + " | ".join(f"{c} | " for _, _, c in counts) + " |")
    lines += ["", "found anywhere (a step in the right direction) / oracle placement (told there "
              "is exactly one step, least squares, no test: a ceiling on placement at this "
              "noise): " + ", ".join(
                  f"{100 * st:.0f}% {_pct(f['detected']).strip()} / {_pct(f['oracle']).strip()}"
                  for st, f in s["found"].items())]
    target = [f["exact"] for st, f in s["found"].items() if st >= 0.10 - 1e-9]
    lines += ["", f"stable series with no change found: {_pct(s['quiet'])} (by band: "
              + ", ".join(f"{n} {_pct(q)} of {c}" for n, (q, c) in zip(names, s["quiet_bands"]))
              + ")",
              f"targets: >= 10% steps at the right run >= {100 * TARGET_FOUND:.0f}%: "
              f"{'met' if min(target) >= TARGET_FOUND else 'NOT met'} over all rows (worst "
              f"{_pct(min(target)).strip()}); no false change >= {100 * TARGET_QUIET:.0f}%: "
              f"{'met' if s['quiet'] >= TARGET_QUIET else 'NOT met'}", "",
              f"gate (20-run baseline, |z| > {gate_z:g} and > 5%, too_noisy past 15% CV): "
              f"false alarms on stable series {_pct(s['gate_false']).strip()} of judged newest "
              f"runs; too_noisy {_pct(s['gate_noisy']).strip()}",
              "| step at the newest run | called (all) | called (judged) | "
              + " | ".join(names) + " |",
              "|---|---|---|" + "---|" * len(names)]
    for step, (all_, judged, bands) in s["gate_hit"].items():
        lines.append(f"| {100 * step:.0f}% | {_pct(all_)} | {_pct(judged)} | "
                     + " | ".join(_pct(b) for b in bands) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=200, help="series per cell (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=32, help="runs per series (default 32)")
    parser.add_argument("--drift-scale", type=float, default=1.0,
                        help="multiply each row's real between-run spread (default 1)")
    parser.add_argument("--penalty", type=float, default=None,
                        help="PELT's penalty per change (default 2 log n)")
    parser.add_argument("--alpha", type=float, default=0.1,
                        help="family level of the step test (default 0.1)")
    parser.add_argument("--min-size", type=int, default=3)
    parser.add_argument("--rounds-x", dest="rounds_x", type=int, default=1,
                        help="resample each run to this many times its real rounds (what "
                             "timing.rounds that much higher would give)")
    parser.add_argument("--view", choices=(TIME, RELATIVE), default=TIME,
                        help="time per call, or time over the baseline's in the same rounds")
    parser.add_argument("--gate-z", type=float, default=3.5,
                        help="the gate's modified z threshold (default 3.5)")
    args = parser.parse_args(argv)
    rows = load_rows(view=args.view)
    taus = np.array([r.tau for r in rows[0]])
    noises = np.array([r.noise(args.drift_scale, args.rounds_x) for r in rows[0]])
    start = time.perf_counter()
    out = run_bench(args.series, args.seed, args.runs, args.drift_scale, rows,
                    gate_options={"z_threshold": args.gate_z}, rounds_x=args.rounds_x,
                    penalty=args.penalty, alpha=args.alpha, min_size=args.min_size)
    header = (f"history bench ({args.view} view): seed {args.seed}, {args.series} series a "
              f"cell, {args.runs} runs a series, drift x{args.drift_scale:g}, "
              f"rounds x{args.rounds_x}; "
              f"{len(rows[0])} real rows from "
              f"{FIXTURE.relative_to(ROOT)}, between-run spread median "
              f"{100 * np.median(taus):.1f}% (range {100 * taus.min():.1f}-"
              f"{100 * taus.max():.1f}%), a run's sd with round noise at this drift median "
              f"{100 * np.median(noises):.1f}% ({100 * noises.min():.1f}-"
              f"{100 * noises.max():.1f}%); penalty "
              f"{'2 log n' if args.penalty is None else args.penalty}, alpha {args.alpha}, "
              f"min size {args.min_size}")
    print(report(summary(out), header, args.gate_z))
    print(f"\n({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
