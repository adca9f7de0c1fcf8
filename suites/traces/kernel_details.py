"""kernels.csv's columns beyond time: a GEMM kernel's identity and achieved rate, and every
kernel's launch configuration and occupancy. Empty for copies, memsets and CPU ops."""
from __future__ import annotations

import math

from suites.traces import gemm_names, occupancy
from suites.traces.gemm_rates import rate_rows
from suites.traces.gpu_specs import device_spec

RATE_COLUMNS = {"gemm_shapes": None, "gemm_tflops": math.nan, "gemm_flop_per_byte": math.nan,
                "gemm_gbps": math.nan}
EMPTY = {**gemm_names.EMPTY_ROW, **RATE_COLUMNS, **occupancy.EMPTY_ROW}
COLUMNS = tuple(EMPTY)


class KernelDetails:
    """The detail columns of each kernel name, for one analysis (its device and GEMM launches)."""

    def __init__(self, meta: dict, gemm_launches):
        self.meta = meta
        self.rates = rate_rows(gemm_launches)
        self._specs: dict = {}

    def spec(self, launch):
        if launch.device not in self._specs:
            self._specs[launch.device] = device_spec(self.meta, launch.device)
        return self._specs[launch.device]

    def row(self, name: str, kind: str, kernels) -> dict:
        if kind != "kernel":
            return dict(EMPTY)
        identity = gemm_names.gemm_identity(name)
        row = dict(EMPTY)
        if identity is not None:
            row.update(identity.row())
            row.update(self.rates.get(name, {}))
        row.update(occupancy.occupancy_row(kernels, self.spec))
        return row
