"""The contract every block shares: a Case (one point of the input space), an Op (inputs,
reference, cost model) and a Variant (one implementation, prepared into a zero-argument call)."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable, ContextManager, Mapping

import torch

# Short names used in case ids and plots; the long names are what configs and CSVs use.
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
DTYPE_SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}

FAMILIES = ("eager", "library", "compile", "triton")

Inputs = dict[str, torch.Tensor]
Call = Callable[[], torch.Tensor]


@dataclass(frozen=True)
class Case:
    """One point of an op's input space: named integer sizes, a dtype and a device."""

    op: str
    params: tuple[tuple[str, int], ...]
    dtype: str
    device: str
    seed: int = 0

    @classmethod
    def make(cls, op: str, params: Mapping[str, int], dtype: str, device: str, seed: int = 0):
        return cls(op, tuple((k, int(v)) for k, v in params.items()), dtype, device, seed)

    def __getitem__(self, name: str) -> int:
        for key, value in self.params:
            if key == name:
                return value
        raise KeyError(f"case {self.id} has no parameter {name!r}")

    @property
    def sizes(self) -> dict[str, int]:
        return dict(self.params)

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def device_type(self) -> str:
        return torch.device(self.device).type

    @property
    def id(self) -> str:
        """Stable, readable, file-name safe: `M1024-N1024-K1024-bf16`."""
        return "-".join([f"{k}{v}" for k, v in self.params] + [DTYPE_SHORT[self.dtype]])


class Op:
    """What all variants of one block share. Subclasses fill in the model and the reference."""

    name: str = ""
    params: tuple[str, ...] = ()  # the named sizes a case of this op carries, in order
    baseline: str = "eager"  # the variant every speedup is measured against
    # A small shape whose sizes are not multiples of any kernel's block sizes, for the tests
    # generated from the registry.
    test_shape: dict[str, int] = {}

    def make_inputs(self, case: Case, generator: torch.Generator) -> Inputs:
        raise NotImplementedError

    def reference(self, case: Case, inputs: Inputs) -> torch.Tensor:
        """The exact answer: computed in float64 from the (low-precision) inputs."""
        raise NotImplementedError

    def flops(self, case: Case) -> float:
        raise NotImplementedError

    def bytes_ideal(self, case: Case) -> float:
        """Bytes moved if every input is read once and every output written once."""
        raise NotImplementedError

    def bytes_unfused(self, case: Case) -> float | None:
        """Bytes the unfused eager form moves (intermediates written and read back), if modelled."""
        return None

    def bytes_moved(self, case: Case, variant: str) -> float | None:
        """Bytes this variant's form moves, intermediates included, if modelled. By default only
        the baseline (the unfused form) is; ops whose variants fuse differently say more."""
        return self.bytes_unfused(case) if variant == self.baseline else None


def always_supported(case: Case) -> str | None:
    return None


@dataclass(frozen=True)
class Variant:
    """One implementation of an op.

    `prepare(case, inputs)` does all set-up (compilation wrappers, weight layout) and returns the
    zero-argument call that is checked, timed and profiled, inside `scope()`. Lazy work (a
    compile, an autotune) happens in the first call, which the harness times separately.
    """

    op: str
    name: str
    family: str
    prepare: Callable[[Case, Inputs], Call]
    supports: Callable[[Case], str | None] = always_supported
    description: str = ""
    # Entered once around all of a variant's calls (first call, check, timing, profile): global
    # settings a variant needs, such as a pinned SDPA backend, without timing their set-up.
    scope: Callable[[], ContextManager] = contextlib.nullcontext

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"variant {self.op}/{self.name}: family {self.family!r} "
                             f"is not one of {', '.join(FAMILIES)}")


def random_tensor(shape, case: Case, generator: torch.Generator, scale: float = 1.0):
    """Normal random data (never zeros: zeros hide unwritten outputs and can run faster).

    Drawn in float32 on the case's device (a CPU draw of an 8192^2 matrix takes a second),
    from the generator the harness seeds per case, then cast.
    """
    data = torch.randn(shape, generator=generator, dtype=torch.float32, device=case.device)
    return (data * scale).to(case.torch_dtype)
