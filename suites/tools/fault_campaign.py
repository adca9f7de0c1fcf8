"""Kill sweeps at random moments and check that resuming loses and repeats nothing.

    python -m suites.tools.fault_campaign [--kills 10] [--interrupts 5] [--seed 0]
        [--out DIR] [overrides...]

Each trial starts `run_suite.py` (the default sweep, or the overrides given) into a fresh
folder, sends SIGKILL or SIGINT at a random moment of the sweep, then runs the printed resume
command (for SIGKILL: the same overrides with resume=true) until the run completes. It checks
that the final measurements.csv holds exactly the planned (case, variant) rows, each once, that
the rows written before the signal kept their figures, and that every row has its samples.
One line per trial, then a summary.
"""
from __future__ import annotations

import argparse
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from suites.results.reader import RunFolder, read_state

REPO = Path(__file__).resolve().parents[2]
KEY = ["case_id", "variant"]


def _sweep_seconds(overrides: list[str], folder: Path) -> float:
    """How long one uninterrupted sweep takes here (the window the signals land in)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, str(REPO / "run_suite.py"), *overrides,
                    f"hydra.run.dir={folder}"], cwd=REPO, capture_output=True, check=True)
    return time.perf_counter() - started


def _state(folder: Path) -> str | None:
    return (read_state(folder) or {}).get("state")


def trial(overrides: list[str], folder: Path, sig: signal.Signals, at_s: float) -> str:
    proc = subprocess.Popen([sys.executable, str(REPO / "run_suite.py"), *overrides,
                             f"hydra.run.dir={folder}"], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        proc.wait(timeout=at_s)
        return f"finished before the {sig.name} at {at_s:.1f} s: not a trial"
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
    proc.communicate()
    before = (RunFolder(folder).measurements if (folder / "measurements.csv").exists()
              else pd.DataFrame(columns=[*KEY, "median_us"]))
    resumes = 0
    while _state(folder) != "complete":
        resumes += 1
        # Stopped before run.json was written (still starting up): nothing to resume, and the
        # folder holds only Hydra's files, so the same command simply runs again.
        again = ["resume=true"] if _state(folder) else []
        done = subprocess.run([sys.executable, str(REPO / "run_suite.py"), *overrides, *again,
                               f"hydra.run.dir={folder}"], cwd=REPO,
                              capture_output=True, text=True)
        # 1: the run completed with rows that are not results (noisy on a busy machine).
        if done.returncode not in (0, 1) or resumes > 3:
            return f"FAIL: resume exited {done.returncode}: {done.stderr.strip()[-300:]}"
    run = RunFolder(folder)
    state, rows = run.state, run.measurements
    problems = []
    if len(rows) != state["planned"] or rows.duplicated(KEY).any():
        problems.append(f"{len(rows)} rows for {state['planned']} planned "
                        f"({rows.duplicated(KEY).sum()} twice)")
    kept = before.drop_duplicates(KEY).set_index(KEY)["median_us"]
    now = rows.set_index(KEY)["median_us"].reindex(kept.index)
    changed = int(((now != kept) & kept.notna()).sum())
    if changed:
        problems.append(f"{changed} rows written before the signal changed")
    timed = rows[rows["status"].isin(["ok", "noisy"])]
    samples = run.samples
    missing = set(map(tuple, timed[KEY].values)) - set(map(tuple, samples[KEY].values))
    if missing:
        problems.append(f"{len(missing)} timed rows without samples")
    head = (f"{sig.name} at {at_s:5.1f} s: {len(before)} rows on disk, {resumes} resume(s), "
            f"{len(rows)} of {state['planned']} rows at the end")
    return head + ("; FAIL: " + "; ".join(problems) if problems else "; ok")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--interrupts", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="keep the run folders here")
    parser.add_argument("overrides", nargs="*", help="run_suite.py overrides (default sweep)")
    args = parser.parse_args(argv)
    root = args.out or Path(tempfile.mkdtemp(prefix="fault_campaign_"))
    root.mkdir(parents=True, exist_ok=True)
    overrides = [*args.overrides, "progress=false"]
    span = _sweep_seconds(overrides, root / "uninterrupted")
    print(f"one uninterrupted sweep: {span:.0f} s; signals land in 5-95% of it", flush=True)
    rng = random.Random(args.seed)
    signals = [signal.SIGKILL] * args.kills + [signal.SIGINT] * args.interrupts
    failed = missed = 0
    for i, sig in enumerate(signals):
        line = trial(overrides, root / f"trial_{i}", sig, rng.uniform(0.05, 0.95) * span)
        failed += "FAIL" in line
        missed += "not a trial" in line
        print(f"[{i + 1}/{len(signals)}] {line}", flush=True)
    trials = len(signals) - missed
    print(f"{trials - failed} of {trials} trials ok ({missed} sweep(s) finished before their "
          f"signal: not trials); folders in {root}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
