"""Config composition with Hydra's Compose API: every documented override, every suite YAML, and
bad input failing with one line that names the key and the accepted values."""
import importlib
from pathlib import Path

import pytest
import torch

from suites.config.group_choices import check_group_choices
from suites.common.errors import ConfigError
from suites.config.run_spec import build_run_spec, suite_spec

from suites.config.compose import CONF_DIR as CONF, compose


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


# Every test here composes with Hydra, imported only where it is used: the GPU machine has no
# hydra-core, and `pytest -m gpu tests` collects this module there too.
pytestmark = pytest.mark.skipif(not _importable("hydra"), reason="needs hydra-core")


def plain(cfg) -> dict:
    """The composed config as plain dicts and lists, interpolations resolved."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True)


def composed(*overrides, hydra=False):
    return compose(list(overrides), hydra_config=hydra)


def spec_of(*overrides, out_dir="/tmp/unused"):
    return build_run_spec(plain(composed(*overrides)), Path(out_dir))


def test_every_suite_yaml_composes_into_a_spec_on_every_device():
    for path in sorted((CONF / "suite").glob("*.yaml")):
        spec = spec_of(f"suite={path.stem}", "device=cpu")
        assert spec.suite.name == path.stem and spec.cases()
        # The CUDA grid is checked too (without a GPU: the device only picks the grid).
        cfg = plain(composed(f"suite={path.stem}"))["suite"]
        for key in ("sizes", "axes", "dtypes"):
            if key in cfg:
                cfg[key] = cfg["grids"]["cuda"][key]
        assert suite_spec(cfg, "cuda").shapes


def test_default_cpu_grid():
    spec = spec_of("device=cpu")
    assert spec.suite.name == "matmul_add"
    assert [dict(s)["M"] for s in spec.suite.shapes] == [64, 128, 256, 512, 1024, 2048]
    assert spec.suite.dtypes == ("float32", "bfloat16")
    assert spec.suite.variants == ("eager", "addmm", "compile", "triton", "triton_tma")


def test_cuda_grid_goes_to_8192_with_float16():
    cfg = plain(composed())
    grid = cfg["suite"]["grids"]["cuda"]
    assert max(grid["sizes"]) == 8192 and "float16" in grid["dtypes"]


def test_documented_overrides_compose():
    spec = spec_of("suite.sizes=[64,256,1024]", "suite.dtypes=[float32,bfloat16]",
                   "suite.variants=[eager,compile]", "device=cpu", "timing=quick")
    assert [dict(s) for s in spec.suite.shapes] == [
        {"M": n, "N": n, "K": n} for n in (64, 256, 1024)]
    assert spec.suite.dtypes == ("float32", "bfloat16")
    assert spec.suite.variants == ("eager", "compile")
    assert spec.timing.preset == "quick" and spec.timing.budget_s < 0.1
    assert [c.id for c in spec.cases()][:2] == ["M64-N64-K64-fp32", "M256-N256-K256-fp32"]


def test_baseline_is_added_and_put_first():
    assert spec_of("suite.variants=[compile]", "device=cpu").suite.variants == ("eager", "compile")


def test_hydra_run_dir_override():
    cfg = composed("hydra.run.dir=/tmp/somewhere", hydra=True)
    assert cfg.hydra.run.dir == "/tmp/somewhere"
    assert cfg.hydra.job.chdir is False


def test_device_auto_and_cpu():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert spec_of().device == expected
    assert spec_of("device=cpu").device == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_device_cuda_without_gpu_is_a_clear_error():
    with pytest.raises(ConfigError, match=r"device=cuda: .*accepted here: auto, cpu"):
        spec_of("device=cuda")


@pytest.mark.parametrize("override, message", [
    ("suite.dtypes=[float8]", r"suite.dtypes: unknown dtype 'float8'; accepted: float32, bfloat16, float16"),
    ("suite.variants=[eager,fast]",
     r"suite.variants: unknown variant 'fast' for matmul_add; accepted: eager, addmm"),
    ("suite.sizes=[64,0]", r"suite.sizes: 0 is not a positive integer"),
    ("suite.sizes=[-8]", r"suite.sizes: -8 is not a positive integer"),
    ("suite.sizes=[64,abc]", r"suite.sizes: 'abc' is not a positive integer"),
    ("suite.sizes=[1.5]", r"suite.sizes: 1.5 is not a positive integer"),
    ("suite.sizes=[]", r"suite.sizes: expected a non-empty list"),
    ("suite.dtypes=[]", r"suite.dtypes: empty list; accepted: float32"),
    # A size no memory holds is bad input, not a failed row per variant (nor an int64 overflow).
    ("suite.sizes=[64,10000000000000]", r"suite.sizes: M=10000000000000, N=10000000000000, "
                                        r"K=10000000000000: its inputs and output alone take "
                                        r"1.12e\+18 GiB in float32, more than "),
    ("device=tpu", r"device: 'tpu' is not a device; accepted: auto, cpu, cuda"),
    ("timing.budget_s=0", r"timing.budget_s: 0 is not a positive number"),
    # Strict inputs: a switch is true or false, every key is known, nothing is listed twice,
    # the profile schedule counts steps, threads fit the cores, a shape the op can build.
    ("profile.enabled=off", r"profile.enabled: 'off' is not a boolean; accepted: true, false"),
    ("calibrate=no", r"calibrate: 'no' is not a boolean"),
    ("timing.l2_flush=1", r"timing.l2_flush: 1 is not a boolean"),
    ("progress=yes", r"progress: 'yes' is not a boolean"),
    ("+foo=1", r"foo: unknown key; config keys: suite, timing"),
    ("+timing.budget=1", r"timing.budget: unknown key; timing keys: preset, budget_s"),
    ("+suite.size=[64]", r"suite.size: unknown key"),
    ("+profile.steps=3", r"profile.steps: unknown key"),
    ("suite.sizes=[64,64]", r"suite.sizes: 64 is listed twice"),
    ("suite.dtypes=[float32,float32]", r"suite.dtypes: 'float32' is listed twice"),
    ("suite.variants=[eager,addmm,addmm]", r"suite.variants: 'addmm' is listed twice"),
    ("profile.wait=-1", r"profile.wait: -1 is not a non-negative integer"),
    ("profile.warmup=abc", r"profile.warmup: 'abc' is not a non-negative integer"),
    ("timing.threads=1000", r"timing.threads: 1000 is more than the \d+ cores this process may use"),
    ("timing.case_timeout_s=abc", r"timing.case_timeout_s: 'abc' is not a number of seconds"),
    ("timing.case_timeout_s=-5", r"timing.case_timeout_s: -5 is not a number of seconds"),
    # nan passes every comparison: a nan budget would sample to max_samples, a nan limit none.
    ("timing.budget_s=nan", r"timing.budget_s: nan is not a positive number"),
    ("timing.budget_s=inf", r"timing.budget_s: inf is not a positive number"),
    ("timing.case_timeout_s=nan", r"timing.case_timeout_s: nan is not a number of seconds"),
    ("profile.active=100000", r"profile.active: 100000 is more than 100 \(every event"),
    ("seed=99999999999999999999", r"seed: 99999999999999999999 is not an integer from 0 to"),
])
def test_bad_values_name_the_key_and_the_accepted_values(override, message):
    with pytest.raises(ConfigError, match=message):
        spec_of(override)


@pytest.mark.parametrize("argv, message", [
    (["suite=foo"], r"suite=foo: unknown suite; accepted: .*matmul_add"),
    (["-m", "suite=matmul_add,bar"], r"suite=bar: unknown suite"),
    (["timing=slow"], r"timing=slow: unknown timing; accepted: default, quick"),
    (["experiment=nope"], r"experiment=nope: unknown experiment; accepted: ladder"),
    (["-m", "hydra/launcher=slurmm"], r"hydra/launcher=slurmm: unknown hydra/launcher; accepted: "
                                      r"basic, local, slurm, submitit_local, submitit_slurm"),
])
def test_unknown_group_choices_fail_before_hydra(argv, message):
    with pytest.raises(ConfigError, match=message):
        check_group_choices(argv, CONF)


@pytest.mark.parametrize("argv, message", [
    (["foo=1"], r"^foo: unknown key: not in the config"),
    (["suite=mlp", "suite.sizes=[16]"], r"^suite.sizes: unknown key"),
    (["suite.grids.cpu=[1,2]"], r"Error merging override suite.grids.cpu=\[1,2\]: Cannot merge"),
])
def test_an_override_the_config_cannot_take_is_one_line_before_hydra(argv, message):
    from suites.config.command_line import check_overrides
    with pytest.raises(ConfigError, match=message):
        check_overrides(argv, CONF)
    check_overrides(["suite=mlp", "device=cpu", "hydra.run.dir=x"], CONF)  # fine: no error


def test_known_group_choices_pass():
    check_group_choices(["suite=matmul_add", "timing=quick", "device=cpu", "-m",
                         "hydra/launcher=slurm", "experiment=ladder"], CONF)


def test_a_categorical_axis_from_the_command_line():
    spec = spec_of("suite=norm", "suite.axes={T:[8,16],D:[32],norm:[rms]}", "device=cpu")
    assert [c.id for c in spec.cases()][:2] == ["T8-D32-rms-fp32", "T16-D32-rms-fp32"]
    assert spec.suite.reference == (("T", 8192), ("D", 768), ("norm", "layer"))
    with pytest.raises(ConfigError, match="suite.axes.norm: 'group' is not a norm; accepted: "
                                          "layer, rms"):
        spec_of("suite=norm", "suite.axes={T:[8],D:[32],norm:[group]}", "device=cpu")


@pytest.mark.parametrize("overrides, message", [
    (["suite=mlp", "suite.axes=[]"], r"suite.axes: empty list; expected a mapping of axis name "
                                     r"to a list of values .* e.g. suite.axes=\{T:\[64\],D:"),
    (["suite=linear", "suite.grids.cpu.axes=[]"], r"suite.axes: empty list"),  # its `auto`
    (["suite=norm", "suite.axes=[]"], r"suite.axes=\{T:\[64\],D:\[64\],norm:\[layer\]\}"),
    (["suite=mlp", "suite.axes={T:[],D:[768],I:[3072]}"], r"suite.axes.T: empty list of values"),
    (["suite=mlp", "suite.axes={T:[1000000000000],D:[768],I:[3072]}"],
     r"suite.axes: T=1000000000000, D=768, I=3072: its inputs and output alone take"),
    (["suite.batch=[1,100000000]"], r"suite.sizes: B=100000000, M=64, N=64, K=64: its inputs"),
])
def test_an_empty_axis_or_a_shape_past_memory_names_its_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        spec_of(*overrides, "device=cpu")


def test_axes_values_listed_twice_and_shapes_the_op_cannot_build():
    with pytest.raises(ConfigError, match=r"suite.axes.T: 8 is listed twice"):
        spec_of("suite=norm", "suite.axes={T:[8,8],D:[32],norm:[rms]}", "device=cpu")
    with pytest.raises(ConfigError, match=r"suite.axes: B=1, S=16, D=60, H=7, I=32: D=60 is not "
                                          r"divisible by H=7"):
        spec_of("suite=block", "suite.axes={B:[1],S:[16],D:[60],H:[7],I:[32]}", "device=cpu")


def test_every_multirun_job_is_checked_before_the_first_runs():
    from suites.config.command_line import check_multirun
    from suites.config.hydra_sweep import planned_jobs
    jobs = planned_jobs(["-m", "suite=matmul_add,mlp", "timing.rounds=3,4", "device=cpu",
                         "hydra.sweep.dir=/tmp/x"])
    assert jobs == [["suite=matmul_add", "timing.rounds=3", "device=cpu"],
                    ["suite=matmul_add", "timing.rounds=4", "device=cpu"],
                    ["suite=mlp", "timing.rounds=3", "device=cpu"],
                    ["suite=mlp", "timing.rounds=4", "device=cpu"]]
    # A sweep set in the config (an experiment preset) comes first; the command line wins.
    assert planned_jobs(["timing.rounds=3,4", "suite=mlp"], {"suite": "linear,mlp"}) == [
        ["suite=mlp", "timing.rounds=3"], ["suite=mlp", "timing.rounds=4"]]
    check_multirun(["-m", "device=cpu", "timing.rounds=3,4"], CONF)  # all good: no error
    with pytest.raises(ConfigError, match=r"multirun job 1 of 2 \(device=cpu timing.rounds=0\): "
                                          r"timing.rounds: 0 is not a positive integer"):
        check_multirun(["-m", "device=cpu", "timing.rounds=3,0"], CONF)
    with pytest.raises(ConfigError, match=r"multirun: suite.axes: unknown key"):
        check_multirun(["-m", "device=cpu", "suite=matmul_add,block", "suite.axes={B:[1]}"], CONF)
    with pytest.raises(ConfigError, match=r"multirun job 1 of 2 \(device=cpu suite=block "
                                          r"suite.sizes=\[64\]\): suite.sizes: unknown key"):
        check_multirun(["-m", "device=cpu", "suite=matmul_add,block", "suite.sizes=[64]"], CONF)
    check_multirun(["device=cpu", "timing.rounds=0"], CONF)  # not a multirun: the run checks


def test_the_ladder_experiment_sweeps_every_block_in_ladder_order():

    from suites.config.command_line import check_multirun
    from suites.config.hydra_sweep import planned_jobs, sweep_params
    from kernels import registry
    primary = compose(["experiment=ladder"], hydra_config=True)
    jobs = planned_jobs(["experiment=ladder", "device=cpu"], sweep_params(primary))
    assert [job[0] for job in jobs] == [f"suite={name}" for name in registry.op_names()]
    assert str(primary.hydra.sweep.dir).startswith("results/ladder/")
    check_multirun(["-m", "experiment=ladder", "device=cpu"], CONF)  # every job composes


def test_the_training_ladder_sweeps_every_block_in_every_training_mode():
    from suites.config.command_line import check_multirun
    from suites.config.hydra_sweep import planned_jobs, sweep_params
    primary = compose(["experiment=ladder_train"], hydra_config=True)
    jobs = planned_jobs(["experiment=ladder_train", "device=cpu"], sweep_params(primary))
    assert {job[1] for job in jobs} == {"suite.modes=[fwd,bwd,fwd_bwd]"}
    assert [job[0] for job in jobs] == [f"suite={name}" for name in
                                        ("matmul_add", "linear", "mlp", "attention", "norm",
                                         "block")]
    assert str(primary.hydra.sweep.dir).startswith("results/ladder_train/")
    check_multirun(["-m", "experiment=ladder_train", "device=cpu"], CONF)
