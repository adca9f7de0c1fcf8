"""`python -m suites.compare`, `fusebench-compare`: two runs compared (suites/reports/compare/
command.py), or with --ab two versions of the code timed in turn (suites/reports/ab/command.py)."""
import sys

from suites.reports.ab.command import main as ab_main
from suites.reports.compare.command import main as compare_main


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own = argv[:argv.index("--")] if "--" in argv else argv
    wants_ab = any(a == "--ab" or a.startswith("--ab=") for a in own)
    return ab_main(argv) if wants_ab else compare_main(argv)


if __name__ == "__main__":
    sys.exit(main())
