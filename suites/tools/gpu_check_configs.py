"""gpu_check section `configs`: every Triton kernel, and every autotune config of each
`triton.autotune` kernel (not only the autotuner's pick), checked against the float64 reference
on the ops' odd test shapes.

The kernels are found, not listed: every module of kernels/triton is imported and each
Autotuner in it is wrapped. Pass 1 runs every Triton variant of every op on its test cases as
the harness would (the autotuner picks); the wrappers note which kernel each call reached, with
which constexprs (its key here: dtype, epilogue, head dim...), which configs the kernel's own
pruning keeps for that call on this GPU, and which it picked. Pass 2 then forces each config in
turn on the calls of one key (the Autotuner runs its only config without pruning or timing),
re-running the variant that made such a call. A config the pruning drops here is a `skipped`
row (the autotuner never runs it; tests/test_triton_targets.py compiles it for sm_80/sm_90); a
config that raises (out of resources...) or misses the reference is a `failed` row.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field

import torch

from kernels import registry
from kernels.base import Case
from suites.harness.correctness import check_call
from suites.harness.variant_passes import pass_scope

SECTION = "configs"
# fp16 takes bf16's tensor-core path in every kernel here: bf16 and fp32 cover the code.
DTYPES = ("bfloat16", "float32")
# Odd shapes beyond each op's test_shape (crossed with its choices, as test_cases does). The
# TMA GEMM needs 16-byte rows (K and N multiples of 8 in bf16, of 4 in fp32), which 29 and 45
# are not; K = 64 takes the GEMMs' unmasked (EVEN_K) loop. The row kernels change warps with
# the row (4 up to 1024, 8 up to 4096, then 16), and GeGLU its block past 2**22 elements.
# Flash at the head dims the suites run (64, 128), where the pruning differs.
EXTRA_SHAPES = {"matmul_add": ({"M": 37, "N": 72, "K": 64},),
                "attention": ({"B": 1, "H": 2, "S": 77, "D": 64},
                              {"B": 1, "H": 2, "S": 300, "D": 128}),
                "norm": ({"T": 37, "D": 1500}, {"T": 5, "D": 5000}),
                "mlp": ({"T": 1100, "D": 29, "I": 4001},)}


def config_text(config) -> str:
    """`M128 N256 K64 GM8 w8 s3`: a config's block sizes, warps and stages."""
    names = [(k.replace("BLOCK_SIZE_", "").replace("BLOCK_", "").replace("GROUP_SIZE_", "G"), v)
             for k, v in config.kwargs.items()]
    return " ".join([f"{k}{v}" for k, v in names] + [f"w{config.num_warps}",
                                                     f"s{config.num_stages}"])


def find_autotuners() -> tuple[dict, list[tuple[str, str]]]:
    """name -> Autotuner for every triton.autotune kernel in kernels/triton/*.py (named after
    the module and function that define it), and (module, error) for modules that fail to
    import (a kernel needing a newer Triton, say)."""
    import kernels.triton as package
    from triton.runtime.autotuner import Autotuner

    found, failed = {}, []
    for info in pkgutil.iter_modules(package.__path__):
        try:
            module = importlib.import_module(f"{package.__name__}.{info.name}")
        except Exception as exc:
            failed.append((info.name, f"{type(exc).__name__}: {exc}"[:300]))
            continue
        for value in vars(module).values():
            if isinstance(value, Autotuner) and all(value is not t for t in found.values()):
                inner = value
                while hasattr(inner, "fn"):  # Autotuner -> Heuristics -> JITFunction -> def
                    inner = inner.fn
                found[f"{inner.__module__.rsplit('.', 1)[-1]}.{inner.__name__}"] = value
    return found, failed


def call_key(args, kwargs) -> tuple:
    """What makes two calls of one kernel the same compile here: the tensors' dtype and the
    constexprs passed by name (epilogue, head dim...); sizes and pointers are left out."""
    tensor = next((a for a in args if isinstance(a, torch.Tensor)), None)
    consts = sorted((k, v) for k, v in kwargs.items()
                    if k not in ("grid", "warmup") and isinstance(v, (bool, int, str)))
    return (str(getattr(tensor, "dtype", "?")).removeprefix("torch."), *consts)


def key_text(key: tuple) -> str:
    """`bfloat16 HAS_BIAS ACTIVATION=none`: a flag set is its name, a flag unset is left out."""
    return " ".join([key[0]] + [k if v is True else f"{k}={v}" for k, v in key[1:]
                                if v is not False])


@dataclass
class Use:
    """One (kernel, key) seen in pass 1: the variant call that reached it first, and the
    configs the pruning keeps for it here."""
    kernel: str
    key: tuple
    op: str
    variant: str
    case: Case
    kept: list = field(default_factory=list)


class Tracer:
    """Wraps each Autotuner's `run`: notes the calls, and forces one config on one key."""

    def __init__(self, tuners: dict):
        self.tuners = tuners
        self.uses: dict[tuple, Use] = {}
        self.current: tuple | None = None  # (op, variant, case) being run
        self.reached: list[str] = []       # the current variant's calls: kernel, key, pick
        self.force: tuple | None = None    # (kernel, key, config)
        self.forced = 0

    def __enter__(self):
        for name, tuner in self.tuners.items():
            tuner.run = self._wrap(name, tuner, type(tuner).run.__get__(tuner))
        return self

    def __exit__(self, *exc):
        for tuner in self.tuners.values():
            vars(tuner).pop("run", None)  # the class's own run again

    def _wrap(self, name, tuner, run):
        def traced(*args, **kwargs):
            key = call_key(args, kwargs)
            use = self.uses.get((name, key))
            if use is None and self.current is not None:
                prune = getattr(tuner, "early_config_prune", None)
                # As the Autotuner: one config is run as it is, never pruned.
                kept = (prune(tuner.configs, dict(zip(tuner.arg_names, args)), **kwargs)
                        if prune and len(tuner.configs) > 1 else tuner.configs)
                use = self.uses[(name, key)] = Use(name, key, *self.current, kept=list(kept))
            if self.force is not None and self.force[:2] == (name, key):
                saved, tuner.configs = tuner.configs, [self.force[2]]
                self.forced += 1
                try:  # one config: the Autotuner runs it, with no pruning and no timing
                    return run(*args, **kwargs)
                finally:
                    tuner.configs = saved
            out = run(*args, **kwargs)
            best = getattr(tuner, "best_config", None)
            self.reached.append(f"{name} ({key_text(key)}) picked "
                                f"{config_text(best) if best else '-'}")
            return out
        return traced


def check_variant(op_name: str, variant_name: str, case: Case, baseline: dict) -> dict:
    """One variant on one case against the float64 reference, the harness's tolerance (twice
    the baseline's error plus a floor); `baseline` caches the baseline's error per case."""
    op = registry.get_op(op_name)
    if (op_name, case.id) not in baseline:
        baseline[(op_name, case.id)] = _run(op, op.baseline, case, None).scaled_err
    check = _run(op, variant_name, case, baseline[(op_name, case.id)])
    row = {"status": "ok" if check.passed else "failed", "scaled_err": check.scaled_err,
           "tolerance": check.tolerance}
    return {**row, "error": check.problem} if check.problem else row


def _run(op, variant_name: str, case: Case, baseline_err):
    variant = registry.get_variant(op.name, variant_name)
    generator = torch.Generator(device=case.device).manual_seed(11)
    inputs = op.make_inputs(case, generator)
    with pass_scope(variant):
        call = variant.prepare(case, inputs)
        call()  # the first call compiles and autotunes; the check is on a fresh draw
        return check_call(op, case, inputs, call, baseline_err, refill_from=generator)


def triton_variants() -> list[tuple[str, str]]:
    return [(op.name, name) for op in registry.ops() for name in registry.variant_names(op.name)
            if registry.get_variant(op.name, name).family == "triton"]


def cases(op, dtype: str, device: str) -> list[Case]:
    shapes = list(EXTRA_SHAPES.get(op.name, ()))
    for name, values in op.choices.items():
        shapes = [{**shape, name: value} for shape in shapes for value in values]
    return op.test_cases(dtype, device, seed=3) + [
        Case.make(op.name, {p: shape[p] for p in op.params}, dtype, device, seed=3)
        for shape in shapes]


def items(device: str | None, dtypes=DTYPES, ops=None):
    """(item, work) pairs for run_items, planned lazily: pass 2 of a dtype uses what pass 1
    saw. `device` None: no device to run on (the kernels and configs are listed, skipped);
    `ops`: only these ops' variants (the CPU test runs one op under the interpreter)."""
    tuners, failed = find_autotuners()
    for module, error in failed:
        yield f"import kernels.triton.{module}", lambda e=error: {"status": "failed", "error": e}
    if device is None:  # the enumeration alone: nothing can be compiled or run here
        for name, tuner in tuners.items():
            for config in tuner.configs:
                yield (f"{name} [{config_text(config)}]",
                       lambda: {"status": "skipped", "error": "no CUDA"})
        return
    tracer, baseline = Tracer(tuners), {}
    with tracer:
        for dtype in dtypes:
            yield from _pass_one(tracer, baseline, dtype, device, ops)
            yield from _not_reached(tracer, dtype)
            yield from _pass_two(tracer, baseline, dtype)


def _pass_one(tracer: Tracer, baseline: dict, dtype: str, device: str, ops):
    for op_name, variant_name in triton_variants():
        if ops is not None and op_name not in ops:
            continue
        op, variant = registry.get_op(op_name), registry.get_variant(op_name, variant_name)
        for case in cases(op, dtype, device):
            def work(op_name=op_name, variant_name=variant_name, case=case, variant=variant):
                reason = variant.supports(case)
                if reason:
                    return {"status": "skipped", "error": reason}
                tracer.current, tracer.reached = (op_name, variant_name, case), []
                try:
                    row = check_variant(op_name, variant_name, case, baseline)
                finally:
                    tracer.current = None
                row["kernels"] = list(dict.fromkeys(tracer.reached))
                return row
            yield f"{op_name}/{variant_name} {case.id} autotuned", work


def _not_reached(tracer: Tracer, dtype: str):
    """An autotuned kernel no variant called in this dtype has no config checked: said so."""
    for name in tracer.tuners:
        if not any(kernel == name and key[0] == dtype for kernel, key in tracer.uses):
            yield f"{name} ({dtype})", lambda: {
                "status": "skipped", "error": "no variant ran it here on the odd shapes (the "
                "autotuned rows say why): its configs are not checked"}


def _arch(device: str) -> str:
    if torch.device(device).type != "cuda":
        return device
    return "sm_%d%d" % torch.cuda.get_device_capability(device)


def _pass_two(tracer: Tracer, baseline: dict, dtype: str):
    for (kernel, key), use in list(tracer.uses.items()):
        if key[0] != dtype:
            continue
        for config in tracer.tuners[kernel].configs:
            name = f"{kernel} ({key_text(key)}) [{config_text(config)}]"
            if all(config is not k for k in use.kept):
                yield name, lambda u=use: {"status": "skipped", "error": f"pruned on "
                                           f"{_arch(u.case.device)} for this call "
                                           "(kernels/triton/targets.py): never run"}
                continue

            def work(use=use, config=config):
                tracer.force, tracer.forced = (use.kernel, use.key, config), 0
                try:
                    row = check_variant(use.op, use.variant, use.case, baseline)
                finally:
                    tracer.force = None
                if not tracer.forced:
                    return {"status": "failed", "error": "the forced config was never run"}
                return {**row, "via": f"{use.op}/{use.variant} {use.case.id}"}
            yield name, work
