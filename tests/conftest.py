"""Test-wide set-up: Triton's interpreter on machines without CUDA, and the `gpu` marker."""
import os

import torch

# Must happen before any module that defines a Triton kernel is imported.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402


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
