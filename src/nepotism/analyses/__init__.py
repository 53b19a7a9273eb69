"""Analyses: turn recorded or stored judgments into the arrays metrics take, and run audits.

`run_audit` is the one call from a recorded pairwise file to result records.
"""

from nepotism.analyses.audit import AuditOptions, audit_pairwise
from nepotism.analyses.comparisons import Comparisons, build_comparisons
from nepotism.analyses.run_audit import AuditResult, run_audit

__all__ = ["AuditOptions", "AuditResult", "Comparisons", "audit_pairwise", "build_comparisons", "run_audit"]
