"""Reports: plain-words findings and files (JSON, CSV, HTML) from result records."""

from nepotism.report.first import write_first_report
from nepotism.report.summary import describe, format_estimate

__all__ = ["describe", "format_estimate", "write_first_report"]
