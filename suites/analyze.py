"""`python -m suites.analyze`, `fusebench-analyze`: suites/traces/command.py, with `--suggest`
dispatched to the suggest room (suites/suggest/), which the trace room may not import."""
import os
import sys

from suites.traces import command


def suggest(trace, steps: int, args) -> list[str]:
    """--suggest's lines, after the diagnosis. Imported here, not at the top: pandas and the
    harness are --suggest's alone."""
    from suites.suggest import command as suggestion
    return suggestion.run(trace, steps, args.out, args.replay, args.scale)


def run_command(argv=None) -> int:
    """The command, with --suggest, returning its exit code (tests, callers that go on)."""
    return command.main(argv, suggest=suggest)


def main(argv=None) -> int:
    """The command, then a quick exit: a big trace's millions of events, freed one by one as
    the interpreter shuts down, took a fifth of the run (0.5 s of a 100 MB trace's 2.5 s); the
    trace is kept to the exit, not freed when the command returns (0.4 s a GB)."""
    command.outlive_the_run = []
    code = run_command(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
