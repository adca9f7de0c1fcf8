"""Compare two results folders row by row: `python -m suites.compare <run_a> <run_b>`.

loading: find run folders and read their rows, clean rounds, settings and A/A control; drift: a
run's drift per suite and the settings A and B do not share; decision: the floor and a row's
faster / slower / equivalent / inconclusive from the model of its B/A;
joined: the join of A and B, one row per (suite, case_id, variant) of either side; plot and
outputs: compare.png, .csv, .md, .html; audit: those pages read back, each statement tested
against the others and the numbers it rests on.
"""
