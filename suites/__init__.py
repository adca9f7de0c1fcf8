"""How things are measured, read and reported, one room per role; imports point down this list:

    config/   composing and checking a run's configuration (above harness)
    reports/  the render kit, the run report, the ladder, compare and history, and on them the
              A/B design (compare --ab) (above harness)
    suggest/  analyze --suggest: replays timed by the harness, the verdict, its audit (above
              harness, beside config and reports)
    harness/  the measurement engine and the run-spec types
    traces/   any trace: reading, timelines, steps, op trees, the findings engine
    results/  the schema, tables, journal, run folders, intervals
    common/   error types, the command line's error shape, text and numbers, the audit's shape
              and the row's one bound (roofline.py)
    tools/    self-checks that are not tests (on top: they may use any room)

The modules directly here are the package's entry points (`python -m suites.analyze` ...).
"""
