"""Compare two results folders, row by row: is B faster, slower or equivalent to A, or can these
runs not tell?

    python -m suites.compare results/matmul_add/2026-01-01_10-00-00 results/matmul_add/2026-01-02_10-00-00
    python -m suites.compare results/multirun/<time> other_machine/results --out cmp/

Each side is a run folder or any folder holding run folders (a multirun sweep). Rows are joined
on (suite, case_id, variant). Where both are ok with at least 3 clean timing rounds a side, the
model of B/A (round noise of both sides plus each run's drift, from an A/A control where both
runs carry one) decides: equivalent when its 90% interval lies within +-floor; else faster or
slower when its 99% interval excludes 1; else inconclusive, with the smallest change the pair
could have seen (mde). Every row of either side is listed; noisy rows and rows with too few
rounds are "not comparable", with the reason. Settings the runs do not share are warned of
first; runs on different kinds of device, or that share no row, are refused (exit 2).
Writes compare.csv, compare.md, compare.html and compare.png; prints the table, the summary,
the folder, and last the audit of what it wrote (suites/reports/compare/audit.py: each row's
verdict against its own intervals, the summary against compare.csv, the md against the html).

Two single runs minutes apart cannot see a change smaller than their drift (on this 2-core
machine, 50-80%): `python -m suites.compare --ab A B [--pairs N] [--aa] [--out DIR] --
<overrides>` times two versions of the code in turn and sees a few percent
(suites/reports/ab/command.py; `--ab x --help` for its options; docs/compare.md).
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from suites.common import cli
from suites.common.audit import audit_safely
from suites.reports.compare import audit, decision
from suites.reports.compare.ab_hint import hint_lines
from suites.reports.compare.drift import DRIFT_SD, differences, drifts
from suites.reports.compare.loading import Side, load_side, shared_figure
from suites.reports.compare.outputs import care_lines, warning_lines, write_all
from suites.reports.compare.plot import write_plot
from suites.reports.compare.joined import (Basis, Rule, compare_rows, shared_rows,
                                           summary_lines)
from suites.common.errors import ConfigError, InputError

DEFAULT_ROOT = Path("results") / "compare"  # next to the runs Hydra writes under results/


def _parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python -m suites.compare", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_a", type=Path, help="baseline: a run folder or a folder of runs")
    parser.add_argument("run_b", type=Path, help="candidate: a run folder or a folder of runs")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"output folder (default: {DEFAULT_ROOT}/<time>, under the cwd)")
    # --noise-floor: the flag's name before the floor became the equivalence band; kept so
    # scripts that pass it still run.
    parser.add_argument("--floor", "--noise-floor", dest="floor", type=float,
                        default=decision.FLOOR,
                        help="equivalence band: a row is equivalent when the 90%% interval of "
                             "B/A lies within 1 +- this (default %(default)s)")
    parser.add_argument("--drift-sd", dest="drift_sd", type=float, default=None,
                        help="the drift of one run, as a fraction (sd of a run's offset), "
                             "instead of the A/A control's or the default "
                             f"({DRIFT_SD}, measured on a shared 2-core machine)")
    return parser


def _rule(args) -> Rule:
    if not 0 < args.floor < 1:
        raise ConfigError(f"--floor {args.floor}: use a fraction in (0, 1), e.g. 0.05")
    if args.drift_sd is not None and not 0 <= args.drift_sd < 1:
        raise ConfigError(f"--drift-sd {args.drift_sd}: use a fraction in [0, 1), e.g. 0.03")
    return Rule(args.floor, drift_sd=args.drift_sd)


def _out_dir(out: Path | None) -> Path:
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        return out
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    for n in range(1000):  # two comparisons in the same second get two folders
        path = DEFAULT_ROOT / (stamp if n == 0 else f"{stamp}_{n}")
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            continue
    raise ConfigError(f"{DEFAULT_ROOT}: could not create a fresh output folder")


def _rows_of(side: Side) -> str:
    suites = ", ".join(dict.fromkeys(side.rows["suite"].astype(str)))
    return f"{len(side.rows)} rows" + (f" of {suites}" if suites else "")


def compare(args) -> Path:
    rule = _rule(args)
    if Path(args.run_a).resolve() == Path(args.run_b).resolve():
        raise ConfigError(f"{args.run_a}: A and B are the same folder: its rows would agree "
                          "with themselves; an A/A check compares two runs of one config")
    side_a, side_b = load_side(args.run_a, "A"), load_side(args.run_b, "B")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise ConfigError(f"--out {args.out}: exists and is not a folder")
    basis = Basis(rule, shared_figure(side_a, side_b), drifts(side_a, side_b, rule.drift_sd),
                  differences(side_a, side_b))  # differences: an InputError across devices
    frame = compare_rows(side_a, side_b, rule, basis.figure, basis.drift)
    if not shared_rows(frame):
        raise InputError(f"A {args.run_a} ({_rows_of(side_a)}) and B {args.run_b} "
                         f"({_rows_of(side_b)}) share no row (suite, case_id, variant): "
                         "compare runs of one suite and grid")
    summary = summary_lines(frame) + hint_lines(frame, side_a, side_b)
    out_dir = _out_dir(args.out)
    plot = write_plot(frame, out_dir / "compare.png", rule.floor)
    table = write_all(out_dir, frame, side_a, side_b, basis, summary, plot)
    for line in warning_lines(basis):
        print(line)
    print(table)
    print()
    print("\n".join(care_lines(side_a, side_b) + summary + basis.lines()))
    print(f"compare folder: {out_dir}")
    # Every compare audits what it wrote; its lines end the output (each contradiction on its
    # own), the exit code stays compare's.
    print("\n".join(audit_safely(audit.audit, out_dir, audit.KIND).lines()))
    return out_dir


def main(argv=None) -> int:
    return cli.run_main(_parser(), compare, argv)


if __name__ == "__main__":
    sys.exit(main())
