"""The short table printed at the end of a run, and what to read it with care for."""
from __future__ import annotations

import pandas as pd

from suites.reports.kit.banner import banner_lines
from suites.common.numbers import num
from suites.results.columns import Status, headers

COLUMNS = headers(["case_id", "variant", "mean_us", "speedup", "speedup_low", "speedup_high",
                   "kernel_us", "kernel_speedup", "n_kernels", "host_us", "device_us", "tflops", "first_call_ms"])


def summary_table(frame: pd.DataFrame, env: dict | None = None) -> str:
    """The ok rows, one line per status group of the others, then the banner's warnings."""
    ok = frame[frame["status"] == Status.OK]
    # Columns no ok row has a value in (kernel us on a CPU, device us without a profile) go.
    shown = {c: h for c, h in COLUMNS.items() if c in ok and ok[c].notna().any()}
    table = ok[list(shown)].rename(columns=shown)
    lines = [table.to_string(index=False, float_format=num, na_rep="-")
             if len(table) else "(no variant ran)"]
    others = frame[frame["status"] != Status.OK]
    for (variant, status, reason), group in others.groupby(["variant", "status", "reason"],
                                                           dropna=False, sort=False):
        lines.append(f"{status}: {variant} on {len(group)} case(s): {reason}")
    lines += [f"read with care: {line}" for line in banner_lines([env or {}], frame)]
    return "\n".join(lines)
