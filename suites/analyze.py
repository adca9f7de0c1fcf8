"""`python -m suites.analyze`, `fusebench-analyze`: suites/traces/command.py."""
import sys

from suites.traces.command import main

if __name__ == "__main__":
    sys.exit(main())
