"""Names the kernels and every reader of results share, without importing torch: the dtypes
by name, their short forms, and what a parameter's value may be. `suites.analyze` reads a
trace with these alone, so it starts without torch's seconds of import."""
from __future__ import annotations

DTYPE_NAMES = ("float32", "bfloat16", "float16")
# Short names used in case ids and plots; the long names are what configs and CSVs use.
DTYPE_SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}

Value = int | str  # a parameter: a size, or one of a categorical parameter's choices
