"""Reports: the judge verdicts first, then files (JSON, CSV, Markdown, HTML) and judge cards from result records."""

from nepotism.report.card import judge_cards, load_thresholds, parse_thresholds
from nepotism.report.first import write_first_report
from nepotism.report.full import write_report

__all__ = ["judge_cards", "load_thresholds", "parse_thresholds", "write_first_report", "write_report"]
