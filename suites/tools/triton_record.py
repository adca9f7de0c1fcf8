"""The ahead-of-time compile's record: what `python -m suites.tools.triton_targets --kept-only
--record` found (every kept compile's shared memory, registers and spills, and its verdict),
stored with a key of everything it depends on, so that a test on an unchanged tree need not
compile 560 kernels again (minutes on CI's two cores).

The key hashes the kernels (kernels/*.py, kernels/triton/*.py: the kernels, their configs and
pruning, and the variants whose launches are captured), the plan and the compile
(suites/tools/triton_{capture,launches,suite_launches,specialisation,targets}.py), the
suites' grids (conf/suite/*.yaml), and the versions of triton
and torch. Any change to one of them makes the record stale: tests/test_triton_targets.py then
compiles everything again and says to refresh the record. While it is current, the test
checks the record's verdict and compiles a sample (one kept config of each kernel on each
target), which must come out as recorded: the record is the compiler's, not a copy that drifted.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "tests" / "fixtures" / "triton_targets.json"
INPUTS = ("kernels/*.py", "kernels/triton/*.py", "conf/suite/*.yaml",
          *(f"suites/tools/triton_{part}.py"
            for part in ("capture", "launches", "suite_launches", "specialisation", "targets")))
REFRESH = "python -m suites.tools.triton_targets --kept-only --record"


def inputs_key() -> str:
    import torch
    import triton
    digest = hashlib.sha256(f"triton {triton.__version__} torch {torch.__version__}".encode())
    for pattern in INPUTS:
        for path in sorted(ROOT.glob(pattern)):
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def write(results: list[dict], verdict: str, path: Path = RECORD) -> None:
    """The record, without each compile's seconds (which differ each time: a refresh that
    changed nothing then changes no line)."""
    kept = [{k: v for k, v in r.items() if k != "seconds"} for r in results]
    path.write_text(json.dumps({"key": inputs_key(), "verdict": verdict, "results": kept},
                               indent=0) + "\n")


def read(path: Path = RECORD) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def sample(results: list[dict]) -> set[tuple]:
    """One compile of each kernel on each target (the first recorded): the identities to compile
    again and compare."""
    seen, out = set(), set()
    for r in results:
        if (r["kernel"], r["arch"]) not in seen:
            seen.add((r["kernel"], r["arch"]))
            out.add(identity(r))
    return out


def identity(r: dict) -> tuple:
    return (r["kernel"], r["dtype"], r["arch"], r["config"], r["variant"], r["launch"])
