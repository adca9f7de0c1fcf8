"""`python -m suites.report` and `fusebench-report`: the command is suites/reports/run/command.py."""
import sys

from suites.reports.run.command import main

if __name__ == "__main__":
    sys.exit(main())
