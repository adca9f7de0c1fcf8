"""The findings engine: what a careful reader of the trace would say, as data first (a code,
the evidence numbers, a severity), then one plain sentence."""
from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.findings.detectors import DETECTORS, find_all, run_detectors

__all__ = ["Code", "DETECTORS", "Finding", "FindingContext", "Severity", "find_all",
           "run_detectors"]
