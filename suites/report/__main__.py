"""Rebuild a run's plots and report.html from its files: python -m suites.report <run folder>."""
import argparse
import sys
from pathlib import Path

from suites.report.build import write_report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m suites.report", description=__doc__)
    parser.add_argument("run_dir", type=Path, help="a run folder (holds measurements.csv)")
    args = parser.parse_args(argv)
    if not (args.run_dir / "measurements.csv").is_file():
        print(f"fusebench: error: {args.run_dir}: no measurements.csv: not a run folder",
              file=sys.stderr)
        return 2
    print(write_report(args.run_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
