"""Many runs read as a history: which rows changed, where, why, and did the newest run regress?

    python -m suites.history results/matmul_add            # every run folder under it
    python -m suites.history nightly/ weekly/ --out hist/  # several folders, one history
    python -m suites.history results/ --order commit       # by the commits' order (git)

Each path is a run folder or any folder holding run folders (sweeps too). Rows are grouped into
series by (suite, case, variant, machine: device, model, cores) and put in order by env.json
`created` (or by commit). Per series: change points over the whole history, in the row's time
and in its time relative to the case's baseline variant (paired by round: the drift a run
shares cancels), and the newest run gated against a rolling baseline (median and MAD; both a
statistical and a practical threshold, per suite from its config's `history:` block, or the
flags). A series too noisy to judge is never flagged, and said so. Counters (kernels and ops
per call, graphs, recompiles, kernel sets, Triton registers) are tracked exactly. Every change is
explained from the runs on either side: versions, settings, kernels, counters, overhead, memory.
Writes history.html, history.md, series.csv and regressions.json into --out (default:
<first path>/history), and ends with the audit of what it wrote (the pages against each other
and the run folders: suites/reports/history/audit.py). Exit 1 when the newest run regressed
beyond the gate, 0 otherwise, 2 on bad input (one line).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from suites.common import cli
from suites.common.audit import audit_safely
from suites.common.errors import ConfigError
from suites.reports.history import audit, explain, loading, outputs, series, thresholds

EXIT_REGRESSED = 1


def _parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python -m suites.history", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", type=Path, nargs="+",
                        help="run folders, or folders holding them (any depth)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: <first folder>/history)")
    parser.add_argument("--order", choices=("time", "commit"), default="time",
                        help="run order: env.json created (default), or the commits' order in "
                             "this git repository (then time), falling back to time, said")
    parser.add_argument("--by-threads", action="store_true",
                        help="key series by the thread count too (default: threads are a "
                             "setting, and a change of them is a change the history explains)")
    parser.add_argument("--window", type=int, default=None,
                        help="runs in the gate's rolling baseline (default: the suite's "
                             "history.window, else 20)")
    parser.add_argument("--z", type=float, default=None,
                        help="the gate's statistical threshold, a modified z-score (default: "
                             "history.z, else 3.5)")
    parser.add_argument("--min-change", dest="min_change", type=float, default=None,
                        help="the gate's practical threshold, a fraction (default: "
                             "history.min_change, else 0.05)")
    parser.add_argument("--max-cv", dest="max_cv", type=float, default=None,
                        help="past this robust CV of the baseline a series is too noisy to "
                             "gate (default: history.max_cv, else 0.15)")
    return parser


@dataclass
class Outcome:
    judged: series.Judged
    out_dir: Path

    @property
    def regressed(self) -> bool:
        return bool(self.judged.regressed)


def suite_thresholds(history: loading.History, flags: dict) -> dict[str, thresholds.Thresholds]:
    """suite -> its gate thresholds: the newest run of the suite's `history:` block (its stored
    config), defaults where absent, the flags over both."""
    newest: dict[str, loading.Run] = {}
    for run in history.runs:
        for suite in {k[0] for k in run.rows}:
            newest[suite] = run
    out = {}
    for suite, run in newest.items():
        config = run.hydra_config or run.config
        where = str(run.folder / loading.HYDRA_CONFIG) if run.hydra_config else \
            str(run.folder / "run.json")
        out[suite] = thresholds.with_flags(thresholds.from_config(config, where), flags)
    return out


def run_history(args) -> Outcome:
    flags = {"window": args.window, "z": args.z, "min_change": args.min_change,
             "max_cv": args.max_cv}
    for key, value in flags.items():  # a bad flag fails before any folder is read
        if value is not None:
            thresholds.check(key, value, "the command line")
    first = Path(args.folders[0])
    out_dir = args.out if args.out is not None else \
        (first.parent if first.is_file() else first) / "history"
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {out_dir}: exists and is not a folder")
    history = loading.load(args.folders, args.order, args.by_threads)
    limits = suite_thresholds(history, flags)
    judged = series.judge(history, limits)
    explain.explain_all(judged)
    print(outputs.write_all(out_dir, judged))
    # Every history audits what it wrote (audit.py): its lines end the output, each
    # contradiction on its own; the exit code stays the gate's.
    print("\n".join(audit_safely(audit.audit, out_dir, "history").lines()))
    return Outcome(judged, out_dir)


def main(argv=None) -> int:
    """0: no regression at the newest run; 1: one or more (for CI); 2: bad input."""
    outcome: list[Outcome] = []
    code = cli.run_main(_parser(), lambda args: outcome.append(run_history(args)), argv)
    if code or not outcome:
        return code
    return EXIT_REGRESSED if outcome[0].regressed else 0


if __name__ == "__main__":
    sys.exit(main())
