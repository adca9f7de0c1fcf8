"""Compare two results folders, row by row: is B faster, slower or the same as A?

    python -m suites.compare results/matmul_add/2026-01-01_10-00-00 results/matmul_add/2026-01-02_10-00-00
    python -m suites.compare results/multirun/<time> other_machine/results --out cmp/

Each side is a run folder or any folder holding run folders (a multirun sweep). Rows are joined
on (suite, case_id, variant). Where both are ok with at least 3 clean timing rounds a side, a
95% interval of B/A from the rounds' medians decides: faster when the whole interval is below
1 / (1 + noise floor), slower when it is above 1 + noise floor, the same when it lies between,
unclear when it reaches across either bound. Every row of either side is listed; noisy rows and
rows with too few rounds are "not comparable", with the reason.
Writes compare.csv, compare.md, compare.html and compare.png; prints the table and the folder.
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from suites.common import cli
from suites.reports.compare import decision
from suites.reports.compare.loading import load_side
from suites.reports.compare.outputs import write_all
from suites.reports.compare.plot import write_plot
from suites.reports.compare.joined import Rule, compare_rows, summary_lines
from suites.common.errors import ConfigError

DEFAULT_ROOT = Path("results") / "compare"  # next to the runs Hydra writes under results/


def _parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python -m suites.compare", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_a", type=Path, help="baseline: a run folder or a folder of runs")
    parser.add_argument("run_b", type=Path, help="candidate: a run folder or a folder of runs")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"output folder (default: {DEFAULT_ROOT}/<time>, under the cwd)")
    parser.add_argument("--noise-floor", dest="noise_floor", type=float,
                        default=decision.NOISE_FLOOR,
                        help="smallest relative change called faster or slower: the whole "
                             "interval must clear 1 +- this, and lie within it to be called the "
                             "same (default %(default)s, the A/A drift between runs measured on "
                             "a shared machine)")
    return parser


def _rule(args) -> Rule:
    if not 0 <= args.noise_floor < 1:
        raise ConfigError(f"--noise-floor {args.noise_floor}: use a fraction in [0, 1), e.g. 0.1")
    return Rule(args.noise_floor)


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
    if Path(args.run_a).resolve() == Path(args.run_b).resolve():
        raise ConfigError(f"{args.run_a}: A and B are the same folder: its rows would agree "
                          "with themselves; an A/A check compares two runs of one config")
    side_a, side_b = load_side(args.run_a, "A"), load_side(args.run_b, "B")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise ConfigError(f"--out {args.out}: exists and is not a folder")
    frame = compare_rows(side_a, side_b, rule)
    summary = summary_lines(frame)
    out_dir = _out_dir(args.out)
    plot = write_plot(frame, out_dir / "compare.png", rule.noise_floor)
    table = write_all(out_dir, frame, side_a, side_b, rule, summary, plot)
    print(table)
    print()
    print("\n".join(side_a.incomplete + side_b.incomplete + summary))
    print(f"noise floor: {rule.noise_floor:.0%} (faster or slower needs the whole 95% interval "
          f"of B/A beyond 1 +- this, the same all of it within; from {rule.min_rounds} clean "
          "rounds a side)")
    print(f"compare folder: {out_dir}")
    return out_dir


def main(argv=None) -> int:
    return cli.run_main(_parser(), compare, argv)


if __name__ == "__main__":
    sys.exit(main())
