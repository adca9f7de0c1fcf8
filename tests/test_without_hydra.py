"""The GPU machine has no hydra-core: `pytest -m gpu tests` must collect there. Checked here by
collecting in a fresh interpreter in which Hydra and OmegaConf cannot be imported."""
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# Hydra and OmegaConf made unimportable before pytest starts; Hydra's own pytest plugin, which
# an install without Hydra does not have, is turned off.
NO_HYDRA = """
import importlib.abc, sys

class NoHydra(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("hydra", "omegaconf"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoHydra())
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def test_the_gpu_tests_collect_without_hydra(tmp_path):
    # -q on top of pytest.ini's: one line per module, `tests/test_gpu.py: 6`.
    done = subprocess.run(
        [sys.executable, "-c", NO_HYDRA, "--collect-only", "-q", "-m", "gpu", str(TESTS),
         "-p", "no:hydra_pytest", "-p", "no:cacheprovider"],
        cwd=TESTS.parent, capture_output=True, text=True, timeout=600,
        env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    counts = dict(line.rsplit(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert int(counts["tests/test_gpu.py"]) >= 6, done.stdout
    assert int(counts["tests/test_triton_gemm.py"]) >= 1, done.stdout
