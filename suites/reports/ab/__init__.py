"""Before and after with power: two versions of the code timed in alternation, judged by pairs
of runs (`python -m suites.compare --ab A B`; command.py)."""
