"""Inductor's compile workers kept out of the timing rounds.

Left alone, Inductor starts a pool of compile worker processes, one per CPU up to 32
(torch/_inductor/config.py, decide_compile_threads), the first time anything compiles: the
first compile variant's first call, just before its case's timing rounds. Each worker imports
torch (seconds of CPU each, 16 of them on the GPU machine), and the pool quiesces after a minute
idle and wakes for the next compile, so it starts again before later cases. The contention check
rightly counts those processes as other work: rounds marked contended, re-measures, noisy rows.

So a run compiles in its own process: compile_threads = 1 before anything compiles, the one
setting every torch from 2.0 to 2.13 honours (warm_pool, wakeup and submit all skip the pool at
1). Warming the pool at start-up instead would not last: it quiesces and wakes again. What a
compile loses is parallelism across the kernels of one graph, which the suites' small graphs
barely use; in exchange compile_ms no longer depends on whether the pool happened to be ready
(the first case compiled in-process, later ones in the pool).
"""
from __future__ import annotations

import os

# A user's own choice (Inductor reads it when its config is imported) stands.
USER_SETTING = "TORCHINDUCTOR_COMPILE_THREADS"
COMPILE_THREADS = 1


def limit_compile_pool() -> int | None:
    """Before any timing: Inductor compiles in this process, with no worker pool. Returns the
    setting in force (None where this torch has no such setting or decides it later)."""
    from torch._inductor import config  # imported by every compile anyway

    if not hasattr(config, "compile_threads"):  # a torch without the setting: nothing to limit
        return None
    if USER_SETTING not in os.environ:
        config.compile_threads = COMPILE_THREADS
    return config.compile_threads
