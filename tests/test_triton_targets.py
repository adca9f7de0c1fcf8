"""Every Triton kernel and every config the kernels keep, on sm_80 and sm_90 (the TMA GEMM: sm_90
only), compiled ahead of time on this CPU with the ptxas in the triton wheel: none needs more
shared memory than its target has, none spills in 16-bit (fp32 only where no fp32 config runs
clean), every kernel keeps at least one config that fits (a kernel without an autotuner: its
one config fits), and the flash pruning's shared-memory estimate is never below the
compiler's. Each kernel is compiled as the suites launch it, forward and backward, specialised
as Triton's runtime specialises the arguments, which is checked against the runtime's own
binder; and every kernel defined in kernels/triton is among the compiles, so a new one left
out of the launch plan fails here. (`python -m suites.tools.triton_targets` without
--kept-only also compiles the pruned configs and finds any pruned for nothing.)

The compiles are most of this file's time: the kept set is compiled once, in one process of
the tool (its own fresh Triton cache, two compile workers: CI's cores), and shared by the
tests that read it; or, while tests/fixtures/triton_targets.json is current (its key: the
kernels, the plan, the grids and the versions, suites/tools/triton_record.py), read from that
record, with a sample of it (each kernel once per target) compiled again and compared."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernels.triton import targets

ROOT = Path(__file__).resolve().parents[1]


def _compile_env(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")  # compile here, whatever ran before
    return {**env, **extra}


def _tool(tmp: Path, *flags) -> tuple[subprocess.CompletedProcess, list[dict]]:
    rows = tmp / "results.jsonl"
    done = subprocess.run([sys.executable, "-m", "suites.tools.triton_targets", "--kept-only",
                           "--jobs", str(min(2, os.cpu_count() or 1)), "--json", str(rows),
                           *flags], cwd=ROOT, env=_compile_env(tmp), capture_output=True,
                          text=True, timeout=2400)
    results = [json.loads(line) for line in rows.read_text().splitlines()] if rows.exists() else []
    return done, results


def _key_in_a_gpu_process() -> str:
    """The record's key as the tool computes it (kernels imported without the interpreter)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, "-c", "from suites.tools import triton_record as r; "
                           "print(r.inputs_key())"], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=True, timeout=300).stdout.strip()


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory):
    """(the tool's output: its exit code and last line; its JSON rows, one per kept compile;
    whether they came from the record): from tests/fixtures/triton_targets.json where it is
    current, else from one --kept-only run."""
    from suites.tools import triton_record
    stored = triton_record.read()
    if stored is not None and stored["key"] == _key_in_a_gpu_process():
        done = subprocess.CompletedProcess([], 0, stdout=stored["verdict"] + "\n", stderr="")
        return done, stored["results"], True
    done, results = _tool(tmp_path_factory.mktemp("triton_targets"))
    return done, results, False


def test_the_record_is_current(kept_run):
    """A change to a kernel, the plan, a grid or a version makes the record stale: the other
    tests then compiled everything (minutes); refresh it so the next runs need not."""
    from suites.tools.triton_record import REFRESH
    assert kept_run[2], f"tests/fixtures/triton_targets.json is stale: run `{REFRESH}`"


def test_a_sample_of_the_record_compiles_as_recorded(kept_run, tmp_path):
    """The record is the compiler's: each kernel's first recorded compile on each target,
    compiled again now, has the recorded shared memory, registers and spills."""
    from suites.tools import triton_record
    done, results, recorded = kept_run
    if not recorded:
        pytest.skip("compiled in full this run (the record is stale): nothing to sample")
    again, sampled = _tool(tmp_path, "--sample", str(triton_record.RECORD))
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    wanted = triton_record.sample(results)
    assert {triton_record.identity(r) for r in sampled} == wanted
    by_id = {triton_record.identity(r): r for r in results}
    for r in sampled:
        old = by_id[triton_record.identity(r)]
        assert (r["shared"], r["registers"], r["spill_bytes"], r["error"]) == \
            (old["shared"], old["registers"], old["spill_bytes"], old["error"]), r


def test_the_kept_configs_fit_sm80_and_sm90(kept_run):
    done, results, _ = kept_run
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, (done.stdout[-4000:] + done.stderr[-3000:])
    assert last.endswith("0 problem(s)"), last
    assert {r["arch"] for r in results} == {80, 90}
    assert results and all(r["kept"] and not r["error"] for r in results)
    assert not any(" pruned " in line for line in done.stdout.splitlines())


def test_every_kernel_is_compiled_on_both_targets(kept_run):
    """Every @triton.jit kernel of kernels/triton (found in the modules, not in the tool's
    list) is compiled for sm_80 and sm_90, but the TMA GEMM, which runs on sm_90 only; the
    kernels without an autotuner with the one config their launcher picks, always kept."""
    from suites.tools.triton_launches import defined_kernels
    _, results, _ = kept_run
    defined = set(defined_kernels())
    assert "kernels.triton.flash_attention_bwd._attn_bwd_dq_kernel" in defined  # found at all
    hopper_only = {"kernels.triton.gemm_tma._matmul_tma_kernel"}
    for arch in (80, 90):
        compiled = {r["function"] for r in results if r["arch"] == arch}
        assert defined - compiled == (hopper_only if arch == 80 else set()), arch
    fixed = {r["kernel"] for r in results if r["fixed"]}
    assert {"flash_bwd_dkdv", "flash_bwd_dq", "flash_bwd_delta", "column_sum", "geglu_bwd",
            "layer_norm_bwd", "rms_norm_bwd", "sum_partials"} <= fixed
    assert not fixed & {"gemm", "geglu", "flash", "gemm_tma"}
    # Both directions of the training steps, as the suites launch them.
    launches = {r["launch"] for r in results}
    # (A launch that compiles to what an earlier one does is that one's job: these come first.)
    for step in ("matmul_add train M=N=1024 K=1024: dw", "linear train M=N=1040 K=1024 w.t(): dx",
                 "attention train S=8192 D=128: forward", "attention bwd non-causal S=8192 "
                 "D=64: dq", "norm=layer train T=8192 D=8192: dx", "norm=rms train T=8192 "
                 "D=768: forward", "norm=layer train T=8192 D=768: dw db",
                 "mlp geglu train T=8192 I=3072: backward"):
        assert step in launches, step
    # The suites' own launches where they compile to kernels of their own: the norms' backward
    # at row counts whose blocks per program the runtime specialises otherwise.
    assert any(launch.startswith("norm/triton ") for launch in launches)


SPECIALISED = """
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from suites.tools import triton_launches as tl, triton_targets as tt
from suites.tools.triton_specialisation import mirror_problems, runtime_specialisation
todo = [job for job, _ in tl.jobs()]
problems = mirror_problems(todo + tl.odd_jobs(), tl.kernel_fn)
assert not problems, problems
job = next(j for j in todo if (j.kernel, j.dtype, j.arch, j.config, j.launch) == (
    "gemm", "bfloat16", 90, (128, 256, 64, 8, 3), "matmul_add K=1024"))
ours = tt.compile_job(job)
theirs = triton.compile(ASTSource(tl.kernel_fn("gemm"), *runtime_specialisation(
                            tl.kernel_fn("gemm"), job)),
                        target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_stages": 3})
assert ours.asm["ptx"] == theirs.asm["ptx"]
print(len(todo), ours.metadata.shared)
"""


def test_the_compiles_are_specialised_as_the_runtime_does(tmp_path):
    """Every planned launch (the backward's too), and the ops' odd test shapes, get from
    _signature the signature, constants (unit strides) and 16-divisibility that Triton's own
    launch path (the kernel's binder) makes of the same argument values; compiled both ways
    (no cache), the same PTX. gemm bf16 128x256x64, 3 stages, on sm_90 needs 147,456 B of
    shared memory as the suites launch it (49,152 B, and 4.7 KB of spills, compiled without
    the specialisation)."""
    done = subprocess.run([sys.executable, "-c", SPECIALISED], cwd=ROOT,
                          env=_compile_env(tmp_path, TRITON_ALWAYS_COMPILE="1"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    planned, shared = map(int, done.stdout.split())
    assert planned > 600 and shared == 147_456


def test_the_pruning_uses_the_table_and_the_estimate():
    from triton import Config
    spilling = Config({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64,
                       "GROUP_SIZE_M": 8}, num_warps=8, num_stages=3)
    assert not targets.gemm_keeps("gemm", spilling, "float32", 90, even_k=True)
    assert targets.gemm_keeps("gemm", spilling, "bfloat16", 90, even_k=True)
    assert targets.gemm_keeps("gemm", spilling, "float32", 100, even_k=True)  # not checked
    fp32_d128 = Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4, num_stages=4)
    # Estimated 196,608 B (the compiler needs 180,224 B), over sm_80's 166,912 B: dropped.
    assert targets.flash_smem_bytes(fp32_d128, "float32", 128) == 196_608
    assert not targets.flash_keeps(fp32_d128, "float32", 80, 128, 8192)
    fallback = Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4, num_stages=2)
    assert targets.flash_keeps(fallback, "float32", 80, 128, 8192)
    with pytest.raises(KeyError):
        targets.config_key(Config({}, num_warps=4))


def test_the_gemm_prune_reads_the_launch(monkeypatch):
    """What the autotuner hands early_config_prune: the arguments by name, and the caller's
    constexprs (HAS_RESIDUAL) as keywords."""
    import torch
    from kernels.triton.gemm_common import config
    # The GPU list itself is not loaded under the interpreter: three of its configs.
    GEMM_CONFIGS = [config(128, 256, 64, 3, 8), config(64, 128, 64, 4, 4), config(64, 64, 32, 4, 4)]
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    a = torch.empty(2, 2)
    prune = targets.gemm_prune("gemm")
    plain = prune(GEMM_CONFIGS, {"a_ptr": a, "b_ptr": a, "K": 4096}, HAS_RESIDUAL=False)
    residual = prune(GEMM_CONFIGS, {"a_ptr": a, "b_ptr": a, "K": 4096}, HAS_RESIDUAL=True)
    unfit = targets.UNFIT[("gemm", "float32", 90, "even")]
    assert [targets.config_key(c) for c in plain] == [(64, 128, 64, 4, 4)]
    assert all(targets.config_key(c) not in unfit for c in plain)
    assert [targets.config_key(c) for c in residual] == [(64, 128, 64, 4, 4), (64, 64, 32, 4, 4)]
    a16 = a.to(torch.bfloat16)  # every bf16 config fits sm_90 as the suites launch it
    assert prune(GEMM_CONFIGS, {"a_ptr": a16, "b_ptr": a16, "K": 4096}) == GEMM_CONFIGS


def test_the_tma_prune_reads_the_b_layout(monkeypatch):
    """The TMA GEMM's pruning: per dtype and B layout (the B_KMAJOR keyword) on sm_90, from the
    table; on a GPU the table does not cover, every config (the autotuner drops misfits)."""
    import torch
    from kernels.triton.gemm_common import config
    big, fp32_ok = config(128, 256, 64, 3, 8), config(64, 64, 32, 4, 4)
    a32, a16 = torch.empty(2, 2), torch.empty(2, 2, dtype=torch.bfloat16)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    for kmajor in (False, True):
        assert targets.tma_prune([big, fp32_ok], {"a_ptr": a32}, B_KMAJOR=kmajor) == [fp32_ok]
        assert targets.tma_prune([big, fp32_ok], {"a_ptr": a16}, B_KMAJOR=kmajor) == [big, fp32_ok]
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (10, 0))
    assert targets.tma_prune([big, fp32_ok], {"a_ptr": a32}) == [big, fp32_ok]


SIX_SUITES = ("matmul_add", "linear", "mlp", "attention", "norm", "block")


def test_the_suites_planned_from_their_grids_come_from_the_registry(monkeypatch):
    """Each op with a Triton variant, in ladder order, but the launch suite (planned by hand):
    a new block's Triton launches are compiled ahead of time without a list to edit."""
    from kernels import registry
    from kernels.base import Op, Variant
    from kernels.formula import Formula
    from suites.tools.triton_suite_launches import PLANNED_BY_HAND, planned_suites
    assert planned_suites() == SIX_SUITES and PLANNED_BY_HAND == ("launch",)
    monkeypatch.setattr(registry, "_OPS", dict(registry._OPS))  # this test's blocks go after it
    monkeypatch.setattr(registry, "_VARIANTS", dict(registry._VARIANTS))
    for name, family in (("scale_triton", "triton"), ("scale_eager", "eager")):
        op = type("Scale", (Op,), dict(name=name, params=("M",), size_axis="M", rung=0,
                                       test_shape={"M": 3}, flops_formula=Formula("M"),
                                       bytes_formula=Formula("2*M*itemsize")))()
        registry.register_op(op)
        registry.register_variant(Variant(name, "eager", "eager", lambda c, i: None))
        if family == "triton":
            registry.register_variant(Variant(name, "fused", "triton", lambda c, i: None))
    assert planned_suites() == (*SIX_SUITES, "scale_triton")
