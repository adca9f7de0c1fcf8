"""The render kit every report shares (the run report, the ladder, compare): the HTML page, the
banner, plot plumbing and saving (plots, label_fit), the one classifier of a change (change:
faster / equivalent / slower / inconclusive) and compile break-even. Numbers are written by
suites/common/numbers.py."""
