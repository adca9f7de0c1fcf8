"""From a model's trace to the groups a sweep at its shapes is made of (`python -m suites.analyze
TRACE --suggest`): the trace's op calls with their shapes (op_calls.py), matched to fusebench's
blocks (patterns.py), grouped and ranked by time per step (groups.py, suggestions.py), and the
Hydra experiment that sweeps them (experiment.py, scaling.py). Trace analysis alone: each group
replayed, the files written and the page printed are the suggest room's (suites/suggest/)."""
