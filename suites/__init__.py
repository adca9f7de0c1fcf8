"""How things are measured and reported: suite definitions plus the engine."""
