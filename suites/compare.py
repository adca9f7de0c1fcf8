"""Compare two results folders, row by row: is B faster, slower or the same as A?

    python -m suites.compare results/matmul_add/2026-01-01_10-00-00 results/matmul_add/2026-01-02_10-00-00
    python -m suites.compare results/multirun/<time> other_machine/results --out cmp/

Each side is a run folder or any folder holding run folders (a multirun sweep). Rows are joined
on (suite, case_id, variant). Where both are ok and have raw samples, a bootstrap confidence
interval of median(B)/median(A) decides: faster when the whole CI is below 1 - min_effect,
slower when it is above 1 + min_effect, else same. Every row of either side is listed.
Writes compare.csv, compare.md, compare.html and compare.png; prints the table and the folder.
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from suites import cli
from suites.comparison import bootstrap as bs
from suites.comparison.loading import load_side
from suites.comparison.outputs import write_all
from suites.comparison.plot import write_plot
from suites.comparison.rows import Rule, compare_rows, summary_lines
from suites.errors import ConfigError

DEFAULT_ROOT = Path("results") / "compare"  # next to the runs Hydra writes under results/


def _parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python -m suites.compare", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_a", type=Path, help="baseline: a run folder or a folder of runs")
    parser.add_argument("run_b", type=Path, help="candidate: a run folder or a folder of runs")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"output folder (default: {DEFAULT_ROOT}/<time>, under the cwd)")
    parser.add_argument("--resamples", type=int, default=bs.RESAMPLES,
                        help="bootstrap resamples (default %(default)s)")
    parser.add_argument("--confidence", type=float, default=bs.CONFIDENCE,
                        help="confidence level of the interval (default %(default)s)")
    parser.add_argument("--seed", type=int, default=bs.SEED,
                        help="seed of the resampling, for reproducible verdicts (default %(default)s)")
    parser.add_argument("--min-effect", type=float, default=bs.MIN_EFFECT,
                        help="smallest relative change called faster or slower: the whole CI "
                             "must clear 1 +- this (default %(default)s)")
    return parser


def _rule(args) -> Rule:
    if args.resamples < 100:
        raise ConfigError(f"--resamples {args.resamples}: use at least 100")
    if not 0.5 <= args.confidence < 1:
        raise ConfigError(f"--confidence {args.confidence}: use a level in [0.5, 1), e.g. 0.95")
    if not 0 <= args.min_effect < 1:
        raise ConfigError(f"--min-effect {args.min_effect}: use a fraction in [0, 1), e.g. 0.02")
    return Rule(args.resamples, args.confidence, args.seed, args.min_effect)


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


def compare(args) -> Path:
    rule = _rule(args)
    side_a, side_b = load_side(args.run_a, "A"), load_side(args.run_b, "B")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise ConfigError(f"--out {args.out}: exists and is not a folder")
    frame = compare_rows(side_a, side_b, rule)
    summary = summary_lines(frame)
    out_dir = _out_dir(args.out)
    plot = write_plot(frame, out_dir / "compare.png", rule.min_effect, rule.confidence)
    table = write_all(out_dir, frame, side_a, side_b, rule, summary, plot)
    print(table)
    print()
    print("\n".join(summary))
    print(f"compare folder: {out_dir}")
    return out_dir


def main(argv=None) -> int:
    return cli.run_main(_parser(), compare, argv)


if __name__ == "__main__":
    sys.exit(main())
