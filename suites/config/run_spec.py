"""The composed config checked once and turned into the frozen run spec (suites/harness/spec.py),
so nothing below run_suite.py sees a DictConfig, and every bad value fails here, before any
work starts."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Mapping

import torch

from kernels import registry
from kernels.base import DEFAULT_MODE, DTYPES, MODES, Case, Value
from suites.common.errors import ConfigError
from suites.results.journal import COMPLETE, still_running
from suites.harness.contention import usable_cpus
from suites.harness.cpu_budget import cpu_budget
from suites.harness.memory_probe import SETTINGS as MEMORY_PROBE_SETTINGS
from suites.harness.triton_counters_step import SETTINGS as TRITON_COUNTERS_SETTINGS
from suites.harness.profile_pass import ProfileSpec
from suites.harness.spec import RunSpec, SuiteSpec
from suites.harness.timing import TimingSpec
from suites.config.shapes import (axes_shapes, boolean, no_duplicates, non_negative_int,
                                  positive_int, reference_shape, square_shapes)
from suites.config.suite_table import get_suite

DEVICES = ("auto", "cpu", "cuda")
# Every key each section may hold: a misspelt or `+new_key` override would otherwise be ignored
# and the run would go ahead without what the user asked for.
KNOWN_KEYS = {
    "config": ("suite", "timing", "profile", "device", "seed", "calibrate", "progress",
               "resume", "memory_probe", "triton_counters", "suggested"),
    "suite": ("name", "op", "sizes", "axes", "dtypes", "modes", "variants", "reference", "grids",
              "batch", "history"),
    "timing": ("preset", "budget_s", "min_samples", "max_samples", "warmup_calls",
               "compile_warmup_calls", "l2_flush", "rounds", "threads", "case_timeout_s",
               "aa_control"),
    "profile": ("enabled", "wait", "warmup", "active", "record_shapes", "row_limit"),
}


def check_keys(section: Mapping, where: str) -> None:
    known = KNOWN_KEYS[where]
    for key in section:
        if key not in known:
            name = key if where == "config" else f"{where}.{key}"
            raise ConfigError(f"{name}: unknown key; {where} keys: {', '.join(known)}")


def resolve_device(value) -> str:
    if value not in DEVICES:
        raise ConfigError(f"device: {value!r} is not a device; accepted: {', '.join(DEVICES)}")
    has_cuda = torch.cuda.is_available()
    if value == "cuda" and not has_cuda:
        raise ConfigError("device=cuda: no CUDA GPU is available on this machine "
                          "(torch.cuda.is_available() is False); accepted here: auto, cpu")
    if value == "auto":
        return "cuda" if has_cuda else "cpu"
    return value


def _require(section: Mapping, key: str, where: str):
    if key not in section:
        raise ConfigError(f"{where}.{key}: missing")
    return section[key]


def _device_default(suite_cfg: Mapping, key: str, device: str):
    """`auto` in a suite config means: the value from `grids.<device>` in the same YAML."""
    value = _require(suite_cfg, key, "suite")
    if value != "auto":
        return value
    grid = suite_cfg.get("grids", {}).get(device, {})
    if key not in grid:
        raise ConfigError(f"suite.{key}: is `auto` but suite.grids.{device}.{key} is not set")
    return grid[key]


def _choices(value, key: str, what: str, accepted) -> tuple[str, ...]:
    """A list of names from `accepted` (one name alone is a list of one): unknown names, an
    empty list and repeats refused, naming `suite.<key>`."""
    values = value if isinstance(value, (list, tuple)) else [value]
    for name in values:
        if name not in accepted:
            raise ConfigError(f"suite.{key}: unknown {what} {name!r}; accepted: "
                              f"{', '.join(accepted)}")
    if not values:
        raise ConfigError(f"suite.{key}: empty list; accepted: " + ", ".join(accepted))
    no_duplicates(values, f"suite.{key}")
    return tuple(values)


def _dtypes(value) -> tuple[str, ...]:
    return _choices(value, "dtypes", "dtype", DTYPES)


def _modes(value) -> tuple[str, ...]:
    """suite.modes: what a call runs (kernels/base.py MODES); fwd_nograd, the inference
    forward, where a suite does not say."""
    return _choices(value, "modes", "mode", MODES)


def _variants(value, op: str) -> tuple[tuple[str, ...], str]:
    known = registry.variant_names(op)
    values = known if value == "all" else (value if isinstance(value, (list, tuple)) else [value])
    for name in values:
        if name not in known:
            raise ConfigError(f"suite.variants: unknown variant {name!r} for {op}; "
                              f"accepted: {', '.join(known)} (or all)")
    if not values:
        raise ConfigError(f"suite.variants: empty list; accepted: {', '.join(known)}")
    if value != "all":
        no_duplicates(values, "suite.variants")
    baseline = registry.get_op(op).baseline
    # Every row's speedup is against the baseline, so the baseline always runs, and first.
    ordered = [baseline] + [v for v in dict.fromkeys(values) if v != baseline]
    return tuple(ordered), baseline


def _shapes(suite_cfg: Mapping, op, device: str) -> list[dict[str, Value]]:
    """The YAML names its shapes by `sizes` (every parameter equal) or by `axes`; one set to
    null is absent (an experiment that gives axes to a suite whose YAML has sizes)."""
    keys = [k for k in ("sizes", "axes") if suite_cfg.get(k) is not None]
    if len(keys) != 1:
        raise ConfigError(f"suite: give exactly one of suite.sizes or suite.axes, got {keys or 'none'}")
    value = _device_default(suite_cfg, keys[0], device)
    return square_shapes(value, op) if keys[0] == "sizes" else axes_shapes(value, op)


def _batched(shapes: list[dict[str, Value]], batch, op) -> list[dict[str, Value]]:
    """Each shape at each batch of suite.batch: B first in the case id (B4-M64-N64-K64), and
    absent at its default, so a 2-D case keeps the id it always had."""
    if "B" not in op.optional:
        raise ConfigError(f"suite.batch: {op.name} has no batch axis; only "
                          "matmul_add takes 3-D inputs (B, M, K)")
    if not isinstance(batch, (list, tuple)) or not batch:
        raise ConfigError(f"suite.batch: expected a non-empty list, e.g. suite.batch=[1,4], "
                          f"got {batch!r}")
    no_duplicates(batch, "suite.batch")
    sizes = [positive_int(b, "suite.batch") for b in batch]
    return [shape if b == op.optional["B"] else {"B": b, **shape}
            for b in sizes for shape in shapes]


def device_memory(device: str) -> tuple[int, str]:
    """(bytes, what they are) of the memory a case's tensors must fit in on `device`: the GPU's
    own, or the machine's RAM. A CUDA grid checked without a GPU (the tests, gpu_check's plans
    on a CPU) gets the most bytes a tensor can index, int64's limit, so only a size that
    overflows it is refused there."""
    if device == "cuda":
        if not torch.cuda.is_available():
            return 2**63 - 1, "a tensor's int64 byte limit"
        total = torch.cuda.get_device_properties(0).total_memory
        return total, f"the GPU's {total / 2**30:.0f} GiB"
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return total, f"this machine's {total / 2**30:.0f} GiB of RAM"


def _fits_memory(shapes, dtypes: tuple[str, ...], op, device: str, where: str) -> None:
    """Each shape's inputs and output, which a call holds at once (the op's ideal bytes, at the
    widest dtype of the run), must fit in the device's memory. A shape past it can never be
    allocated: `suite.sizes=[10000000000000]` would be a failed row for every variant after the
    inputs' allocation failed (or an int64 overflow of M*K), so it is bad input, refused here."""
    limit, named = device_memory(device)
    widest = max(dtypes, key=lambda d: DTYPES[d].itemsize)
    for shape in shapes:
        try:  # an op whose model cannot say (a user's formula) is left to the run
            need = op.bytes_ideal(Case.make(op.name, shape, widest, device))
        except Exception:
            continue
        if need > limit:
            raise ConfigError(f"{where}: {params_text(shape)}: its inputs and output alone take "
                              f"{need / 2**30:.3g} GiB in {widest}, more than {named}")


def suite_spec(suite_cfg: Mapping, device: str) -> SuiteSpec:
    check_keys(suite_cfg, "suite")
    op = get_suite(_require(suite_cfg, "name", "suite"), suite_cfg.get("op")).op
    shapes = _shapes(suite_cfg, op, device)
    if "batch" in suite_cfg:
        shapes = _batched(shapes, suite_cfg["batch"], op)
    where = "suite.sizes" if suite_cfg.get("sizes") is not None else "suite.axes"
    for shape in shapes:  # a shape the op cannot build fails here, not as failed rows
        problem = op.shape_problem(shape)
        if problem:
            raise ConfigError(f"{where}: {params_text(shape)}: {problem}")
    variants, baseline = _variants(_require(suite_cfg, "variants", "suite"), op.name)
    dtypes = _dtypes(_device_default(suite_cfg, "dtypes", device))
    _fits_memory(shapes, dtypes, op, device, where)
    return SuiteSpec(
        name=op.name,
        shapes=tuple(tuple(s.items()) for s in shapes),
        dtypes=dtypes,
        variants=variants, baseline=baseline,
        reference=reference_shape(suite_cfg.get("reference"), op),
        modes=_modes(suite_cfg.get("modes", DEFAULT_MODE)),
    )


def auto_threads() -> tuple[int, str]:
    """All usable cores but one: physical cores within the affinity mask and the container's
    CPU quota (suites/harness/cpu_budget.py). With every core in one OpenMP team, another
    process taking a core stalls the whole team for a scheduler tick at every parallel region
    (a 10 us matmul timed at 4-16 ms); one core left free absorbs the machine's other work.
    Measured on a shared 2-core machine: see docs/methodology.md."""
    budget = cpu_budget(usable_cpus())
    threads = max(1, budget.cores - 1)
    return threads, (f"auto: {threads} = usable cores ({budget.describe()}) - 1, one left for "
                     "other processes")


def params_text(shape: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())


def usable_cores() -> int:
    return len(usable_cpus())


def timing_spec(cfg: Mapping) -> TimingSpec:
    check_keys(cfg, "timing")
    threads = cfg.get("threads", "auto")
    if threads == "auto":
        threads, rule = auto_threads()
    else:
        threads, rule = positive_int(threads, "timing.threads"), "set: timing.threads"
        if threads > usable_cores():  # oversubscribed threads time the scheduler, not the op
            raise ConfigError(f"timing.threads: {threads} is more than the {usable_cores()} "
                              "cores this process may use; accepted: 1 to "
                              f"{usable_cores()}, or auto")
    budget = cfg.get("budget_s")
    if not isinstance(budget, (int, float)) or isinstance(budget, bool) or not budget > 0 \
            or math.isinf(budget):
        raise ConfigError(f"timing.budget_s: {budget!r} is not a positive number of seconds")
    limit = cfg.get("case_timeout_s", 0)
    if not isinstance(limit, (int, float)) or isinstance(limit, bool) or not limit >= 0 \
            or math.isinf(limit):  # nan would pass every comparison and switch the limit off
        raise ConfigError(f"timing.case_timeout_s: {limit!r} is not a number of seconds (0: no "
                          "limit)")
    spec = TimingSpec(
        preset=str(cfg.get("preset", "custom")), budget_s=float(budget),
        min_samples=positive_int(cfg.get("min_samples"), "timing.min_samples"),
        max_samples=positive_int(cfg.get("max_samples"), "timing.max_samples"),
        warmup_calls=positive_int(cfg.get("warmup_calls"), "timing.warmup_calls"),
        compile_warmup_calls=positive_int(cfg.get("compile_warmup_calls"), "timing.compile_warmup_calls"),
        l2_flush=boolean(cfg.get("l2_flush", True), "timing.l2_flush"), threads=threads,
        rounds=positive_int(cfg.get("rounds", 5), "timing.rounds"), threads_rule=rule,
        case_timeout_s=float(limit),
        aa_control=boolean(cfg.get("aa_control", False), "timing.aa_control"),
    )
    if spec.max_samples < spec.min_samples:
        raise ConfigError(f"timing.max_samples: {spec.max_samples} is below timing.min_samples "
                          f"({spec.min_samples})")
    return spec


MAX_ACTIVE = 100  # profile=many takes 20 active steps; 100,000 grew past 5 GB
MAX_SEED = 2**32 - 1  # what every seeded generator accepts (numpy's is the narrowest)


def _at_most(value: int, most: int, key: str, why: str) -> int:
    if value > most:
        raise ConfigError(f"{key}: {value} is more than {most} ({why})")
    return value


def profile_spec(cfg: Mapping) -> ProfileSpec:
    check_keys(cfg, "profile")
    return ProfileSpec(
        enabled=boolean(cfg.get("enabled", True), "profile.enabled"),
        wait=non_negative_int(cfg.get("wait", 1), "profile.wait"),
        warmup=non_negative_int(cfg.get("warmup", 1), "profile.warmup"),
        active=_at_most(positive_int(cfg.get("active", 3), "profile.active"), MAX_ACTIVE,
                        "profile.active", "every event of the active steps is held in memory"),
        record_shapes=boolean(cfg.get("record_shapes", True), "profile.record_shapes"),
        row_limit=positive_int(cfg.get("row_limit", 25), "profile.row_limit"),
    )


def setting(value, key: str, accepted: tuple) -> str:
    """One of a key's named settings: memory_probe (auto: estimate a case's memory before it
    runs, skip one that would not fit: suites/harness/memory_probe.py), triton_counters (auto:
    compile what the Triton rows launch for sm_80/sm_90: suites/harness/
    triton_counters_step.py); off for either."""
    if value not in accepted:
        raise ConfigError(f"{key}: {value!r} is not a setting; accepted: {', '.join(accepted)}")
    return value


def build_run_spec(cfg: Mapping, out_dir: Path) -> RunSpec:
    """`cfg` is the composed config as plain dicts and lists (OmegaConf.to_container)."""
    check_keys(cfg, "config")
    device = resolve_device(cfg.get("device", "auto"))
    seed = cfg.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"seed: {seed!r} is not an integer from 0 to {MAX_SEED}")
    return RunSpec(
        suite=suite_spec(_require(cfg, "suite", "config"), device),
        device=device,
        timing=timing_spec(_require(cfg, "timing", "config")),
        profile=profile_spec(_require(cfg, "profile", "config")),
        seed=seed,
        calibrate=boolean(cfg.get("calibrate", True), "calibrate"),
        progress=boolean(cfg.get("progress", True), "progress"),
        out_dir=Path(out_dir),
        resume=boolean(cfg.get("resume", False), "resume"),
        memory_probe=setting(cfg.get("memory_probe", "auto"), "memory_probe",
                             MEMORY_PROBE_SETTINGS),
        triton_counters=setting(cfg.get("triton_counters", "auto"), "triton_counters",
                                TRITON_COUNTERS_SETTINGS),
        config={k: v for k, v in cfg.items() if k != "resume"},
    )


def resume_problem(state: dict | None, config: dict) -> str | None:
    """Why a run folder cannot be resumed with this config, or None: it must hold a run that
    did not complete, made with the same resolved config (a different grid or timing would mix
    two experiments in one table)."""
    if state is None:
        return "holds no run.json: nothing to resume"
    if state.get("state") == COMPLETE:
        return "its run is complete: nothing to resume"
    if still_running(state):
        return f"its run is still running (pid {state.get('pid')}): stop it first"
    return _first_difference(_measured(state.get("config") or {}), _measured(config), "")


def same_config(state: dict, config: dict) -> bool:
    return _first_difference(_measured(state.get("config") or {}), _measured(config), "") is None


# Keys that change no measurement (what the run does after its rows are on disk): a resume
# with another value is the same experiment.
NOT_MEASURED = ("triton_counters",)


def _measured(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in NOT_MEASURED}


# Keys a newer version added, as an older run (whose config lacks them) ran: their defaults.
ADDED_KEYS = {"timing.aa_control": False, "suite.modes": [DEFAULT_MODE], "memory_probe": "auto"}


def _first_difference(then, now, where: str) -> str | None:
    if isinstance(then, dict) and isinstance(now, dict):
        for key in list(then) + [k for k in now if k not in then]:
            path = f"{where}.{key}".lstrip(".")
            old = then.get(key, ADDED_KEYS.get(path))
            found = _first_difference(old, now.get(key), path)
            if found:
                return found
        return None
    if then != now:
        return (f"the interrupted run had {where}={then!r}, this one {now!r}: give the same "
                "overrides to resume")
    return None
