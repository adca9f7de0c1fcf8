"""Rebuild a run's plots and report.html from its files: python -m suites.report <run folder>."""
import argparse
import sys
from pathlib import Path

from suites.common import cli
from suites.common.errors import ConfigError
from suites.reports.run.build import write_report
from suites.results.tables import MEASUREMENTS_CSV


def _report(args) -> None:
    if not (args.run_dir / MEASUREMENTS_CSV).is_file():
        raise ConfigError(f"{args.run_dir}: no {MEASUREMENTS_CSV}: not a run folder")
    print(write_report(args.run_dir))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m suites.report", description=__doc__)
    parser.add_argument("run_dir", type=Path, help="a run folder (holds measurements.csv)")
    return cli.run_main(parser, _report, argv, errors=(ConfigError,))


if __name__ == "__main__":
    sys.exit(main())
