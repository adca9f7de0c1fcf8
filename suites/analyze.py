"""`python -m suites.analyze`, `fusebench-analyze`: suites/traces/command.py."""
import os
import sys

from suites.traces import command


def main(argv=None) -> int:
    """The command, then a quick exit: a big trace's millions of events, freed one by one as
    the interpreter shuts down, took a fifth of the run (0.5 s of a 100 MB trace's 2.5 s); the
    trace is kept to the exit, not freed when the command returns (0.4 s a GB)."""
    command.outlive_the_run = []
    code = command.main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
