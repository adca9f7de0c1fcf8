"""The contract every block shares: a Case (one point of the input space), an Op (inputs,
reference, cost model, how its suite is swept) and a Variant (one implementation, prepared into a
zero-argument call)."""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Callable, ContextManager, Mapping

import torch

from kernels.formula import Formula
from kernels.names import DTYPE_NAMES, DTYPE_SHORT, Value

DTYPES: dict[str, torch.dtype] = {name: getattr(torch, name) for name in DTYPE_NAMES}

FAMILIES = ("eager", "library", "compile", "triton")
# What a call of a case runs (a case axis, `suite.modes`): the forward under no_grad (inference,
# the default: ids and results of such cases are as they always were), the forward recording
# autograd's graph, the backward of a stored forward, or one training step (forward + backward).
MODES = ("fwd_nograd", "fwd", "bwd", "fwd_bwd")
DEFAULT_MODE = "fwd_nograd"
# A categorical parameter's values appear in case ids and file names as they are.
CHOICE = re.compile(r"[a-z][a-z0-9_]*")

Inputs = dict[str, torch.Tensor]
Call = Callable[[], torch.Tensor]


def as_value(value) -> Value:
    """A parameter's value as a Case holds it: a choice as is, a size as an int (a CSV column
    with gaps reads back as floats)."""
    return value if isinstance(value, str) else int(value)


def params_id(params) -> str:
    """`M1024-N1024-K1024`, `T1024-D768-rms`: (name, value) pairs as case ids write them."""
    return "-".join(v if isinstance(v, str) else f"{k}{int(v)}" for k, v in params)


@dataclass(frozen=True)
class Case:
    """One point of an op's input space: named parameters, a dtype and a device."""

    op: str
    params: tuple[tuple[str, Value], ...]
    dtype: str
    device: str
    seed: int = 0
    mode: str = DEFAULT_MODE

    @classmethod
    def make(cls, op: str, params: Mapping[str, Value], dtype: str, device: str, seed: int = 0,
             mode: str = DEFAULT_MODE):
        return cls(op, tuple((k, as_value(v)) for k, v in params.items()), dtype, device, seed,
                   mode)

    @property
    def trains(self) -> bool:
        """Autograd records the call (every mode but fwd_nograd): the inputs require grad."""
        return self.mode != DEFAULT_MODE

    def __getitem__(self, name: str) -> Value:
        for key, value in self.params:
            if key == name:
                return value
        raise KeyError(f"case {self.id} has no parameter {name!r}")

    @property
    def values(self) -> dict[str, Value]:
        """Parameter name -> value (a size, or a categorical choice)."""
        return dict(self.params)

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def device_type(self) -> str:
        return torch.device(self.device).type

    @property
    def id(self) -> str:
        """Stable, readable, file-name safe: `M1024-N1024-K1024-bf16`, `T1024-D768-rms-fp32`,
        and the mode after the dtype unless it is the default: `T1024-D768-rms-fp32-fwd_bwd`."""
        mode = "" if self.mode == DEFAULT_MODE else f"-{self.mode}"
        return f"{params_id(self.params)}-{DTYPE_SHORT[self.dtype]}{mode}"


class Op:
    """What all variants of one block share, and how its suite sweeps it. Subclasses fill in the
    model and the reference. The suite of an op is named like it (conf/suite/<name>.yaml)."""

    name: str = ""
    params: tuple[str, ...] = ()  # the named parameters a case of this op carries, in order
    # Categorical parameters and their values (every other parameter is a positive size).
    choices: dict[str, tuple[str, ...]] = {}
    # Sizes a case carries only when they differ from their default, so the ids (and results)
    # of cases without them stay as they were: matmul_add's batch B (3-D inputs) is 1 unless a
    # sweep asks for more (suite.batch). Formulas may use them.
    optional: dict[str, int] = {}
    baseline: str = "eager"  # the variant every speedup is measured against
    size_axis: str = ""  # the size on the x axis of the suite's plots
    rung: int = 0  # position on the ladder: suites are listed and reported in this order
    describe: str = ""  # one line: what the suite asks
    # FLOPs and ideal bytes (every input read once, every output written once), as formulas of
    # the parameters and `itemsize`: the report prints the same text the numbers come from.
    flops_formula: Formula
    bytes_formula: Formula
    # A small shape whose sizes are not multiples of any kernel's block sizes, for the tests
    # generated from the registry; they cross it with every choice of each categorical parameter.
    test_shape: dict[str, int] = {}

    def shape_problem(self, values: Mapping[str, Value]) -> str | None:
        """Why this op cannot build a case of these parameter values, or None. Checked when a
        run's config is read, so a bad shape is one line before any work, not failed rows."""
        return None

    def make_inputs(self, case: Case, generator: torch.Generator) -> Inputs:
        raise NotImplementedError

    def reference(self, case: Case, inputs: Inputs) -> torch.Tensor:
        """The exact answer: computed in float64 from the (low-precision) inputs."""
        raise NotImplementedError

    def _values(self, case: Case) -> dict[str, Value]:
        return {**self.optional, **case.values, "itemsize": case.torch_dtype.itemsize}

    def value(self, case: Case, name: str) -> Value:
        """A parameter of `case`, an optional one at its default where the case has none."""
        return case.values.get(name, self.optional.get(name))

    def columns(self, present) -> list[str]:
        """The parameter columns of a results table: the optional ones it has, then params."""
        return [p for p in self.optional if p in present] + list(self.params)

    def flops(self, case: Case) -> float:
        return self.flops_formula.evaluate(self._values(case))

    def bytes_ideal(self, case: Case) -> float:
        """Bytes moved if every input is read once and every output written once."""
        return self.bytes_formula.evaluate(self._values(case))

    def bytes_unfused(self, case: Case) -> float | None:
        """Bytes the unfused eager form moves (intermediates written and read back), if modelled."""
        return None

    def bytes_moved(self, case: Case, variant: str) -> float | None:
        """Bytes this variant's form moves, intermediates included, if modelled. By default only
        the baseline (the unfused form) is; ops whose variants fuse differently say more."""
        return self.bytes_unfused(case) if variant == self.baseline else None

    def test_cases(self, dtype: str, device: str, seed: int = 0) -> list[Case]:
        """The test shape with each choice of the categorical parameters."""
        cases = [dict(self.test_shape)]
        for name, values in self.choices.items():
            cases = [{**c, name: v} for c in cases for v in values]
        return [Case.make(self.name, {p: c[p] for p in self.params}, dtype, device, seed)
                for c in cases]


def always_supported(case: Case) -> str | None:
    return None


@dataclass(frozen=True)
class Variant:
    """One implementation of an op.

    `supports(case)` says why the variant cannot run on a case (its shape, dtype or device), or
    None; whether a run may *time* it is the harness's rule, not the variant's. `prepare(case,
    inputs)` does all set-up (compilation wrappers, weight layout) and returns the zero-argument
    call that is checked, timed and profiled, inside `scope()`. Lazy work (a compile, an
    autotune) happens in the first call, which the harness times separately.
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
    # A variant that replays a CUDA graph captured from another's compiled code (mode=
    # 'reduce-overhead' of 'compile'): that variant's name. Its profile is checked against it.
    replays: str | None = None
    # The (M, N, K) of the GEMM kernels a call launches that no aten op names (a Triton GEMM),
    # in launch order: the profile then gives each its achieved TFLOP/s (gemm_rates.py).
    gemm_shapes: Callable[[Case], tuple[tuple[int, int, int], ...]] | None = None
    # The prepare used when the case trains (Case.trains): None means `prepare` itself, which
    # works for every variant made of torch ops (autograd differentiates them); a Triton
    # variant must name one wired through torch.autograd.Function, or it is skipped there.
    prepare_train: Callable[[Case, Inputs], Call] | None = None

    def training_prepare(self) -> Callable[[Case, Inputs], Call] | None:
        """The prepare for a training mode, or None when the variant has no backward."""
        if self.prepare_train is not None:
            return self.prepare_train
        return None if self.family == "triton" else self.prepare

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"variant {self.op}/{self.name}: family {self.family!r} "
                             f"is not one of {', '.join(FAMILIES)}")


def as_parameter(tensor: torch.Tensor) -> torch.nn.Parameter:
    """A module's parameter over an input tensor: the input itself where the harness made it a
    parameter (a training mode: its gradient lands on the input the check reads), else a
    frozen parameter over its storage (inference)."""
    if isinstance(tensor, torch.nn.Parameter):
        return tensor
    return torch.nn.Parameter(tensor, requires_grad=False)


def random_tensor(shape, case: Case, generator: torch.Generator, scale: float = 1.0):
    """Normal random data (never zeros: zeros hide unwritten outputs and can run faster).

    Drawn in float32 on the case's device (a CPU draw of an 8192^2 matrix takes a second),
    from the generator the harness seeds per case, then cast.
    """
    data = torch.randn(shape, generator=generator, dtype=torch.float32, device=case.device)
    return (data * scale).to(case.torch_dtype)
