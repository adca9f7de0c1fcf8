"""Can the numbers be trusted on this machine? Four checks, with their figures printed.

    python -m suites.tools.honest_numbers [--checks aa sensitivity contention timer]
                                               [--out /tmp/honest] [--suite matmul_add]

- aa: three pairs of default-timing runs of one commit, compared (suites.compare): how many
  comparable rows each pair calls faster or slower (target: at most 1 per pair).
- sensitivity: a default run against one with threads 2 vs 1 (timing.threads), a real change
  of 1.3x or more at sizes >= 512: the share of those rows called faster (target: >= 90%).
- contention: a background process keeps one core busy for a whole run (started and stopped
  here), with the default threads and with 2 (every core of a 2-core machine): every row still ok
  must have a median and a speedup within 1.3x of a quiet run's with the same threads; the rest
  must be `noisy`.
- timer: run_suite in a fresh process alternated with torch.utils.benchmark on the same call and
  thread count, 3 rounds: the median ratio (targets: 0.9-1.1 at 64, 0.95-1.05 at 1024).

Every run goes to its own folder under --out, kept for inspection. Runs one suite on the CPU (or
on CUDA, `--device cuda`, where contention means other processes on the GPU or its clocks).
A figure that misses its target says so on its line (MISSED), and the exit status is then 1: a
self-check that prints a miss as if it were a pass checks nothing.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from kernels import registry
from suites.reports.compare.loading import load_side
from suites.reports.compare.joined import Rule, compare_rows
from suites.reports.kit.change import Change
from suites.results.columns import Status
from suites.results.reader import RunFolder
from suites.config.run_spec import auto_threads

REPO = Path(__file__).resolve().parents[2]
TIMER_BANDS = {64: (0.9, 1.1), 1024: (0.95, 1.05)}  # fusebench / torch.utils.benchmark medians
TARGETS = {"aa": "<= 1 faster/slower per pair", "sensitivity": ">= 90% called",
           "contention": "ok rows within 1.3x",
           "timer": ", ".join(f"{lo}-{hi} at {n}" for n, (lo, hi) in TIMER_BANDS.items())}


def mark(met: bool | None) -> str:
    """What a figure's line ends with: nothing where it met its target, `MISSED` where not,
    and `not judged` where nothing could be measured against it."""
    return "" if met else (": not judged" if met is None else ": MISSED")


def run_suite(out: Path, *overrides: str) -> Path:
    """One run_suite.py in a fresh process; its run folder."""
    cmd = [sys.executable, str(REPO / "run_suite.py"), f"hydra.run.dir={out}", "progress=false",
           *overrides]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 1: some rows noisy or failed, which this tool counts
        raise SystemExit(f"run_suite failed ({' '.join(cmd)}):\n{done.stderr[-2000:]}")
    print(f"  ran {out.name} in {time.perf_counter() - started:.0f} s", flush=True)
    return out


def verdicts(a: Path, b: Path) -> pd.DataFrame:
    return compare_rows(load_side(a, "A"), load_side(b, "B"), Rule())


def check_aa(out: Path, base: list[str]) -> tuple[list[Path], bool]:
    """The runs (the first is the quiet run the other checks compare with), and whether every
    pair met the target."""
    print("A/A: three pairs of runs of one commit")
    runs, met = [], True
    for pair in range(3):
        a = run_suite(out / f"aa_{pair}_a", *base)
        b = run_suite(out / f"aa_{pair}_b", *base)
        frame = verdicts(a, b)
        comparable = frame[frame["verdict"].isin(list(Change))]
        called = comparable[comparable["verdict"].isin([Change.FASTER, Change.SLOWER])]
        met &= len(called) <= 1
        print(f"  pair {pair}: {len(called)} faster/slower of {len(comparable)} comparable "
              f"(target {TARGETS['aa']}){mark(len(called) <= 1)}"
              + "".join(f"\n    {r.case_id} {r.variant}: B/A {r.ratio:.3f} ({r.ci_low:.3f}-"
                        f"{r.ci_high:.3f}) {r.verdict}" for r in called.itertuples()))
        runs += [a, b]
    return runs, met


def check_sensitivity(out: Path, base: list[str], quiet: Path,
                      size_axis: str) -> tuple[Path, bool | None]:
    print(f"Sensitivity: the default threads (A, {auto_threads()[0]}) against 2 (B) at "
          f"{size_axis} >= 512")
    b = run_suite(out / "threads_2", *base, "timing.threads=2")
    frame = verdicts(quiet, b)
    sizes = RunFolder(quiet).measurements.set_index(["case_id", "variant"])[size_axis]
    frame["size"] = [sizes.get((c, v), float("nan")) for c, v in zip(frame["case_id"], frame["variant"])]
    big = frame[(frame["size"] >= 512) & frame["verdict"].isin(list(Change))]
    affected = big[big["ratio"] <= 1 / 1.3]
    called = affected[affected["verdict"] == "faster"]
    share = len(called) / len(affected) if len(affected) else float("nan")
    met = share >= 0.9 if len(affected) else None  # no row changed: nothing to call
    print(f"  {len(affected)} comparable rows changed by 1.3x or more (B/A <= 0.77); "
          f"{len(called)} called faster: {share:.0%} (target {TARGETS['sensitivity']})"
          f"{mark(met)}")
    for r in affected[affected["verdict"] != "faster"].itertuples():
        print(f"    missed: {r.case_id} {r.variant}: B/A {r.ratio:.3f} ({r.ci_low:.3f}-{r.ci_high:.3f})")
    return b, met


def _hog() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def check_contention(out: Path, base: list[str], quiet: Path, threads: str) -> bool:
    print(f"Contention: one core kept busy by another process for a whole run, threads {threads}")
    hog = _hog()
    try:
        busy = run_suite(out / f"contended_threads_{threads}", *base, f"timing.threads={threads}")
    finally:
        hog.kill()
        hog.wait()
    key = ["case_id", "variant"]
    quiet_run, busy_run = RunFolder(quiet), RunFolder(busy)
    q, b = quiet_run.measurements, busy_run.measurements
    both = q.merge(b, on=key, suffixes=("_q", "_b"))
    ok = both[(both["status_b"] == Status.OK) & (both["status_q"] == Status.OK)]
    median = ok["median_us_b"] / ok["median_us_q"]
    speed = ok["speedup_b"] / ok["speedup_q"]
    off_m = ok[(median > 1.3) | (median < 1 / 1.3)]
    off_s = ok[(speed > 1.3) | (speed < 1 / 1.3)]
    met = off_m.empty and off_s.empty
    print(f"  {len(ok)} rows ok in both; {int((b['status'] == Status.NOISY).sum())} noisy under "
          f"contention; medians busy/quiet {median.min():.3f}-{median.max():.3f}, speedups "
          f"{speed.min():.3f}-{speed.max():.3f}; outside 1.3x: {len(off_m)} medians, "
          f"{len(off_s)} speedups (target: none){mark(met)}")
    for r in off_m.itertuples():
        print(f"    median off: {r.case_id} {r.variant}: {r.median_us_q:.4g} -> {r.median_us_b:.4g} us")
    env = busy_run.env
    print(f"  rounds under contention: {env['rounds']['states']}; re-measured cases: "
          f"{len(env['rounds']['remeasured_cases'])}")
    return met


TUB_SNIPPET = """
import sys, torch, torch.utils.benchmark as tb
from kernels import registry
from kernels.base import Case
n, threads = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(threads)
op, eager = registry.get_op("matmul_add"), registry.get_variant("matmul_add", "eager")
case = Case.make("matmul_add", {"M": n, "N": n, "K": n}, "float32", "cpu")
call = eager.prepare(case, op.make_inputs(case, torch.Generator().manual_seed(0)))
timer = tb.Timer(stmt="call()", globals={"call": call}, num_threads=threads)
print(timer.blocked_autorange(min_run_time=1.0).median * 1e6)
"""


def timer_line(n: int, ratios: list[float]) -> tuple[str, bool | None]:
    """The timer check's line for size `n` and whether its median ratio is inside the target
    band (None: no round to judge)."""
    lo, hi = TIMER_BANDS[n]
    median = statistics.median(ratios) if ratios else float("nan")
    met = lo <= median <= hi if ratios else None
    return f"  n={n}: median ratio {median:.3f} (target {lo}-{hi}){mark(met)}", met


def check_timer(out: Path, threads: int) -> bool:
    print("Timer agreement: run_suite (fresh process) against torch.utils.benchmark, 3 rounds")
    ratios = {n: [] for n in TIMER_BANDS}
    for r in range(3):
        run = run_suite(out / f"timer_{r}", "suite.sizes=[64,1024]", "suite.dtypes=[float32]",
                        "suite.variants=[eager]", "profile.enabled=false", "calibrate=false",
                        f"timing.threads={threads}")
        rows = RunFolder(run).measurements
        if (rows["status"] != Status.OK).any():
            print(f"    round {r}: not every row ok ({', '.join(rows['status'])}): skipped")
            continue
        ours = rows.set_index("M")["median_us"]
        for n in ratios:
            tub = subprocess.run([sys.executable, "-c", TUB_SNIPPET, str(n), str(threads)],
                                 cwd=REPO, capture_output=True, text=True, check=True)
            theirs = float(tub.stdout.strip().splitlines()[-1])
            ratios[n].append(ours[n] / theirs)
            print(f"    round {r} n={n}: fusebench {ours[n]:.2f} us, torch.utils.benchmark "
                  f"{theirs:.2f} us, ratio {ours[n] / theirs:.3f}")
    met = True
    for n, values in ratios.items():
        line, ok = timer_line(n, values)
        print(line)
        met &= ok is not False
    return met


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m suites.tools.honest_numbers",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--checks", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--out", type=Path, default=Path("/tmp/fusebench_honest"))
    parser.add_argument("--suite", default="matmul_add")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    base = [f"suite={args.suite}", f"device={args.device}"]
    started = time.perf_counter()
    missed = []  # the checks with a figure past its target
    quiet = None
    if "aa" in args.checks:
        runs, met = check_aa(args.out, base)
        quiet, missed = runs[0], missed + ([] if met else ["aa"])
    if quiet is None and {"sensitivity", "contention"} & set(args.checks):
        quiet = run_suite(args.out / "quiet", *base)
    threads_2 = None
    if "sensitivity" in args.checks:
        threads_2, met = check_sensitivity(args.out, base, quiet,
                                           registry.get_op(args.suite).size_axis)
        missed += [] if met is not False else ["sensitivity"]
    if "contention" in args.checks:
        # With the default thread count (a core left free) and with every core in use, where
        # contention must be caught; each against a quiet run with the same threads.
        met = check_contention(args.out, base, quiet, "auto")
        threads_2 = threads_2 or run_suite(args.out / "threads_2", *base, "timing.threads=2")
        met &= check_contention(args.out, base, threads_2, "2")
        missed += [] if met else ["contention"]
    if "timer" in args.checks:
        missed += [] if check_timer(args.out, auto_threads()[0]) else ["timer"]
    print(f"done in {time.perf_counter() - started:.0f} s; runs under {args.out}; "
          + (f"MISSED its target: {', '.join(missed)} (exit 1)" if missed
             else "every figure judged met its target"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
