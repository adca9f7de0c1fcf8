"""The short table printed at the end of a run."""
from __future__ import annotations

import pandas as pd

from suites.results.columns import Status, headers

COLUMNS = headers(["case_id", "variant", "median_us", "speedup", "n_kernels", "host_us",
                   "device_us", "tflops", "first_call_ms"])


def summary_table(frame: pd.DataFrame) -> str:
    ok = frame[frame["status"] == Status.OK]
    table = ok[list(COLUMNS)].rename(columns=COLUMNS)
    lines = [table.to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-")
             if len(table) else "(no variant ran)"]
    others = frame[frame["status"] != Status.OK]
    for (variant, status, reason), group in others.groupby(["variant", "status", "reason"],
                                                           dropna=False, sort=False):
        lines.append(f"{status}: {variant} on {len(group)} case(s): {reason}")
    return "\n".join(lines)
