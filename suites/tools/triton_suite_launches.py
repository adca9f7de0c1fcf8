"""The Triton launches of the suites themselves, captured from their variants' own prepares
(triton_launches.py's recorder, on meta tensors, as `arch`'s GPU would run them).

Two callers: the ahead-of-time compile plans every launch of the suites' CUDA grids
(`grid_launches`, conf/suite/*.yaml), so that nothing the suites run on a GPU is left out of
it; a run records the registers, spills and shared memory of what its own rows launch
(`case_launches`, triton_counters.py), at its own cases and modes.
"""
from __future__ import annotations

from functools import partial

from kernels.base import DEFAULT_MODE
from suites.tools.triton_capture import Launch, _capture, _gpu_stand_ins, _train_step

# The suites with Triton variants whose launches are planned by hand in
# triton_launches.launches, not from their grids: the launch suite's paths but the JIT's launch
# a compiled kernel's handle, which a capture has not got, and they all launch nop_kernel as
# the JIT path does.
PLANNED_BY_HAND = ("launch",)


def planned_suites() -> tuple[str, ...]:
    """The suites whose every Triton launch is planned from their CUDA grids, in ladder order:
    each registered op with a triton-family variant (a new block's are planned without being
    listed), but those planned by hand."""
    from kernels import registry

    def launches_triton(op: str) -> bool:
        return any(registry.get_variant(op, v).family == "triton"
                   for v in registry.variant_names(op))

    return tuple(name for name in registry.op_names()
                 if name not in PLANNED_BY_HAND and launches_triton(name))


def _prepare_then_call(prepare, case, inputs):
    prepare(case, inputs)()


def _train_forward(prepare_train, case, inputs):
    prepare_train(case, inputs)()


def _train_then_step(prepare_train, case, inputs):
    _train_step(prepare_train(case, inputs))


def unsupported(variant, suite: str, values: dict, dtype: str, arch: int) -> str | None:
    """Why `variant` does not run this case on `arch`'s GPU (None: it does): asked as on the
    GPU, a CUDA case with arch's answers (the TMA GEMM needs sm_90)."""
    from kernels.base import Case
    with _gpu_stand_ins(arch):
        return variant.supports(Case.make(suite, values, dtype, "cuda"))


def case_launches(suite: str, variant, values: dict, dtype: str, mode: str,
                  arch: int) -> list[Launch]:
    """The launches one call of `variant` makes at this case and mode on `arch`'s GPU, as the
    harness makes them (suites/harness/training.py): fwd_nograd the prepared call; fwd the
    training prepare's forward, the inputs leaves that require grad; bwd and fwd_bwd that
    forward and its backward (a bwd call's forward runs outside its timed span, but its
    kernels are the step's: those that store what backward reads)."""
    from kernels import registry
    from kernels.base import Case
    from suites.harness.training import as_leaves

    op = registry.get_op(suite)
    case = Case.make(suite, values, dtype, "meta", mode=mode)
    inputs = op.make_inputs(case, None)  # no generator: meta tensors hold none
    # Prepared in the capture, where the wrappers' checks let meta tensors by.
    if mode == DEFAULT_MODE:
        call = partial(_prepare_then_call, variant.prepare, case, inputs)
    else:
        prepare = variant.training_prepare()
        if prepare is None:
            return []
        as_leaves(inputs)
        step = _train_forward if mode == "fwd" else _train_then_step
        call = partial(step, prepare, case, inputs)
    return _capture(f"{suite}/{variant.name} {case.id}", call, None, arch)


def grid_launches(dtype: str, arch: int) -> list[Launch]:
    """Every Triton launch the suites make on `arch`'s GPU in `dtype`: each Triton variant the
    GPU supports, inference and training (a training step as the harness runs it), at each
    shape of the suite's CUDA grid (conf/suite/<name>.yaml). Most of them compile to what the
    hand-picked launches do (sizes count only through their divisibility by 16); not the
    grids' row counts, which the norms' backward and the column sum split by the GPU's SM
    count into blocks whose counts the runtime specialises on (a multiple of 16 or not)."""
    from kernels import registry
    from suites.config.shapes import axes_shapes, square_shapes
    from suites.config.suite_table import device_grid

    out = []
    for name in planned_suites():
        grid = device_grid(name, "cuda")
        if dtype not in grid["dtypes"]:
            continue
        op = registry.get_op(name)
        shapes = (square_shapes(grid["sizes"], op) if "sizes" in grid
                  else axes_shapes(grid["axes"], op))
        for variant in (registry.get_variant(name, v) for v in registry.variant_names(name)):
            if variant.family != "triton":
                continue
            modes = (DEFAULT_MODE, "fwd_bwd") if variant.prepare_train else (DEFAULT_MODE,)
            for shape in shapes:
                if unsupported(variant, name, shape, dtype, arch):
                    continue
                for mode in modes:
                    out += case_launches(name, variant, shape, dtype, mode, arch)
    return out
