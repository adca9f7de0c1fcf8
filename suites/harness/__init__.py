"""The measurement engine: correctness, timing, calibration, the runner and the columns it
derives. The rows it fills are defined in suites/results/."""
