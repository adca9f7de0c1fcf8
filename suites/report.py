"""`python -m suites.report`, `fusebench-report`: suites/reports/run/command.py."""
import sys

from suites.reports.run.command import main

if __name__ == "__main__":
    sys.exit(main())
