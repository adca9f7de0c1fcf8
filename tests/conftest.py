"""Test-wide set-up: Triton's interpreter on machines without CUDA, the `gpu` marker, and a
suite that collects without Hydra (the GPU machine has no hydra-core)."""
import importlib
import os

import torch

# Must happen before any module that defines a Triton kernel is imported.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# A run's Triton counters (conf/config.yaml triton_counters) cost a compile of its kernels for
# sm_80/sm_90: the default of the tests' runs is off; the tests of that step turn it on.
os.environ.setdefault("FUSEBENCH_TRITON_COUNTERS", "off")

import pytest  # noqa: E402


def _importable(*names: str) -> bool:
    try:
        for name in names:
            importlib.import_module(name)
    except ImportError:
        return False
    return True


HAS_HYDRA = _importable("hydra", "omegaconf")
# Modules that compose configs with Hydra while they are collected (a parametrize over every
# gpu_check plan): where Hydra is missing they are left out, and the header says so, rather
# than one collection error stopping `pytest -m gpu tests`. Every other module imports Hydra
# only in the tests that use it.
COMPOSED_AT_COLLECTION = ("test_gpu_check.py",)


def pytest_ignore_collect(collection_path, config):
    if not HAS_HYDRA and collection_path.name in COMPOSED_AT_COLLECTION:
        return True
    return None


def pytest_report_header(config):
    if not HAS_HYDRA:
        return (f"hydra-core is not installed: {', '.join(COMPOSED_AT_COLLECTION)} not "
                "collected; the tests that compose a config need it, the gpu tests do not")
    return None


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """As the harness does per case: after 8 shapes of one function dynamo silently falls back
    to eager, and tests compile the same block functions at many shapes."""
    torch._dynamo.reset()
    yield


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """run_suite.py as a user runs it, on a tiny grid of matmul_add: (its run folder, the
    finished process). One run for the session: test_end_to_end reads its every file and
    test_report_browser renders its report (read only; a test that changes a run copies it)."""
    from test_end_to_end import assert_finished, run_suite

    out = tmp_path_factory.mktemp("run") / "matmul_add"
    result = run_suite("suite=matmul_add", "suite.sizes=[16,40]", "suite.dtypes=[float32]",
                       "device=cpu", "timing=quick", f"hydra.run.dir={out}")
    assert_finished(result, out)
    return out, result


@pytest.fixture(scope="session")
def tiny_sweep(tmp_path_factory):
    """run_suite.py -m over two dtypes of TINY_CASE: (its sweep folder, the finished process).
    Read only (a test that removes a job copies it); test_end_to_end reads the sweep's folders
    and test_compare compares a run of its own with job 0 (float32) and with the sweep."""
    from test_end_to_end import TINY_CASE, assert_finished, run_suite

    sweep = tmp_path_factory.mktemp("sweep")
    result = run_suite("-m", "suite.dtypes=[float32],[bfloat16]", *TINY_CASE,
                       f"hydra.sweep.dir={sweep}")
    assert_finished(result, *sorted(p for p in sweep.iterdir()
                                    if p.is_dir() and p.name[0].isdigit()))
    return sweep, result
