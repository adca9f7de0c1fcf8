"""The measurement engine: correctness, timing, calibration, the runner and its results."""
