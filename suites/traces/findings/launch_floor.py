"""launch_floor: a row's exposed overhead against the launch floors its run measured at its start
(env.json `launch_floors`: suites/harness/launch_floor.py), so "overhead-bound" comes with how
far the call is from the cheapest launch on the same machine and build:

    exposed overhead 41 us = 5.9x the eager dispatch floor of 7 us (one x.add_(1)): about 6
    ops' worth of dispatch, for 2 kernels a call

A Triton row on CUDA is also set against the empty Triton kernel's JIT launch. Said of ok rows
whose exposed overhead is at least one floor: under it there is no launch's worth to speak of.
The floors come as the run wrote them (a mapping of name -> {us, method} or {skipped: why}), so
this reads env.json's shape and nothing of the harness.
"""
from __future__ import annotations

import math
from typing import Mapping

from suites.common.numbers import plain, times
from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, Row, column_value, is_ok


def floor_us(floors: Mapping | None, name: str) -> float | None:
    """A floor's microseconds, or None where the run has none (not measured, skipped, failed)."""
    entry = (floors or {}).get(name)
    value = entry.get("us") if isinstance(entry, Mapping) else None
    if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
        return float(value)
    return None


def _worth(multiple: float, one: str, many: str) -> str:
    """`about 6 ops' worth`, `about one op's worth`."""
    count = round(multiple)
    return f"about one {one}'s worth" if count <= 1 else f"about {count:,} {many}' worth"


def launch_floor(row: Row, floors: Mapping | None):
    eager = floor_us(floors, "eager_dispatch")
    exposed = column_value(row, "exposed_overhead_us")
    if not is_ok(row) or eager is None or not math.isfinite(exposed) or exposed < eager:
        return
    multiple = exposed / eager
    said = (f"exposed overhead {plain(exposed)} us = {times(multiple)} the eager dispatch floor "
            f"of {plain(eager)} us (one x.add_(1), measured at the run's start): "
            f"{_worth(multiple, 'op', 'ops')} of dispatch")
    kernels = column_value(row, "n_kernels")
    if math.isfinite(kernels):
        said += f", for {kernels:.0f} kernel{'' if kernels == 1 else 's'} a call"
    evidence = {"exposed_overhead_us": exposed, "eager_floor_us": eager,
                "floor_multiple": multiple, "n_kernels": kernels}
    triton = floor_us(floors, "triton_launch")
    if triton is not None and column_value(row, "family") == "triton":
        said += (f"; against the empty Triton kernel's JIT launch of {plain(triton)} us it is "
                 f"{times(exposed / triton)}, {_worth(exposed / triton, 'launch', 'launches')}")
        evidence["triton_floor_us"] = triton
    yield Finding(Code.LAUNCH_FLOOR, Severity.INFO, said, evidence)
