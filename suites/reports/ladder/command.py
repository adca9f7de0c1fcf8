"""The ladder report across blocks: merge run folders, compare the blocks at their reference shapes.

    python -m suites.collect results/multirun/<time>
    python -m suites.collect cluster_runs/ --out ladder_report/

The folder may hold any number of run folders at any depth (a multirun, the job folders of a
cluster launcher, a whole results/ tree); they are found by their measurements.csv. When a
(suite, case_id, variant) is in several run folders, the newest (env.json `created`) is kept and
the others are listed in the report. Writes ladder.html (self-contained), ladder.md, ladder.csv,
fits.csv, breakeven.csv and two PNGs per suite into --out (default: <folder>/ladder); prints the
ladder table, each suite's sentences and the output folder.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from suites.common import cli
from suites.common.audit import audit_safely
from suites.common.errors import ConfigError
from suites.reports.ladder import render
from suites.reports.ladder.loading import load
from suites.reports.ladder.audit import audit
from suites.reports.ladder.report import analyze, write_outputs


def _parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python -m suites.collect", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path,
                        help="a folder holding run folders (or one run folder)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: <folder>/ladder)")
    return parser


def collect(args) -> Path:
    collection = load(args.folder)
    out_dir = args.out if args.out is not None else args.folder / "ladder"
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {out_dir}: exists and is not a folder")
    ladder = analyze(collection)
    write_outputs(ladder, out_dir)
    print(render.summary(ladder))
    print(f"ladder folder: {out_dir}")
    # every statement against its sources
    print("\n".join(audit_safely(audit, out_dir, "ladder").lines()))
    return out_dir


def main(argv=None) -> int:
    return cli.run_main(_parser(), collect, argv)


if __name__ == "__main__":
    sys.exit(main())
