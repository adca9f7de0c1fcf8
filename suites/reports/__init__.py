"""What a reader sees: a small render kit (kit/) and, on it, the run report (run/), the ladder
across blocks (ladder/), the comparison of two runs (compare/) and the history of many
(history/)."""
