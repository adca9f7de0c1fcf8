"""Any JSON value in any field of any event: the analysis reads the trace or says in one line
why it cannot, never a traceback (a list for a name once crashed interning it, a list for a pid
grouping threads). Each field of each kind of event of a small GPU trace is given each odd
value in turn."""
import copy

import pytest

from suites.traces.command import main
from trace_builders import event, write

ODD = [None, True, -1, 1e308, "", [1, 2], {"a": 1}]
FIELDS = ("ph", "name", "cat", "ts", "dur", "pid", "tid", "args")
ARG_FIELDS = ("correlation", "External id", "bytes", "grid", "block", "registers per thread",
              "shared memory", "blocks per SM", "warps per SM", "est. achieved occupancy %",
              "device", "Input Dims", "stream")


def _trace():
    """Two steps of an op that launches a GEMM kernel and a copy, and a sync."""
    events = []
    for step in range(2):
        t0 = step * 200.0
        corr = 10 * step
        events += [
            event(f"ProfilerStep#{step}", "user_annotation", t0, 190),
            event("aten::mm", "cpu_op", t0 + 5, 50, **{"Input Dims": [[64, 64], [64, 64]],
                                                      "External id": corr}),
            event("cudaLaunchKernel", "cuda_runtime", t0 + 10, 5, correlation=corr + 1),
            event("ampere_sgemm_64x64_tn", "kernel", t0 + 20, 40, tid=7,
                  correlation=corr + 1, stream=7, device=0, grid=[4, 1, 1], block=[128, 1, 1],
                  **{"registers per thread": 64, "shared memory": 8192, "blocks per SM": 1,
                     "warps per SM": 4, "est. achieved occupancy %": 6}),
            event("cudaMemcpyAsync", "cuda_runtime", t0 + 60, 5, correlation=corr + 2),
            event("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", t0 + 70, 10, tid=7,
                  correlation=corr + 2, stream=7, bytes=4096),
            event("cudaStreamSynchronize", "cuda_runtime", t0 + 80, 20)]
    return events


KINDS = {"step": 0, "op": 1, "launch": 2, "kernel": 3, "copy": 5, "sync": 6}


@pytest.mark.parametrize("kind, decoder", [*((k, "msgspec") for k in KINDS),
                                           ("op", "json"), ("kernel", "json")])
def test_any_value_in_any_field_is_read_or_refused_in_one_line(kind, decoder, tmp_path, capsys):
    """decoder json: a NaN in the text sends its events through json's decoder (msgspec
    rejects NaN), whose dicts are read by the same rules."""
    base = _trace() + ([{"ph": "C", "name": "nan", "ts": float("nan")}] if decoder == "json"
                       else [])
    at = KINDS[kind]
    cases = [(f, v) for f in FIELDS for v in ODD]
    cases += [(f"args.{k}", v) for k in ARG_FIELDS for v in ODD[1:]]
    for i, (field, value) in enumerate(cases):
        events = copy.deepcopy(base)
        target = events[at]
        if field.startswith("args."):
            target.setdefault("args", {})[field[5:]] = value
        else:
            target[field] = value
        path = write({"traceEvents": events}, tmp_path / f"{i}.json")
        code = main([str(path), "--csv", str(tmp_path / f"csv{i}")])  # the page and the tables
        _, err = capsys.readouterr()
        assert code in (0, 2), (kind, field, value, err[-2000:])
        if code == 2:
            assert len(err.strip().splitlines()) == 1, (kind, field, value, err)
