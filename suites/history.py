"""`python -m suites.history`, `fusebench-history`: suites/reports/history/command.py."""
import sys

from suites.reports.history.command import main

if __name__ == "__main__":
    sys.exit(main())
