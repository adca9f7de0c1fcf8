"""The short table printed at the end of a run."""
from __future__ import annotations

import pandas as pd

COLUMNS = {"case_id": "case", "variant": "variant", "median_us": "median us", "speedup": "speedup",
           "n_kernels": "kernels", "host_us": "host us", "device_us": "device us",
           "tflops": "TFLOP/s", "first_call_ms": "1st call ms"}


def summary_table(frame: pd.DataFrame) -> str:
    ok = frame[frame["status"] == "ok"]
    table = ok[list(COLUMNS)].rename(columns=COLUMNS)
    lines = [table.to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-")
             if len(table) else "(no variant ran)"]
    others = frame[frame["status"] != "ok"]
    for (variant, status, reason), group in others.groupby(["variant", "status", "reason"],
                                                           dropna=False, sort=False):
        lines.append(f"{status}: {variant} on {len(group)} case(s): {reason}")
    return "\n".join(lines)
