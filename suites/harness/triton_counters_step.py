"""The run's last step: the registers, spills and shared memory of what its Triton rows launch,
compiled ahead of time for sm_80 and sm_90 (suites/tools/triton_counters.py), into the run
folder's triton_counters.csv, for history to track exactly.

After every row is on disk, in a process of its own (a run on a CPU has set TRITON_INTERPRET,
under which the kernels carry their interpreter configs): it never touches a measurement, and
it cannot fail the run: a failure or an interruption is a line in env.json
(`triton_counters`), and the run's rows stand. `triton_counters: off` skips it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from kernels import registry
from suites.results import atomic

SETTINGS = ("auto", "off")  # conf/config.yaml triton_counters
CASES_JSON = "triton_cases.json"  # suites/tools/triton_counters.py reads it
TIMEOUT_S = 1800  # a first compile of a whole ladder's kernels is minutes, never half an hour


def triton_cases(suite: str, variants, cases) -> list[dict]:
    """Each Triton variant at each case of the run, as the tool needs them: the row key, the
    case and its mode (a variant timed nowhere on a CPU still has a GPU build: the GPU would
    run it)."""
    return [{"suite": suite, "case_id": case.id, "variant": v.name, "values": dict(case.values),
             "dtype": case.dtype, "mode": case.mode}
            for case in cases for v in variants if v.family == "triton"]


def record(spec, stream) -> dict | None:
    """Write triton_counters.csv for the run's Triton rows (a RunSpec's suite variants and
    cases); what happened, for env.json, or None when there was nothing to do."""
    if spec.triton_counters == "off":
        return None
    out_dir = spec.out_dir
    variants = [registry.get_variant(spec.suite.name, name) for name in spec.suite.variants]
    cases = triton_cases(spec.suite.name, variants, spec.cases())
    if not cases:
        return None
    atomic.write_text(out_dir / CASES_JSON, json.dumps(cases))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    print(f"\nAfter the answer, Triton counters: compiling what {len(cases)} Triton row(s) "
          "launch for sm_80 and sm_90, for history (cached after the first run; "
          "triton_counters=off skips it)...", file=stream, flush=True)
    try:
        done = subprocess.run([sys.executable, "-m", "suites.tools.triton_counters",
                               str(out_dir)], env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except (subprocess.TimeoutExpired, OSError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        return {"error": f"exit {done.returncode}: {tail[0][:300]}"}
    try:
        summary = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"unreadable output: {done.stdout[-300:]!r}"}
    print(f"Triton counters: {summary['rows']} rows from {summary['compiles']} compiles "
          f"({summary['compiled_now']} new) in {summary['seconds']:.0f} s", file=stream,
          flush=True)
    return summary
