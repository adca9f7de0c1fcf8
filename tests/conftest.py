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
