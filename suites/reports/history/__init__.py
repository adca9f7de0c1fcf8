"""History: many run folders read as series (suite, case, mode, variant, machine), the changes
in each found over the whole history and the newest run gated against a rolling baseline, each
change explained from the profiles on either side (`python -m suites.history`).

loading: find, read (lean) and order the run folders; thresholds: the gate's per suite;
changepoints and gate: the statistics; placement: the newest run's verdict and its change's
place, judged together; counters: what a row counts, tracked exactly; points and series: the
series, their two views (time, and time relative to the case's baseline) and states; causes:
what may be named as a cause (what moves a time); explain: the two sides of a change diffed,
the likely cause first; words, page, plot and outputs: history.md, history.html, series.csv,
regressions.json, the console; audit and audit_changes: those pages checked against each other
and the run folders; command: the command line.
"""
