"""The findings engine: what a careful reader of the trace would say, as data first (a code,
the evidence numbers, a severity), then one plain sentence."""
from suites.findings.core import Finding, FindingContext, find_all

__all__ = ["Finding", "FindingContext", "find_all"]
