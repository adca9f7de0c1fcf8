"""Checks of the tool itself, run by hand and reported in notes, not as timed tests."""
