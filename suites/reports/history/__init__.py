"""History: many run folders read as series (suite, case, mode, variant, machine), the changes
in each found over the whole history and the newest run gated against a rolling baseline, each
change explained from the profiles on either side (`python -m suites.history`).

loading: find, read (lean) and order the run folders; thresholds: the gate's per suite;
changepoints and gate: the statistics; counters: what a row counts, tracked exactly; series:
the series, their two views (time, and time relative to the case's baseline) and states;
explain: the two sides of a change diffed, the likely cause first; plot and outputs: the page,
history.md, series.csv, regressions.json; command: the command line.
"""
