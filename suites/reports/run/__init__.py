"""The run report: the console summary, plots, and the self-contained HTML report of one run
folder (`python -m suites.report <run_dir>`)."""
