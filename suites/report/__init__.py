"""Reporting: the console summary, plots, and the self-contained HTML report."""
