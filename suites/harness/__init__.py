"""The measurement engine: correctness, timing, calibration, the runner and the columns it
derives; the rows it fills are suites/results'."""
