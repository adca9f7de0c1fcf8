"""Write a large, realistic trace for measuring `suites.analyze` on big inputs.

    python -m suites.benchmarks.big_trace out.json.gz --mb 200 [--source trace.json.gz]

Repeats the events of a real trace (by default the A100 AlexNet fixture) as consecutive
`ProfilerStep#N` steps, shifting timestamps and making correlation ids unique per copy, until
the uncompressed JSON reaches the requested size. Written as a stream, in bounded memory.
"""
from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from suites.profiling.trace_events import iter_raw_events

DEFAULT_SOURCE = Path(__file__).resolve().parents[2] / "tests/fixtures/gpu_traces/a100_alexnet_fp32.json.gz"


def _shifted(event: dict, dt: float, dcorr: int) -> dict:
    event = dict(event)
    if isinstance(event.get("ts"), (int, float)):
        event["ts"] = event["ts"] + dt
    args = event.get("args")
    if isinstance(args, dict):
        args = dict(args)
        for key in ("correlation", "External id"):
            if isinstance(args.get(key), int):
                args[key] += dcorr
        event["args"] = args
    if event.get("cat") == "ac2g" and isinstance(event.get("id"), int):
        event["id"] += dcorr
    return event


def write_big_trace(out: Path, megabytes: float, source: Path = DEFAULT_SOURCE) -> int:
    meta: dict = {}
    events = [e for e in iter_raw_events(source, meta) if e.get("ph") in ("X", "s", "f")]
    start = min(e["ts"] for e in events if "ts" in e)
    span = max(e["ts"] + e.get("dur", 0) for e in events if "ts" in e) - start
    max_corr = 1 + max(e.get("args", {}).get("correlation", 0) or 0 for e in events)
    limit = int(megabytes * 1e6)
    opener = gzip.open if out.suffix == ".gz" else open
    written, copy = 0, 0
    with opener(out, "wt") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        while written < limit:
            dt, dcorr = copy * span * 1.01, copy * max_corr
            step = {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{copy}",
                    "pid": 1, "tid": 1, "ts": start, "dur": span}  # shifted below, as every event
            chunk = ",\n".join(json.dumps(_shifted(e, dt, dcorr)) for e in [step] + events)
            f.write(("" if copy == 0 else ",\n") + chunk)
            written += len(chunk) + 2
            copy += 1
        f.write("\n]}\n")
    return copy


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=200.0, help="uncompressed size to reach")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    args = parser.parse_args(argv)
    copies = write_big_trace(args.out, args.mb, args.source)
    print(f"{args.out}: {copies} steps, {args.out.stat().st_size / 1e6:.1f} MB on disk")


if __name__ == "__main__":
    main()
