"""`python -m suites.compare`, `fusebench-compare`: suites/reports/compare/command.py."""
import sys

from suites.reports.compare.command import main

if __name__ == "__main__":
    sys.exit(main())
