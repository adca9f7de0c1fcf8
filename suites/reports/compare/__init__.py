"""Compare two results folders row by row: `python -m suites.compare <run_a> <run_b>`.

loading: find run folders and read their rows, clean round medians and env.json; decision: the
noise floor and a row's faster / slower / same / unclear from the interval of its timing rounds;
joined: the join of A and B, one row per (suite, case_id, variant) of either side; plot and
outputs: compare.png, .csv, .md, .html.
"""
