"""From a model's trace to a sweep at its shapes (`python -m suites.analyze TRACE --suggest`): the
trace's op calls with their shapes (op_calls.py), matched to fusebench's blocks (patterns.py),
grouped and ranked by time per step (groups.py), written as a Hydra experiment that sweeps them
(experiment.py); command.py prints and saves it."""
