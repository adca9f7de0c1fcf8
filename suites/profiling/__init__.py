"""Profiling: capture traces with torch.profiler, read any Chrome trace back, analyse it."""
