"""gpu_check section `configs`: every Triton kernel, and every autotune config of each
`triton.autotune` kernel (not only the autotuner's pick), checked against the float64 reference
on the ops' odd test shapes.

The kernels are found, not listed: every module of kernels/triton is imported and each
Autotuner in it is wrapped. Pass 1 runs every Triton variant of every op on its test cases as
the harness would (the autotuner picks); the wrappers note each distinct call a kernel gets
(its arguments as Triton's runtime specialises them), which configs the kernel's own pruning
keeps for it on this GPU, and which it picked. Pass 2 then forces each config in turn on one
call of each *specialisation* it compiles to under that config, the key Triton's JIT compiles
by: dtype, constexprs, the heuristics' (EVEN_K: K a multiple of the config's depth or not),
the arguments equal to 1 (the unit strides, i.e. the layout: a row-major B or a weight.t()
view) and which sizes, strides and addresses are multiples of 16. So every compiled path of
every kept config meets the reference at least once (the Autotuner runs its only config without
pruning or timing), re-running the variant that made such a call. A config the pruning drops
for a call is a `skipped` row (the autotuner never runs it; tests/test_triton_targets.py
compiles it for sm_80/sm_90); a config that raises (out of resources...) or misses the
reference is a `failed` row. fp32 results of tf32x3 dots are held to TF32X3_FLOOR.
"""
from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import dataclass, field

import torch

from kernels import registry
from kernels.base import Case
from suites.harness.correctness import check_call
from suites.harness.variant_passes import pass_scope
from suites.tools import triton_specialisation
from suites.tools.triton_launches import CONFIG_NAMES, with_config

SECTION = "configs"
# fp16 takes bf16's tensor-core path in every kernel here: bf16 and fp32 cover the code.
DTYPES = ("bfloat16", "float32")
# Odd shapes beyond each op's test_shape (crossed with its choices, as test_cases does). The
# test shapes take the GEMMs' masked K loop with nothing a multiple of 16. K = 64 takes their
# unmasked (EVEN_K) loop, with B row-major (matmul_add) and as a weight.t() view (linear, mlp),
# at M = 48, N = 80: every size and stride a multiple of 16, the suites' specialisation
# (aligned, vectorised, multi-buffered loads), with partial tiles still. The TMA GEMM needs
# 16-byte rows (K and N multiples of 8 in bf16, of 4 in fp32), which 29 and 45 are not. The
# row kernels change warps with the row (4 up to 1024, 8 up to 4096, then 16), and GeGLU its
# block past 2**22 elements. Flash at the head dims the suites run (64, 128), where the
# pruning differs.
EXTRA_SHAPES = {"matmul_add": ({"M": 48, "N": 80, "K": 64},),
                "linear": ({"T": 48, "IN": 64, "OUT": 80},),
                "attention": ({"B": 1, "H": 2, "S": 77, "D": 64},
                              {"B": 1, "H": 2, "S": 300, "D": 128}),
                "norm": ({"T": 37, "D": 1500}, {"T": 5, "D": 5000}),
                "mlp": ({"T": 1100, "D": 29, "I": 4001}, {"T": 48, "D": 64, "I": 80})}

# fp32 through tf32x3 (flash_attention._dot with EXACT_FP32, gemm_tma's INPUT_PRECISION):
# each operand is split in a TF32 part (11 significant bits, rounded) and the rest, and three
# TF32 tensor-core products are summed; the lo*lo product is dropped (<= 2**-22 |ab|) and each
# remainder is read as TF32 too (at worst truncated: <= 2**-10 of a remainder of <= 2**-11 |a|,
# so <= 2**-21 |ab| each). Per product, then, a relative error of at most u = 5 * 2**-22
# (1.2e-6) beyond an fp32 FMA's, whose rounding the reference's own error already covers. A dot
# of n products is off by at most u * sum |a_i b_i|; the check divides by the row's largest
# output, and a sum of n random-sign terms (the checks' random inputs) is about sqrt(n) times
# smaller than sum |a_i b_i|: a relative error of about u * sqrt(n). Flash has two reductions
# in series (q k^T over the head dim, whose error shifts the softmax weights by as much, then
# P V over the keys): twice that. The longest reduction the checks run is 300 keys (flash at
# S=300; head dims <= 128, the TMA GEMM's K = 64); with n rounded up to 512 the floor is
# 2 * u * sqrt(512) = 5.4e-5, five times fp32's and ~20x under plain TF32's usual 1e-3 (2**-11
# per product, 400x tf32x3's), so a kernel that lost tf32x3 still fails. The interpreter runs
# tf32x3 as an exact fp32 dot: only hardware needs the looser floor.
TF32X3_PRODUCT_ERROR = 5 * 2 ** -22
TF32X3_REDUCTION = 512  # the longest reduction of the checks' shapes (S=300 keys), rounded up
TF32X3_FLOOR = 2 * TF32X3_PRODUCT_ERROR * math.sqrt(TF32X3_REDUCTION)
TF32X3_FLAGS = (("INPUT_PRECISION", "tf32x3"), ("EXACT_FP32", True))


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
    """What the autotuned rows name a call by: the tensors' dtype and the constexprs passed
    by name (epilogue, head dim...); sizes and pointers are left out."""
    tensor = next((a for a in args if isinstance(a, torch.Tensor)), None)
    consts = sorted((k, v) for k, v in kwargs.items()
                    if k not in ("grid", "warmup") and isinstance(v, (bool, int, str)))
    return (str(getattr(tensor, "dtype", "?")).removeprefix("torch."), *consts)


def key_text(key: tuple) -> str:
    """`bfloat16 HAS_BIAS ACTIVATION=none`: a flag set is its name, a flag unset is left out."""
    return " ".join([key[0]] + [k if v is True else f"{k}={v}" for k, v in key[1:]
                                if v is not False])


def spec_text(spec: tuple, fn) -> str:
    """A specialisation of `fn` (triton_specialisation.specialisation_key) in words, the config's
    block sizes left out (the row names them): `fp32 HAS_BIAS ACTIVATION=none EVEN_K; =1
    stride_ak stride_bn; not /16: M N K`. The unit strides say the layout; `aligned` when
    every size, stride and address is a multiple of 16."""
    declared = {p.name for p in triton_specialisation.params(fn) if p.is_constexpr}
    dtype = next((kind[1:] for _, kind, _ in spec if kind.startswith("*")), "?")
    flags = [(name, value) for name, _, value in spec
             if name in declared and name not in CONFIG_NAMES]
    ones = [name for name, kind, _ in spec if kind == "constexpr" and name not in declared]
    odd = odd_arguments(spec)
    return "; ".join([key_text((dtype, *flags)),
                      "=1 " + " ".join(ones) if ones else "no unit stride",
                      "not /16: " + " ".join(odd) if odd else "aligned"])


def odd_arguments(spec: tuple) -> list[str]:
    """The sizes, strides and pointers of a specialisation that are not multiples of 16 (none:
    the suites' kind, aligned)."""
    return [name for name, kind, value in spec if value is False
            and (kind.startswith("*") or kind in ("i32", "i64", "u64"))]


@dataclass
class Use:
    """One distinct call of a kernel seen in pass 1 (its arguments as the runtime specialises
    them: tensors as triton_specialisation.Pointer stand-ins), the variant call that made it first,
    and the configs the pruning keeps for it here."""
    kernel: str
    key: tuple
    named: dict
    op: str
    variant: str
    case: Case
    kept: list = field(default_factory=list)


class Tracer:
    """Wraps each Autotuner's `run`: notes the distinct calls, and forces one config on the
    calls of one specialisation."""

    def __init__(self, tuners: dict):
        self.tuners = tuners
        self.parts = {name: triton_specialisation.kernel_parts(tuner)
                      for name, tuner in tuners.items()}
        self.uses: dict[tuple, Use] = {}
        self.current: tuple | None = None  # (op, variant, case) being run
        self.reached: list[str] = []       # the current variant's calls: kernel, key, pick
        self.force: tuple | None = None    # (kernel, specialisation, config)
        self.forced = 0
        self.tf32x3 = False                # the current variant ran a tf32x3 dot

    def __enter__(self):
        for name, tuner in self.tuners.items():
            tuner.run = self._wrap(name, tuner, type(tuner).run.__get__(tuner))
        return self

    def __exit__(self, *exc):
        for tuner in self.tuners.values():
            vars(tuner).pop("run", None)  # the class's own run again

    def spec(self, kernel: str, named: dict, config) -> tuple:
        """The specialisation `kernel` compiles to for a call (`named`: every argument but the
        config's) under `config`: its block sizes, then the heuristics (EVEN_K) on top."""
        fn, heuristics = self.parts[kernel]
        return triton_specialisation.specialisation_key(
            fn, with_config(heuristics, named, config))

    def _wrap(self, name, tuner, run):
        def traced(*args, **kwargs):
            key = call_key(args, kwargs)
            named = triton_specialisation.stand_ins(
                {**dict(zip(tuner.arg_names, args)),
                 **{k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}})
            self.tf32x3 |= any(named.get(k) == v for k, v in TF32X3_FLAGS)
            self._note(name, tuner, key, named, args, kwargs)
            if self.force is not None and self.force[0] == name and \
                    self.spec(name, named, self.force[2]) == self.force[1]:
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

    def _note(self, name, tuner, key, named, args, kwargs) -> None:
        """A call not seen before, in pass 1: kept with the configs the pruning keeps for it."""
        seen = (name, tuple(sorted(named.items(), key=lambda kv: kv[0])))
        if self.current is None or seen in self.uses:
            return
        prune = getattr(tuner, "early_config_prune", None)
        # As the Autotuner: one config is run as it is, never pruned.
        kept = (prune(tuner.configs, dict(zip(tuner.arg_names, args)), **kwargs)
                if prune and len(tuner.configs) > 1 else tuner.configs)
        self.uses[seen] = Use(name, key, named, *self.current, kept=list(kept))


def check_variant(op_name: str, variant_name: str, case: Case, baseline: dict,
                  tracer: Tracer | None = None) -> dict:
    """One variant on one case against the float64 reference, the harness's tolerance (twice
    the baseline's error plus a floor: TF32X3_FLOOR for fp32 when `tracer` saw the variant run
    a tf32x3 dot); `baseline` caches the baseline's error per case."""
    op = registry.get_op(op_name)
    if (op_name, case.id) not in baseline:
        baseline[(op_name, case.id)] = _run(op, op.baseline, case, None)[0].scaled_err
    if tracer is not None:
        tracer.tf32x3 = False

    def floor() -> float | None:  # asked after the first call, which reaches the kernels
        if tracer is not None and tracer.tf32x3 and case.dtype == "float32":
            return TF32X3_FLOOR
        return None

    check, used = _run(op, variant_name, case, baseline[(op_name, case.id)], floor)
    row = {"status": "ok" if check.passed else "failed", "scaled_err": check.scaled_err,
           "tolerance": check.tolerance}
    if used is not None:
        row["floor"] = f"tf32x3 {used:.1e}"
    return {**row, "error": check.problem} if check.problem else row


def _run(op, variant_name: str, case: Case, baseline_err, floor=lambda: None):
    """(the check, the floor it used if not the dtype's)."""
    variant = registry.get_variant(op.name, variant_name)
    generator = torch.Generator(device=case.device).manual_seed(11)
    inputs = op.make_inputs(case, generator)
    with pass_scope(variant):
        call = variant.prepare(case, inputs)
        call()  # the first call compiles and autotunes; the check is on a fresh draw
        used = floor()
        return check_call(op, case, inputs, call, baseline_err, refill_from=generator,
                          floor=used), used


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
                    row = check_variant(op_name, variant_name, case, baseline, tracer)
                finally:
                    tracer.current = None
                row["kernels"] = list(dict.fromkeys(tracer.reached))
                return row
            yield f"{op_name}/{variant_name} {case.id} autotuned", work


def _not_reached(tracer: Tracer, dtype: str):
    """An autotuned kernel no variant called in this dtype has no config checked: said so."""
    for name in tracer.tuners:
        if not any(use.kernel == name and use.key[0] == dtype for use in tracer.uses.values()):
            yield f"{name} ({dtype})", lambda: {
                "status": "skipped", "error": "no variant ran it here on the odd shapes (the "
                "autotuned rows say why): its configs are not checked"}


def _arch(device: str) -> str:
    if torch.device(device).type != "cuda":
        return device
    return "sm_%d%d" % torch.cuda.get_device_capability(device)


def plan_two(tracer: Tracer, dtype: str):
    """Pass 2's plan for `dtype`, from the calls pass 1 saw: (kernel, specialisation, config,
    call, kept). Per config, each specialisation it compiles to, in the order their first
    calls came, with the first of its calls whose pruning keeps the config (kept), or else its
    first call (not kept: the pruning drops the config for every call of it)."""
    for kernel, tuner in tracer.tuners.items():
        uses = [u for u in tracer.uses.values() if u.kernel == kernel and u.key[0] == dtype]
        for config in tuner.configs:
            chosen: dict[tuple, tuple[Use, bool]] = {}
            for use in uses:
                spec = tracer.spec(kernel, use.named, config)
                if not chosen.get(spec, (None, False))[1]:
                    kept = any(config is k for k in use.kept)
                    chosen[spec] = (use, kept) if kept or spec not in chosen else chosen[spec]
            for spec, (use, kept) in chosen.items():
                yield kernel, spec, config, use, kept


def item_name(tracer: Tracer, kernel: str, spec: tuple, config) -> str:
    return (f"{kernel} ({spec_text(spec, tracer.parts[kernel][0])}) "
            f"[{config_text(config)}]")


def _pass_two(tracer: Tracer, baseline: dict, dtype: str):
    for kernel, spec, config, use, kept in plan_two(tracer, dtype):
        name = item_name(tracer, kernel, spec, config)
        if not kept:
            yield name, lambda u=use: {"status": "skipped", "error": f"pruned on "
                                       f"{_arch(u.case.device)} for every call of this "
                                       "specialisation (kernels/triton/targets.py): never run"}
            continue

        def work(use=use, spec=spec, config=config):
            tracer.force, tracer.forced = (use.kernel, spec, config), 0
            try:
                row = check_variant(use.op, use.variant, use.case, baseline, tracer)
            finally:
                tracer.force = None
            if not tracer.forced:
                return {"status": "failed", "error": "the forced config was never run"}
            return {**row, "via": f"{use.op}/{use.variant} {use.case.id}"}
        yield name, work
