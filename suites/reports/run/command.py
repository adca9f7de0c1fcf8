"""Rebuild a run's plots and report.html from its files: python -m suites.report <run folder>."""
import argparse
import sys
from pathlib import Path

from suites.common import cli
from suites.common.errors import ConfigError, InputError
from suites.reports.run.audit import audit_and_keep
from suites.reports.run.build import write_report


def _report(args) -> None:
    print(write_report(args.run_dir))  # a folder without measurements.csv: an InputError
    # The rebuilt pages audited, and audit.txt made theirs (never the old pages' audit).
    print("\n".join(audit_and_keep(args.run_dir).lines()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m suites.report", description=__doc__,
        epilog="python -m suites.report --check FOLDER...: audit every statement of a run, "
               "ladder, compare, history or suggest folder (or of every such folder under it) "
               "against the others and its numbers; exit 1 on a contradiction")
    parser.add_argument("run_dir", type=Path, help="a run folder (holds measurements.csv)")
    return cli.run_main(parser, _report, argv, errors=(ConfigError, InputError))


if __name__ == "__main__":
    sys.exit(main())
