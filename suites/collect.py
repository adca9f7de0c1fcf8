"""`python -m suites.collect`, `fusebench-collect`: suites/reports/ladder/command.py."""
import sys

from suites.reports.ladder.command import main

if __name__ == "__main__":
    sys.exit(main())
