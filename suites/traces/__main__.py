"""`python -m suites.traces <trace>`: analyse any torch.profiler trace
(suites/traces/command.py)."""
import sys

from suites.traces.command import main

sys.exit(main())
