"""Analyses: turn recorded or stored judgments into the arrays metrics take, and run audits.

The one call from recorded judgments to result records is `nepotism.audit` (`nepotism.api`).
"""

from nepotism.analyses.audit import AuditOptions, audit_pairwise
from nepotism.analyses.comparisons import Comparisons, build_comparisons

__all__ = ["AuditOptions", "Comparisons", "audit_pairwise", "build_comparisons"]
