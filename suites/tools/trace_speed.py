"""How fast, and in how much memory, `python -m suites.analyze` reads and analyses a big trace.

    python -m suites.tools.trace_speed --size-mb 1000 [--gzip] [--keep PATH] [--repeat 3]
        [--source TRACE] [--no-steps]
    python -m suites.tools.trace_speed --trace PATH      # measure an existing trace

A user's training trace can be 1 GB of JSON, and the analysis must keep up with the disk: the
targets are under 10 s wall and under 1 GB of memory per GB of trace on a 2-core machine. This builds a trace
of about the requested uncompressed size by repeating the events of a real Kineto trace (by
default the B200 fixture: 62% python_function events, which are decoded but not kept; the
A100 AlexNet fixture, with none, keeps 3x more events per MB), each copy one `ProfilerStep#N`
with its timestamps shifted past the previous copy and its correlation, External and flow ids
offset so copies stay distinct. Events are written one per line without indentation (denser
than Kineto's own layout: more events per MB, so a harder test), as a stream in bounded memory.
Then it runs the analysis in a subprocess and prints its wall time (interpreter start-up
included), the peak RSS of its processes (sampled: a big trace is read by two) and which JSON
decoder read the trace
(events.DECODER: msgspec, or json where msgspec is not installed, which reads ~1.5x slower).
The machine may be shared and noisy: use --repeat.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from suites.traces.events import DECODER, iter_raw_events
from suites.traces.split_read import text_size

_REPO = Path(__file__).resolve().parents[2]
# The repo's copy where it has one (a user's clone has no /work/shared).
DEFAULT_SOURCE = next((p for p in (_REPO / "tests/fixtures/real_traces/b200_eager.json.gz",
                                   Path("/work/shared/fixtures/real_traces/b200_eager.json.gz"))
                       if p.is_file()), _REPO / "tests/fixtures/real_traces/b200_eager.json.gz")
# Issue 24's targets for 1 GB of trace (under 10 s, under 1 GB of memory), scaled to the size.
TARGET_S_PER_GB, TARGET_MB_PER_GB = 10.0, 1000.0
_ID_KEYS = ("correlation", "External id")


def _max_id(events: list[dict]) -> int:
    ids = [e.get("id") for e in events] + [
        e["args"].get(k) for e in events if isinstance(e.get("args"), dict) for k in _ID_KEYS]
    return max((i for i in ids if isinstance(i, int) and not isinstance(i, bool)), default=0)


def _shifted(event: dict, dt: float, did: int) -> dict:
    event = dict(event)
    if isinstance(event.get("ts"), (int, float)):
        event["ts"] += dt
    if isinstance(event.get("id"), int):  # ac2g flow arrows link a launch to its kernel
        event["id"] += did
    if isinstance(event.get("args"), dict):
        event["args"] = args = dict(event["args"])
        for key in _ID_KEYS:
            if isinstance(args.get(key), int):
                args[key] += did
    return event


def write_trace(out: Path, megabytes: float, source: Path, compress: bool,
                steps: bool = True) -> int:
    """Write the trace; returns how many copies of the source it holds."""
    meta: dict = {}
    events = [e for e in iter_raw_events(source, meta) if isinstance(e, dict)]
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    start = min(e["ts"] for e in timed)
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - start
    id_step = _max_id(events) + 1
    limit, written, copy = int(megabytes * 1e6), 0, 0
    # Level 1: gzip's speed, not its ratio, matters here.
    opened = gzip.open(out, "wt", compresslevel=1) if compress else open(out, "w")
    with opened as f:
        head = json.dumps(meta)[:-1]
        f.write(head + (", " if meta else "") + '"traceEvents": [\n')
        while written < limit:
            dt = copy * span * 1.01
            step = {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{copy}",
                    "pid": timed[0].get("pid"), "tid": timed[0].get("tid"), "ts": start + dt,
                    "dur": span}
            text = ",\n".join([json.dumps(step)] * steps +
                              [json.dumps(_shifted(e, dt, copy * id_step)) for e in events])
            f.write(("" if copy == 0 else ",\n") + text)
            written += len(text) + 2
            copy += 1
        f.write("\n]}\n")
    return copy


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:  # gone, or not Linux
        pass
    return 0.0


def _tree(pid: int) -> list[int]:
    """The process and its children (the analysis reads a big trace with a second process)."""
    found = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(child) for child in f.read().split()]
    except OSError:
        pass
    return found


def measure(trace: Path) -> tuple[float, float, str]:
    """(wall s, peak RSS MB, output) of one `python -m suites.analyze trace`: the peak of the
    whole process tree's RSS, sampled every 20 ms (the reading's second process included), or
    the analysis process's own peak (wait4) where that is higher."""
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "suites.analyze", str(trace)],
                                stdout=out, stderr=subprocess.STDOUT, cwd=_REPO)
        tree_peak = 0.0
        while True:
            done, status, usage = os.wait4(proc.pid, os.WNOHANG)  # this child's own rusage
            if done:
                break
            tree_peak = max(tree_peak, sum(_rss_mb(pid) for pid in _tree(proc.pid)))
            time.sleep(0.02)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if proc.returncode != 0:
        sys.exit(f"trace_speed: analyze failed (exit {proc.returncode}):\n{text[-2000:]}")
    # The child's own peak (KiB on Linux), where the sampling missed a short one.
    return wall, max(tree_peak, usage.ru_maxrss / 1024), text


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=1000.0, help="uncompressed size")
    parser.add_argument("--gzip", action="store_true", help="write .json.gz, not .json")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="trace to repeat")
    parser.add_argument("--no-steps", action="store_true",
                        help="no ProfilerStep#N per copy: the whole trace is one step")
    parser.add_argument("--keep", type=Path, help="write the trace here and keep it")
    parser.add_argument("--trace", type=Path, help="measure this trace; build none")
    parser.add_argument("--repeat", type=int, default=1, help="analysis runs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path, built = args.trace, ""
        if path is None:
            if not args.source.is_file():
                sys.exit(f"trace_speed: no source trace at {args.source}; pass --source PATH")
            path = args.keep or Path(tmp) / ("big.json.gz" if args.gzip else "big.json")
            started = time.perf_counter()
            copies = write_trace(path, args.size_mb, args.source, args.gzip,
                                         not args.no_steps)
            built = f" (built in {time.perf_counter() - started:.0f} s: {copies} copies)"
        elif not path.is_file():
            sys.exit(f"trace_speed: no trace at {path}")
        if built:
            print(f"{path}: {path.stat().st_size / 1e6:.0f} MB on disk{built}", flush=True)
        for _ in range(args.repeat):
            wall, rss, text = measure(path)
            found = re.search(r"\((\d+) events", text)  # analyze's first line says how many
            # The targets are per GB of trace text: a gzip file's is its uncompressed size.
            text_bytes = text_size(path)
            gb = text_bytes / 1e9
            target_s, target_mb = TARGET_S_PER_GB * gb, TARGET_MB_PER_GB * gb
            ok = "ok" if wall < target_s and rss < target_mb else "OVER TARGET"
            packed = (f", {path.stat().st_size / 1e6:.0f} MB gzipped"
                      if text_bytes != path.stat().st_size else "")
            print(f"analyze {path.name} ({text_bytes / 1e6:.0f} MB{packed}, "
                  f"{found.group(1) if found else '?'} events, read with {DECODER}): "
                  f"{wall:.1f} s wall, {rss:.0f} MB peak RSS of its processes (targets "
                  f"{target_s:.3g} s, {target_mb:.0f} MB: {ok})", flush=True)


if __name__ == "__main__":
    main()
