"""Compare two results folders row by row: `python -m suites.compare <run_a> <run_b>`.

loading: find run folders and read their rows, samples and env.json; bootstrap: the
faster / slower / same decision from raw samples; rows: the join of A and B, one row per
(suite, case_id, variant) of either side; plot and outputs: compare.png, .csv, .md, .html.
"""
